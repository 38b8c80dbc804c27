import Assembly
import Audio
import AudioCore
import Foundation
@testable import HotPhrase
import Testing

/// The personal head as enrollment trains it (Assembly's HeadTraining): espeak-ng's babble, and the session's
/// takes (the parity fixture's, Tests/HotPhraseTests/Fixtures/household).
@Suite struct HeadTrainingTests {
    /// Every voice says every sentence: 100 utterances of speech at 16 kHz, each with its own sound.
    @Test func theBabbleIsEveryVoiceSayingEverySentence() async throws {
        let babble = try await HeadTraining.babble()
        #expect(babble.count == HeadTraining.babbleCount && babble.count == 100)
        for (k, u) in babble.enumerated() {
            let seconds = Double(u.count) / 16_000
            #expect(seconds > 1 && seconds < 8, "utterance \(k): \(seconds) s")
            let rms = (u.reduce(0) { $0 + Double($1) * Double($1) } / Double(u.count)).squareRoot()
            #expect(rms > 0.01 && u.allSatisfy { abs($0) <= 1 }, "utterance \(k): rms \(rms)")
        }
        // another voice saying the same sentence is other audio
        #expect(babble[0] != babble[HeadTraining.sentences.count])
    }

    @Test func aSessionOfTwoTakesTrainsNoHeadAndThreeDo() async throws {
        let dir = "Tests/HotPhraseTests/Fixtures/household"
        let model = try HotPhraseModel.load(path: "Tests/HotPhraseTests/Fixtures/embedding/test.hpm")
        let bank = try NegativeBank.load(path: "\(dir)/bank.hpm")
        let takes = try (1...3).map { k in
            let s = try AudioFile.readMono(path: "\(dir)/take-\(k).wav").samples
            return (samples: s, take: try Enrollment.take(s, model: model))
        }
        await #expect { try await HeadTraining.train(takes: Array(takes.prefix(2)), model: model, bank: bank) } throws: {
            "\($0)" == "no personal head: 2 takes in this session; a head needs 3"
        }
        let head = try await HeadTraining.train(takes: takes, model: model, bank: bank)
        #expect(head.weights.count == PersonalHead.window * bank.dim)
        // It hears the phrase in the fixture's stream ("Put it away. OK Hound.") where the reference's head of the
        // clean takes peaks (Fixtures/household/expected.json, step 20), far above the speech before it. (Not the
        // same head twice: espeak-ng's voices draw on the C library's rand(), so its babble varies a little.)
        let detector = HotPhraseDetector(model: model)
        var frames: [[Float]] = []
        try AudioFile.readMono(path: "\(dir)/stream.wav").samples.withUnsafeBufferPointer {
            detector.process($0, onFrame: { e, _ in frames.append(Array(e)) }, onDetection: { _ in })
        }
        let normalised = bank.normalised(frames)
        let z: [Double] = normalised.withUnsafeBufferPointer { f in
            (PersonalHead.window - 1..<frames.count).map { (step: Int) -> Double in
                head.z(f.baseAddress! + (step - PersonalHead.window + 1) * bank.dim)
            }
        }
        let peak = z.indices.max { z[$0] < z[$1] }! + PersonalHead.window - 1
        #expect(abs(peak - 20) <= 1, "peak at step \(peak)")
        #expect(z.max()! > z.prefix(6).max()! + 3 && z.max()! > bank.zThreshold + PersonalHead.offset, "\(z)")
    }
}
