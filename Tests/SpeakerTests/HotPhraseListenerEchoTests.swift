import TestSupport
import AudioCore
import Testing
import Audio
import HotPhrase
import Assembly
import SpeakerCore

/// What the detector hears over the speaker's own sound: the echo canceller's adaptive filter output, not the
/// suppressed frames that are uploaded (BENCHMARKS.md, "Echo cancellation", "What the hot phrase hears").
@Suite(.ownThread) struct HotPhraseListenerEchoTests {
    @Test func overTheSpeakerTheDetectorHearsTheFiltersOutputNotTheUploadedFrames() throws {
        let model = try HotPhraseModel.load(path: repositoryRoot + "/share/hotphrase/ok-hound.hpm")
        let person = try AudioFile.readMono(path: repositoryRoot + "/share/demo/ok-hound-what-time-is-it.wav", targetRate: 16_000).samples
        let played = try AudioFile.readMono(path: repositoryRoot + "/share/demo/what-time-is-it.wav", targetRate: 16_000).samples
        // The speaker says its answer over and over; its echo (10 ms late, half as loud) and the person meet at the
        // microphone.
        let far = (0..<person.count).map { played[$0 % played.count] }
        var mic = person
        for t in 160..<mic.count { mic[t] = mic[t] &+ far[t - 160] / 2 }

        let echo = EchoCanceller(settings: EchoCancelSettings(enabled: true, delayMS: 10))
        // Sensitive enough that the score is reported at many steps, so the two inputs are told apart by their scores.
        let settings = HotPhraseSettings(sensitivity: 1, refractoryMS: 100)
        var ours = settings
        ours.bargeInSensitivity = 1
        let listener = HotPhraseListener(model: model, settings: ours, echo: echo)
        let threshold = listener.bargeInThreshold
        let onFiltered = HotPhraseDetector(model: model, threshold: threshold, refractorySeconds: 0.1)
        let onUploaded = HotPhraseDetector(model: model, threshold: threshold, refractorySeconds: 0.1)
        var heard: [Double] = [], filteredScores: [Double] = [], uploadedScores: [Double] = []
        var filtered = [Int16](repeating: 0, count: 320)
        let lead = 4
        for i in 0..<(mic.count / 320 + lead) {
            let p = i * 320
            if p + 320 <= far.count {
                far[p..<p + 320].withUnsafeBufferPointer { echo.played($0, rate: 16_000, heard: 1_000_000 + TimelinePosition(p)) }
            }
            let m = (i - lead) * 320
            guard m >= 0, m + 320 <= mic.count else { continue }
            var frame = Array(mic[m..<m + 320])
            frame.withUnsafeMutableBufferPointer { echo.process($0, heard: 1_000_000 + TimelinePosition(m)) }
            frame.withUnsafeBufferPointer { f in
                if listener.process(f, over: .answer) == .wake { heard.append(listener.lastDetectionScore) }
                #expect(filtered.withUnsafeMutableBufferPointer { echo.hotPhraseFrame(for: f, into: $0) })
                filtered.withUnsafeBufferPointer { onFiltered.process($0) { filteredScores.append($0.score) } }
                onUploaded.process(f) { uploadedScores.append($0.score) }
            }
        }
        #expect(!heard.isEmpty)
        #expect(heard == filteredScores)
        #expect(heard != uploadedScores, "the detector heard the uploaded frames")
    }
}
