import Foundation
import AudioCore
import Testing
@testable import Audio
@testable import Speech
import TestSupport

func rms(_ samples: ArraySlice<Int16>) -> Double {
    guard !samples.isEmpty else { return 0 }
    return (samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count)).squareRoot()
}

let sentence = "The weather today is sunny with a high of twenty four degrees, and a light breeze from the west in the afternoon."

@Suite(.serialized, .ownThread) struct SpeechTests {
    @Test func speaksRealSpeechWithALeadIn() async throws {
        var settings = VoiceSettings()
        settings.leadInMS = 150
        let engine = try SpeechEngine(settings: settings)
        let result = try await engine.speak("what time is it", to: .memory).result().get()
        #expect(result.outcome == .finished)
        #expect(result.sampleRate == 22050)
        let seconds = Double(result.samples.count) / 22050
        #expect(seconds > 0.6 && seconds < 3)
        let leadIn = 22050 * 150 / 1000
        #expect(result.samples.prefix(leadIn).allSatisfy { $0 == 0 })
        #expect(rms(result.samples[leadIn...]) > 500)  // speech, not silence
    }

    @Test func sayWritesAWAVOfSpeech() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hs-say-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let engine = try SpeechEngine(settings: VoiceSettings())
        _ = try await engine.speak(sentence, to: .file(path)).result().get()
        let audio = try AudioFile.readMono(path: path, targetRate: 16000)
        #expect(audio.duration > 4 && audio.duration < 12)
        #expect(AudioLevel.dBFS(audio.samples) > -35)
    }

    @Test func stopSpeakingCutsTheSentenceShort() async throws {
        let engine = try SpeechEngine(settings: VoiceSettings())
        let full = try await engine.speak(sentence, to: .memory).result().get()
        // Stopped as the first block of speech goes out.
        let task = engine.speak(sentence, to: .memory, onFirstSample: { engine.stopSpeaking() })
        let cut = try await task.result().get()
        #expect(cut.outcome == .interrupted)
        #expect(cut.sampleCount < full.sampleCount / 2)
    }

    @Test func playsThroughALSAAndStopDropsTheRest() async throws {
        try? FileManager.default.removeItem(atPath: TestALSA.speakerFile)
        let engine = try SpeechEngine(settings: VoiceSettings())
        let result = try await engine.speak("hello from the speaker", to: .device("test_speaker")).result().get()
        #expect(result.outcome == .finished)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: TestALSA.speakerFile))
        let played = bytes.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
        // What reached ALSA is the whole utterance (the file PCM may pad the last period).
        #expect(played.count >= result.sampleCount)
        #expect(rms(played[...]) > 300)

        try? FileManager.default.removeItem(atPath: TestALSA.speakerFile)
        let task = engine.speak(sentence, to: .device("test_speaker"), onFirstSample: { engine.stopSpeaking() })
        #expect(try await task.result().get().outcome == .interrupted)
        let cutBytes = (try? Data(contentsOf: URL(fileURLWithPath: TestALSA.speakerFile)))?.count ?? 0
        #expect(cutBytes / 2 < 22050 * 3)  // far less than the ~7 s sentence
    }

    @Test func playbackPeriodsAreTwentyMillisecondsOrLess() throws {
        _ = TestALSA.directory
        let playback = try ALSAPlayback(device: "test_speaker", sampleRate: 22050)
        defer { playback.close() }
        #expect(playback.periodFrames > 0 && playback.periodFrames <= 441, "period of \(playback.periodFrames) frames")
    }

    @Test func busyDeviceNamesWhoHoldsIt() {
        let error = AudioDeviceError.from(device: "hw:0", operation: "cannot open for playback", code: -EBUSY)
        #expect(error.description.contains("Device or resource busy"))
        #expect(error.description.contains("fuser") || error.description.contains("held by"))
    }

    @Test func unknownDeviceAndVoiceAreNamed() async throws {
        _ = TestALSA.directory
        let engine = try SpeechEngine(settings: VoiceSettings())
        let failure = await engine.speak("hello", to: .device("no_such_pcm")).result()
        guard case .failure(let error) = failure else { Issue.record("expected a failure"); return }
        #expect(error.message.hasPrefix("ALSA device \"no_such_pcm\": cannot open for playback"))
        var bad = VoiceSettings()
        bad.voice = "klingon-xx"
        #expect(throws: SpeechError("espeak-ng has no voice \"klingon-xx\" (`espeak-ng --voices` lists them)", isConfiguration: true)) { try SpeechEngine(settings: bad) }
        // The good engine still works after a bad voice was tried on the shared thread.
        #expect(try await engine.speak("still here", to: .memory).result().get().outcome == .finished)
    }
}
