import Foundation
import AudioCore
import Testing
@testable import Audio
@testable import Speech
import TestSupport


@Suite(.serialized, .ownThread) struct EarconVolumeTests {
    init() { setenv("HOUND_SPEAKER_EARCON_PATH", repositoryRoot + "/share/earcons", 1) }

    @Test func shippedEarconsAreShortAudibleAndDistinct() throws {
        let sounds = try Earcons.load()
        #expect(Set(sounds.keys) == Set(Earcon.allCases))
        for (earcon, audio) in sounds {
            // The timer's ring is played round and round until stopped: a short burst, then a pause before the next.
            let longest = earcon == .timer ? 2.0 : 0.5
            #expect(audio.duration > 0.05 && audio.duration < longest, "\(earcon) lasts \(audio.duration) s")
            #expect(AudioLevel.dBFS(audio.samples) > -30, "\(earcon) is too quiet")
        }
        #expect(sounds[.startListening]?.samples != sounds[.stopListening]?.samples)
    }

    @Test func configCanReplaceAnEarconAndAMissingOneIsNamed() throws {
        let custom = FileManager.default.temporaryDirectory.appendingPathComponent("hs-ding-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: custom) }
        try runSox(["-n", "-r", "16000", "-c", "1", "-b", "16", custom, "synth", "0.2", "sine", "2000"])
        let sounds = try Earcons.load(overrides: [.error: custom])
        #expect(abs((sounds[.error]?.duration ?? 0) - 0.2) < 0.01)
        #expect(throws: SpeechError.self) { try Earcons.load(overrides: [.cancel: "/nonexistent/cancel.wav"]) }
        do { _ = try Earcons.load(overrides: [.cancel: "/nonexistent/cancel.wav"]) } catch {
            #expect(error.message.hasPrefix("earcon cancel: /nonexistent/cancel.wav: cannot read audio"))
        }
    }

    @Test func earconPlaysThroughTheSpeechOutputAtTheSetVolume() async throws {
        let sound = try #require(try Earcons.load()[.startListening])
        func played(volume: Int) async throws -> [Int16] {
            // Its own playback device: other suites run at the same time.
            let file = TestALSA.outputFile("test_earcon_speaker")
            try? FileManager.default.removeItem(atPath: file)
            let engine = try SpeechEngine(settings: VoiceSettings(), volume: OutputVolume(percent: volume, device: "test_earcon_speaker", mixerControl: ""))
            let result = try await engine.play(sound, to: .device("test_earcon_speaker")).result().get()
            #expect(result.outcome == .finished)
            return try readRawInt16(file)
        }
        let loud = try await played(volume: 100)
        let soft = try await played(volume: 50)
        #expect(loud.count >= sound.samples.count)
        #expect(Array(loud.prefix(sound.samples.count)) == sound.samples)  // 100 %: unchanged
        let drop = AudioLevel.dBFS(loud) - AudioLevel.dBFS(soft)
        #expect(abs(drop - 25) < 0.5, "volume 50 is \(drop) dB down")
    }

    @Test func volumeStepsAndClamps() throws {
        let volume = try OutputVolume(percent: 95, device: "default", mixerControl: "")
        #expect(try volume.up() == 100)
        #expect(try volume.up() == 100)
        #expect(try volume.down() == 90)
        #expect(try volume.set(-5) == 0)
        #expect(volume.softwareGain == 0)
        #expect(OutputVolume.gain(forPercent: 100) == 1)
        #expect(abs(20 * log10(Double(OutputVolume.gain(forPercent: 80))) - -10) < 0.01)
    }

    @Test func aMissingMixerControlIsNamed() {
        _ = TestALSA.directory
        let error = #expect(throws: AudioDeviceError.self) {
            try OutputVolume(percent: 50, device: "plughw:CARD=nosuchcard,DEV=0", mixerControl: "Speaker")
        }
        #expect(error?.description.hasPrefix("ALSA device \"plughw:CARD=nosuchcard,DEV=0\": cannot open mixer \"hw:CARD=nosuchcard\"") == true)
    }
}
