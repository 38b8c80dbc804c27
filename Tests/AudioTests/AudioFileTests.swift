import Foundation
import AudioCore
import Testing
import TestSupport
@testable import Audio

/// Runs sox to make fixtures (sox is installed with the project's test dependencies).
func sox(_ arguments: [String]) throws {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/sox")
    process.arguments = arguments
    try process.run()
    process.waitUntilExit()
    #expect(process.terminationStatus == 0, "sox \(arguments.joined(separator: " "))")
}

func temporaryPath(_ name: String) -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("hs-audio-\(UUID().uuidString)-\(name)").path
}

@Suite(.ownThread) struct AudioFileTests {
    @Test(arguments: [(44100, 2), (48000, 1), (8000, 1), (16000, 1)])
    func anyRateAndChannelCountBecomes16kMono(rate: Int, channels: Int) throws {
        let path = temporaryPath("tone.wav")
        defer { try? FileManager.default.removeItem(atPath: path) }
        // One second of a 440 Hz tone at half scale.
        try sox(["-n", "-r", String(rate), "-c", String(channels), "-b", "16", path, "synth", "1.0", "sine", "440", "vol", "0.5"])
        let audio = try AudioFile.readMono(path: path)
        #expect(audio.sampleRate == 16000)
        #expect(abs(audio.samples.count - 16000) <= 16)
        // A sine of amplitude 0.5 has an RMS of 0.354, -9 dBFS; the resampler must keep it.
        let level = AudioLevel.dBFS(audio.samples[2000..<14000])
        #expect(abs(level - -9.03) < 0.3)
    }

    @Test func compressedWAVIsRefusedByName() throws {
        let path = temporaryPath("ulaw.wav")
        defer { try? FileManager.default.removeItem(atPath: path) }
        try sox(["-n", "-r", "8000", "-e", "u-law", path, "synth", "0.2", "sine", "440"])
        #expect(throws: AudioFileError.notPCM(path: path, format: "u-law")) { try AudioFile.readMono(path: path) }
    }

    @Test func aMissingLibsndfileIsNamed() throws {
        let path = temporaryPath("tone.wav")
        defer { try? FileManager.default.removeItem(atPath: path) }
        try sox(["-n", "-r", "16000", "-c", "1", "-b", "16", path, "synth", "0.2", "sine", "440"])
        // Not installed: the error names the library and the Debian package, and carries the loader's reason.
        do {
            _ = try AudioFile.readMono(path: path, targetRate: 16_000, library: "libsndfile-absent.so.1")
            Issue.record("read without libsndfile")
        } catch {
            guard case .library(let name, let reason) = error else { Issue.record("\(error)"); return }
            #expect(name == "libsndfile-absent.so.1")
            #expect(reason.contains("libsndfile-absent.so.1"))
            #expect(error.description.contains("libsndfile1"))
        }
        // A library that is there but is not libsndfile: the missing function is named.
        do {
            _ = try AudioFile.readMono(path: path, targetRate: 16_000, library: "libm.so.6")
            Issue.record("read with libm as libsndfile")
        } catch {
            guard case .library(_, let reason) = error else { Issue.record("\(error)"); return }
            #expect(reason.contains("sf_open"))
        }
        // And the real one, loaded the same way, reads the file.
        #expect(try AudioFile.readMono(path: path, targetRate: 16_000, library: Sndfile.soname).samples.count == 3200)
    }

    @Test func unreadableFilesAreNamed() throws {
        #expect(throws: AudioFileError.self) { try AudioFile.readMono(path: "/nonexistent.wav") }
        do { _ = try AudioFile.readMono(path: "/nonexistent.wav") } catch {
            #expect(error.description.hasPrefix("/nonexistent.wav: cannot read audio"))
        }
        let text = temporaryPath("notaudio.wav")
        defer { try? FileManager.default.removeItem(atPath: text) }
        try Data("this is not a WAV file".utf8).write(to: URL(fileURLWithPath: text))
        #expect(throws: AudioFileError.self) { try AudioFile.readMono(path: text) }
    }

    /// A file held in memory (Houndify's spoken answer) reads as the same file on disk does: every rate and
    /// channel count, u-law refused, garbage and nothing named by the name given.
    @Test(arguments: [(44100, 2), (22050, 1), (8000, 1)])
    func aFileInMemoryReadsAsOnDisk(rate: Int, channels: Int) throws {
        let path = temporaryPath("voice.wav")
        defer { try? FileManager.default.removeItem(atPath: path) }
        try sox(["-n", "-r", String(rate), "-c", String(channels), "-b", "16", path, "synth", "0.7", "sine", "300", "vol", "0.4"])
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let fromMemory = try AudioFile.readMono(bytes: bytes, name: "the answer", targetRate: 22_050)
        let fromDisk = try AudioFile.readMono(path: path, targetRate: 22_050)
        #expect(fromMemory.sampleRate == 22_050)
        #expect(fromMemory.samples.count > 15_000)
        #expect(fromMemory.samples == fromDisk.samples)
    }

    @Test func badBytesInMemoryAreNamed() throws {
        #expect(throws: AudioFileError.empty(path: "the answer")) { try AudioFile.readMono(bytes: [], name: "the answer") }
        do {
            _ = try AudioFile.readMono(bytes: Array("RIFF but not really a WAV".utf8), name: "the answer")
            Issue.record("garbage read as audio")
        } catch {
            guard case .cannotOpen(let name, _) = error else { Issue.record("\(error)"); return }
            #expect(name == "the answer")
        }
        let path = temporaryPath("ulaw.wav")
        defer { try? FileManager.default.removeItem(atPath: path) }
        try sox(["-n", "-r", "8000", "-e", "u-law", path, "synth", "0.2", "sine", "440"])
        let ulaw = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(throws: AudioFileError.notPCM(path: "the answer", format: "u-law")) {
            try AudioFile.readMono(bytes: ulaw, name: "the answer")
        }
        // Cut short in its samples: the header's length says more than there is; what is there is read, no more.
        let whole = try { () throws -> [UInt8] in
            let tone = temporaryPath("tone.wav")
            defer { try? FileManager.default.removeItem(atPath: tone) }
            try sox(["-n", "-r", "16000", "-c", "1", "-b", "16", tone, "synth", "0.5", "sine", "440"])
            return try [UInt8](Data(contentsOf: URL(fileURLWithPath: tone)))
        }()
        let cut = try AudioFile.readMono(bytes: Array(whole.prefix(44 + 2 * 3000)), name: "the answer")
        #expect(cut.samples.count == 3000)
    }

    @Test func writeThenReadRoundTrips() throws {
        let path = temporaryPath("out.wav")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let samples = (0..<1600).map { Int16(truncatingIfNeeded: $0 * 37) }
        try AudioFile.writeWAV(MonoAudio(samples: samples, sampleRate: 16000), to: path)
        #expect(try AudioFile.readMono(path: path).samples == samples)
    }

    @Test func levels() {
        #expect(AudioLevel.dBFS([Int16](repeating: 0, count: 160)) == -90)
        #expect(AudioLevel.dBFS([Int16](repeating: -32768, count: 160)) == 0)
        #expect(abs(AudioLevel.dBFS([Int16](repeating: 3277, count: 160)) - -20) < 0.01)
    }
}
