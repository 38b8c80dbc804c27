import Foundation
import AudioCore
import Testing
@testable import Audio
import TestSupport

/// Speech made by espeak-ng (a real voice, with the pauses a comma makes), at 16 kHz.
func spoken(_ text: String) throws -> [Int16] {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("hs-eos-\(UUID().uuidString).wav").path
    defer { try? FileManager.default.removeItem(atPath: path) }
    try espeakWAV(text, to: path)
    return try AudioFile.readMono(path: path).samples
}

/// Where speech really ends: the end of the last 10 ms window above -40 dBFS.
func trueEndMS(_ samples: [Int16]) -> Int {
    var last = 0
    for start in stride(from: 0, to: samples.count - 160, by: 160) where AudioLevel.dBFS(samples[start..<start + 160]) > -40 {
        last = start + 160
    }
    return last * 1000 / 16000
}

/// Runs the endpointer over `samples` in 20 ms frames; returns the decisions with their times.
func endpoint(_ samples: [Int16], settings: Endpointer.Settings = .init()) -> [(Endpointer.Decision, Int)] {
    var e = Endpointer(settings: settings, frameMS: 20)
    var out: [(Endpointer.Decision, Int)] = []
    MonoAudio(samples: samples, sampleRate: 16_000).forEachFrame(wholeOnly: true) { frame in
        if let d = e.process(frame) { out.append((d, e.elapsedMS)) }
        return true
    }
    return out
}

func silence(_ ms: Int) -> [Int16] { [Int16](repeating: 0, count: ms * 16) }

/// Deterministic noise at a level (dBFS RMS), white.
func noise(ms: Int, dBFS: Double, seed: UInt64 = 1) -> [Int16] {
    var state = seed
    let amplitude = pow(10, dBFS / 20) * 32768 * 3.0.squareRoot()
    return (0..<(ms * 16)).map { _ in
        state = state &* 6364136223846793005 &+ 1442695040888963407
        let u = Double(state >> 11) / Double(1 << 53) * 2 - 1
        return Int16(clamping: Int(u * amplitude))
    }
}

@Suite struct EndOfSpeechTests {
    @Test func shortModeEndsHalfASecondAfterSpeechDespitePausesBetweenWords() throws {
        let speech = try spoken("turn on the kitchen lights, and then, set a timer for ten minutes")
        let audio = silence(500) + speech + silence(3000)
        let end = 500 + trueEndMS(speech)
        let decisions = endpoint(audio)
        #expect(decisions.first?.0 == .speechStarted)
        #expect(decisions.count == 2)
        guard let (decision, at) = decisions.last else { return }
        #expect(decision == .endOfSpeech)
        // Not before the speech has ended (the pauses at the commas did not end it), and within the bound.
        #expect(at > end, "ended at \(at) ms, speech ends at \(end) ms")
        #expect(at - end <= 800, "ended \(at - end) ms after speech")
    }

    @Test func longModeWaitsLonger() throws {
        let speech = try spoken("what is the weather tomorrow")
        var settings = Endpointer.Settings()
        settings.mode = .long
        let decisions = endpoint(silence(300) + speech + silence(3000), settings: settings)
        let end = 300 + trueEndMS(speech)
        guard let (decision, at) = decisions.last else { Issue.record("no decision"); return }
        #expect(decision == .endOfSpeech)
        #expect(at - end >= 1100 && at - end <= 1600, "ended \(at - end) ms after speech")
    }

    @Test func speechInSteadyNoiseIsFound() throws {
        let speech = try spoken("play some relaxing music")
        let level = AudioLevel.dBFS(speech)
        // Noise 10 dB under the speech, throughout.
        let pad = 600, tail = 3000
        var audio = silence(pad) + speech + silence(tail)
        let n = noise(ms: audio.count / 16 + 1, dBFS: level - 10)
        for i in audio.indices { audio[i] = Int16(clamping: Int(audio[i]) + Int(n[i])) }
        let decisions = endpoint(audio)
        let end = pad + trueEndMS(speech)
        #expect(decisions.first?.0 == .speechStarted)
        guard let (decision, at) = decisions.last else { return }
        #expect(decision == .endOfSpeech)
        #expect(at > end - 300 && at - end <= 800, "ended \(at - end) ms after speech")
    }

    @Test func noiseAloneIsNoSpeech() {
        let decisions = endpoint(noise(ms: 6000, dBFS: -30))
        #expect(decisions.map(\.0) == [.noSpeech])
        #expect(decisions.first?.1 == 5000)
    }

    @Test func noneModeEndsOnlyAtTheMaximumLength() throws {
        var settings = Endpointer.Settings()
        settings.mode = .none
        let speech = try spoken("hello there")
        let decisions = endpoint(silence(300) + speech + silence(13_000), settings: settings)
        #expect(decisions.map(\.0) == [.speechStarted, .maxLength])
        #expect(decisions.last?.1 == 12_000)
    }

    @Test func aClickIsNotSpeech() {
        var audio = silence(1000)
        for i in 8000..<8000 + 80 { audio[i] = 20000 }  // 5 ms click
        #expect(endpoint(audio + silence(5000)).map(\.0) == [.noSpeech])
    }
}
