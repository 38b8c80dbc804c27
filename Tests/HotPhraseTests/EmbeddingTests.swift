import Audio
import AudioCore
import Foundation
@testable import HotPhrase
import Testing
import TestSupport

/// The speech-embedding model (format 2) and the fixtures tools/hotphrase/hotphrase/make_embedding_fixtures.py made: the
/// exported backbone with a random head, espeak-ng clips, and the TFLite graphs' and the numpy reference's numbers.
enum EmbeddingFixtures {
    static let dir = Fixtures.dir.appendingPathComponent("embedding")
    static let modelPath = dir.appendingPathComponent("test.hpm").path

    struct Reference: Decodable {
        struct Clip: Decodable {
            let file: String
            /// TFLite's mel frames (already `mel / 10 + 2`) and embeddings, float32 weights.
            let mel: [[Float]]
            let embeddings: [[Float]]
            /// The numpy reference's embeddings with the file's float16 weights, and the head's scores on them.
            let embeddings_exported: [[Float]]
            let scores: [Float]
        }
        let clips: [Clip]
    }

    static func reference() throws -> Reference {
        try JSONDecoder().decode(Reference.self, from: Data(contentsOf: dir.appendingPathComponent("reference.json")))
    }

    static func samples(_ file: String) throws -> [Int16] {
        try AudioFile.readMono(path: dir.appendingPathComponent(file).path).samples
    }

    static func model() throws -> HotPhraseModel { try HotPhraseModel.load(path: modelPath) }

    static func embeddingModel() throws -> EmbeddingModel {
        guard case .embedding(let m) = try model().network else { throw HotPhraseModelError(path: modelPath, problem: "not format 2") }
        return m
    }
}

/// Everything one scorer produces over a clip fed in `chunk`-sized pieces.
func scoreAll(_ scorer: EmbeddingScorer, _ samples: [Int16], chunk: Int = 320) -> (mel: [[Float]], embeddings: [[Float]], scores: [Float]) {
    var mel: [[Float]] = [], embeddings: [[Float]] = [], scores: [Float] = []
    let mels = 32
    scorer.melObserver = { group in
        for f in 0..<(group.count / mels) { mel.append(Array(group[(f * mels)..<((f + 1) * mels)])) }
    }
    scorer.embeddingObserver = { embeddings.append(Array($0)) }
    samples.withUnsafeBufferPointer { all in
        var i = 0
        while i < all.count {
            let end = min(i + chunk, all.count)
            scorer.process(UnsafeBufferPointer(rebasing: all[i..<end])) { p, _ in scores.append(p) }
            i = end
        }
    }
    scorer.melObserver = nil
    scorer.embeddingObserver = nil
    return (mel, embeddings, scores)
}

func largestDifference(_ a: [[Float]], _ b: [[Float]]) -> Float {
    zip(a, b).map { zip($0, $1).map { abs($0 - $1) }.max() ?? 0 }.max() ?? 0
}

@Suite(.ownThread) struct EmbeddingReferenceTests {
    @Test func theTestModelLoads() throws {
        let model = try EmbeddingFixtures.model()
        #expect(model.format == 2)
        #expect(model.phrase == "test")
        #expect(abs(model.stepSeconds - 0.08) < 1e-12)
        let m = try EmbeddingFixtures.embeddingModel()
        #expect(m.frames == 76 && m.step == 8 && m.dim == 96 && m.headFrames == 16)
        let convs = m.layers.filter { if case .conv = $0 { true } else { false } }
        #expect(convs.count == 20)
    }

    /// The Swift mel front end against melspectrogram.tflite, frame by frame (every frame the graph made).
    @Test func melMatchesTheTFLiteGraph() throws {
        let model = try EmbeddingFixtures.embeddingModel()
        for clip in try EmbeddingFixtures.reference().clips {
            let ours = scoreAll(EmbeddingScorer(model: model), try EmbeddingFixtures.samples(clip.file)).mel
            #expect(ours.count >= clip.mel.count, "\(clip.file)")
            let worst = largestDifference(ours, clip.mel)
            #expect(worst < 1e-3, "\(clip.file): largest mel difference \(worst)")
        }
    }

    /// Streaming embeddings against the whole-window reference with the same (float16) weights, and against
    /// embedding_model.tflite's float32 weights within what float16 weights move them (under 1 % of the range).
    @Test func embeddingsMatchTheReference() throws {
        let model = try EmbeddingFixtures.embeddingModel()
        for clip in try EmbeddingFixtures.reference().clips {
            let ours = scoreAll(EmbeddingScorer(model: model), try EmbeddingFixtures.samples(clip.file)).embeddings
            #expect(ours.count == clip.embeddings_exported.count, "\(clip.file)")
            #expect(ours.count >= clip.embeddings.count - 1, "\(clip.file)")
            let exported = largestDifference(ours, clip.embeddings_exported)
            #expect(exported < 0.01, "\(clip.file): largest difference to the float16 reference \(exported)")
            let range = clip.embeddings.flatMap { $0 }.map(abs).max() ?? 1
            let tflite = largestDifference(ours, clip.embeddings)
            #expect(tflite < 0.01 * range, "\(clip.file): largest difference to TFLite \(tflite) of \(range)")
        }
    }

    @Test func headScoresMatchTheReference() throws {
        let model = try EmbeddingFixtures.embeddingModel()
        for clip in try EmbeddingFixtures.reference().clips {
            let ours = scoreAll(EmbeddingScorer(model: model), try EmbeddingFixtures.samples(clip.file)).scores
            #expect(ours.count == clip.scores.count, "\(clip.file)")
            let worst = zip(ours, clip.scores).map { abs($0 - $1) }.max() ?? 1
            #expect(worst < 1e-3, "\(clip.file): largest score difference \(worst)")
        }
    }
}

@Suite(.ownThread) struct EmbeddingDetectorTests {
    /// A threshold the random head's smoothed score crosses once in ok-hound-silence.flac: just under its peak.
    static let threshold: Double = {
        let model = try! EmbeddingFixtures.model()
        let scores = run(HotPhraseDetector(model: model, threshold: 1), try! EmbeddingFixtures.samples("ok-hound-silence.flac")).scores
        return scores.max()! - 1e-4
    }()

    @Test(arguments: [1, 160, 333, 1280, 4096]) func chunkSizeDoesNotMatter(chunk: Int) throws {
        let model = try EmbeddingFixtures.model()
        let samples = try EmbeddingFixtures.samples("ok-hound-silence.flac")
        let base = run(HotPhraseDetector(model: model, threshold: Self.threshold), samples)
        let other = run(HotPhraseDetector(model: model, threshold: Self.threshold), samples, chunk: chunk)
        #expect(!base.scores.isEmpty)
        #expect(base.scores == other.scores)
        #expect(base.detections == other.detections)
    }

    /// The detector smooths the head's outputs over the model's `smoothing` steps.
    @Test func scoresAreTheSmoothedHeadOutputs() throws {
        let model = try EmbeddingFixtures.model()
        let clip = try #require(try EmbeddingFixtures.reference().clips.first)
        let scores = run(HotPhraseDetector(model: model), try EmbeddingFixtures.samples(clip.file)).scores
        #expect(scores.count == clip.scores.count)
        for (i, s) in scores.enumerated() {
            let window = clip.scores[max(0, i - model.smoothing + 1)...i]
            let expected = Double(window.reduce(0, +)) / Double(window.count)
            #expect(abs(s - expected) < 1e-3, "step \(i)")
        }
    }

    @Test func resetForgetsAndKeepsTime() throws {
        let model = try EmbeddingFixtures.model()
        let clip = try EmbeddingFixtures.samples("ok-hound-silence.flac")
        let other = try EmbeddingFixtures.samples("hounddog-noise.flac")
        let alone = run(HotPhraseDetector(model: model, threshold: Self.threshold), clip)
        #expect(alone.detections.count == 1)
        let detector = HotPhraseDetector(model: model, threshold: Self.threshold)
        _ = run(detector, other + Array(clip.prefix(5000)))
        detector.reset()
        let after = run(detector, clip)
        #expect(after.scores == alone.scores, "a reset detector behaves as a new one")
        #expect(after.detections.count == 1)
        if let a = after.detections.first, let b = alone.detections.first {
            #expect(abs(a.time - (b.time + Double(other.count + 5000) / 16000)) < 1e-9)
        }
    }

    @Test func refractoryPeriod() throws {
        let model = try EmbeddingFixtures.model()
        let clip = try EmbeddingFixtures.samples("ok-hound-silence.flac")
        let twice = clip + clip
        #expect(run(HotPhraseDetector(model: model, threshold: Self.threshold, refractorySeconds: 1), twice).detections.count == 2)
        let deaf = HotPhraseDetector(model: model, threshold: Self.threshold, refractorySeconds: Double(clip.count) / 16000 + 1)
        #expect(run(deaf, twice).detections.count == 1)
    }

    /// Ten seconds of digital silence: one score per 80 ms once the window and the head are full, none firing
    /// (the random head's silence score is below its peak on speech).
    @Test func silenceGivesOneScorePerStep() throws {
        let model = try EmbeddingFixtures.model()
        let (scores, detections) = run(HotPhraseDetector(model: model, threshold: Self.threshold), [Int16](repeating: 0, count: 16000 * 10))
        #expect(detections.isEmpty)
        #expect(scores.count == ((16000 * 10 - 512) / 160 + 1) / 8 - model.warmUpSteps)
    }

    @Test func sensitivityMapsToTheThreshold() throws {
        let model = try EmbeddingFixtures.model()
        #expect(abs(HotPhraseDetector.threshold(sensitivity: 0.5, model: model) - model.defaultThreshold) < 1e-9)
        #expect(HotPhraseDetector.threshold(sensitivity: 0.7, model: model) < model.defaultThreshold)
    }
}

@Suite struct EmbeddingModelFileTests {
    func bytes() throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: EmbeddingFixtures.modelPath))) }

    @Test func truncatedFilesAreRefused() throws {
        let full = try bytes()
        #expect { try HotPhraseModel(bytes: Array(full.dropLast(1000)), path: "t.hpm") } throws: { "\($0)".contains("outside the file") }
    }

    /// A layer list that does not end in one 96-number vector per window is refused before any audio is heard.
    @Test func inconsistentLayersAreRefused() throws {
        let model = try EmbeddingFixtures.model()
        // the embedding's "frames" (the header's first): a longer window leaves more than one frame at the end
        #expect { try withHeader(model, replacing: "\"frames\": ", upTo: ",", with: "84") } throws: { "\($0)".contains("every 8 frames") }
        #expect { try withHeader(model, replacing: "\"step\": ", upTo: "\n", with: "4") } throws: { "\($0)".contains("out of range") }
    }
}
