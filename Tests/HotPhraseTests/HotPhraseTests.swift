import Audio
import AudioCore
import Foundation
@testable import HotPhrase
import Testing
import TestSupport

/// The format-1 model (v9, shipped until issue #37 shipped a format-2 model) and the fixtures made from it by
/// tools/hotphrase/hotphrase/make_fixtures.py (as ok-hound.hpm, the name it was shipped under).
enum Fixtures {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let modelPath = dir.appendingPathComponent("ok-hound-v9.hpm").path
    static let shippedModelPath = root.appendingPathComponent("share/hotphrase/ok-hound.hpm").path
    static let dir = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    struct Reference: Decodable {
        struct Clip: Decodable {
            struct Detection: Decodable { let time: Double; let score: Double }
            let file: String
            let scores: [Double]
            let detections: [Detection]
        }
        let model: String
        let threshold: Double
        let clips: [Clip]
    }

    static func reference() throws -> Reference {
        try JSONDecoder().decode(Reference.self, from: Data(contentsOf: dir.appendingPathComponent("reference.json")))
    }

    static func samples(_ file: String) throws -> [Int16] {
        try AudioFile.readMono(path: dir.appendingPathComponent(file).path).samples
    }

    static func model() throws -> HotPhraseModel { try HotPhraseModel.load(path: modelPath) }
}

/// Runs a detector over samples in `chunk`-sized pieces; returns every step's score and the detections.
func run(_ detector: HotPhraseDetector, _ samples: [Int16], chunk: Int = 320) -> (scores: [Double], detections: [HotPhraseDetection]) {
    var scores: [Double] = []
    var detections: [HotPhraseDetection] = []
    detector.stepObserver = { scores.append($0) }
    samples.withUnsafeBufferPointer { all in
        var i = 0
        while i < all.count {
            let end = min(i + chunk, all.count)
            detector.process(UnsafeBufferPointer(rebasing: all[i..<end])) { detections.append($0) }
            i = end
        }
    }
    detector.stepObserver = nil
    return (scores, detections)
}

@Suite(.ownThread) struct ReferenceTests {
    @Test func theFormatOneModelIsSmallAndMatchesTheFixtures() throws {
        let model = try Fixtures.model()
        #expect(model.fileBytes <= 100 * 1024, "the issue's budget is 100 KB of weights")
        #expect(model.phrase == "OK Hound")
        #expect(try Fixtures.reference().model == "ok-hound.hpm")
    }

    /// The Swift detector reproduces the training pipeline's reference inference (tools/hotphrase/hotphrase/reference.py):
    /// the same number of scores, each within 0.002, and the same detections.
    @Test func scoresAndDetectionsMatchTheReferenceInference() throws {
        let model = try Fixtures.model()
        let reference = try Fixtures.reference()
        #expect(reference.clips.count >= 6)
        for clip in reference.clips {
            let detector = HotPhraseDetector(model: model, threshold: reference.threshold)
            let (scores, detections) = run(detector, try Fixtures.samples(clip.file))
            #expect(scores.count == clip.scores.count, "\(clip.file)")
            let worst = zip(scores, clip.scores).map { abs($0 - $1) }.max() ?? 1
            #expect(worst < 0.002, "\(clip.file): largest score difference \(worst)")
            #expect(detections.count == clip.detections.count, "\(clip.file): \(detections) vs \(clip.detections)")
            for (d, r) in zip(detections, clip.detections) {
                #expect(abs(d.time - r.time) < 0.0015, "\(clip.file)")
                #expect(abs(d.score - r.score) < 0.002, "\(clip.file)")
            }
        }
    }

    /// At the sensitivity the fixtures were made at (0.85): a held-out voice (festival's ked) and the demo's recording saying
    /// "OK Hound" and a question are heard once, near the end of the phrase; confusable phrases ("OK Google",
    /// "hound dog", "greyhound") and an ordinary sentence are not. (hard-* clips, held-out voices this model
    /// misses, are only compared with the reference above.)
    @Test func findsThePhraseAndStaysSilentOnNegatives() throws {
        let model = try Fixtures.model()
        let threshold = HotPhraseDetector.threshold(sensitivity: 0.85, model: model)
        #expect(abs(threshold - (try Fixtures.reference().threshold)) < 1e-9)
        for clip in try Fixtures.reference().clips where !clip.file.hasPrefix("hard-") {
            let (_, detections) = run(HotPhraseDetector(model: model, threshold: threshold), try Fixtures.samples(clip.file))
            if clip.file.hasPrefix("pos-") {
                #expect(detections.count == 1, "\(clip.file): \(detections)")
                // the clips start with 1.5 s of noise, and the phrase takes under 1.5 s
                if let d = detections.first { #expect(d.time > 1.5 && d.time < 3.5, "\(clip.file): \(d)") }
            } else {
                #expect(detections.isEmpty, "\(clip.file): \(detections)")
            }
        }
        let demo = try AudioFile.readMono(path: Fixtures.root.appendingPathComponent("share/demo/ok-hound-what-time-is-it.wav").path).samples
        let heard = run(HotPhraseDetector(model: model, threshold: threshold), demo).detections
        #expect(heard.count == 1)
        // 2.5 s of room tone, then "OK Hound": decided within 300 ms of its end
        if let d = heard.first { #expect(d.time > 2.9 && d.time < 3.6, "\(d)") }
    }
}

/// The model the speaker ships (format 2, recipe e1, seed 3; BENCHMARKS.md, "Issue #37"): its default sensitivity
/// is the point measured there, it wakes once on the demo's recording at it, near the end of "OK Hound", and not
/// for the question alone nor for the confusable phrases and the sentence of the fixtures.
@Suite struct ShippedModelTests {
    @Test func theShippedModelIsTheMeasuredOne() throws {
        let model = try HotPhraseModel.load(path: Fixtures.shippedModelPath)
        #expect(model.hasEmbeddings)
        #expect(model.phrase == "OK Hound")
        #expect(model.defaultThreshold == 0.626, "the 0.5 FA/h point that the ship rule measured")
        #expect(model.fileBytes <= 2 * 1024 * 1024)
    }

    @Test func itWakesOnTheDemoAndNotOnTheNegatives() throws {
        let model = try HotPhraseModel.load(path: Fixtures.shippedModelPath)
        let threshold = HotPhraseDetector.threshold(sensitivity: 0.5, model: model)
        let demo = try AudioFile.readMono(path: Fixtures.root.appendingPathComponent("share/demo/ok-hound-what-time-is-it.wav").path).samples
        let heard = run(HotPhraseDetector(model: model, threshold: threshold), demo).detections
        #expect(heard.count == 1, "\(heard)")
        // 2.5 s of room tone, then "OK Hound": decided within 300 ms of its end
        if let d = heard.first { #expect(d.time > 2.9 && d.time < 3.6, "\(d)") }
        let question = try AudioFile.readMono(path: Fixtures.root.appendingPathComponent("share/demo/what-time-is-it.wav").path).samples
        #expect(run(HotPhraseDetector(model: model, threshold: threshold), question).detections.isEmpty)
        for file in ["neg-google.flac", "neg-hounddog.flac", "neg-sentence.flac"] {
            let detections = run(HotPhraseDetector(model: model, threshold: threshold), try Fixtures.samples(file)).detections
            #expect(detections.isEmpty, "\(file): \(detections)")
        }
    }
}

@Suite(.ownThread) struct StreamingTests {
    /// The microphone hands over 10 or 20 ms, a file reader anything: the result must not depend on it.
    @Test(arguments: [1, 160, 333, 4096]) func chunkSizeDoesNotMatter(chunk: Int) throws {
        let model = try Fixtures.model()
        let samples = try Fixtures.samples("pos-ked.flac")
        let base = run(HotPhraseDetector(model: model), samples)
        let other = run(HotPhraseDetector(model: model), samples, chunk: chunk)
        #expect(base.scores == other.scores)
        #expect(base.detections == other.detections)
    }

    /// After a reset the detector starts afresh, and detection times still count every sample fed.
    @Test func resetForgetsAndKeepsTime() throws {
        let model = try Fixtures.model()
        let threshold = try Fixtures.reference().threshold
        let clip = try Fixtures.samples("pos-ked.flac")
        let alone = run(HotPhraseDetector(model: model, threshold: threshold), clip)
        #expect(alone.detections.count == 1)
        let detector = HotPhraseDetector(model: model, threshold: threshold)
        _ = run(detector, try Fixtures.samples("neg-sentence.flac") + Array(clip.prefix(8000)))
        detector.reset()
        let before = try Fixtures.samples("neg-sentence.flac").count + 8000
        let after = run(detector, clip)
        #expect(after.scores == alone.scores, "a reset detector behaves as a new one")
        #expect(after.detections.count == 1)
        if let a = after.detections.first, let b = alone.detections.first {
            #expect(abs(a.time - (b.time + Double(before) / 16000)) < 1e-9)
        }
    }

    /// One "OK Hound" is one wake-up; two, further apart than the refractory period, are two.
    @Test func refractoryPeriod() throws {
        let model = try Fixtures.model()
        let threshold = try Fixtures.reference().threshold
        let clip = try Fixtures.samples("pos-ked.flac")
        let twice = clip + clip
        #expect(run(HotPhraseDetector(model: model, threshold: threshold), twice).detections.count == 2)
        let deaf = HotPhraseDetector(model: model, threshold: threshold, refractorySeconds: Double(clip.count) / 16000 + 1)
        #expect(run(deaf, twice).detections.count == 1)
    }

    @Test func sensitivityMapsMonotonicallyToTheThreshold() throws {
        let model = try Fixtures.model()
        let steps = stride(from: 0.0, through: 1.0, by: 0.05).map { HotPhraseDetector.threshold(sensitivity: $0, model: model) }
        #expect(zip(steps, steps.dropFirst()).allSatisfy { $0 > $1 })
        #expect(abs(HotPhraseDetector.threshold(sensitivity: 0.5, model: model) - model.defaultThreshold) < 1e-9)
        #expect(steps.allSatisfy { $0 > 0 && $0 < 1 })
    }

    /// A confident network's threshold can sit at 0.99999: sensitivity 0.5 must still give exactly it (a clamp at
    /// 0.999 once turned such a model's threshold down a hundredfold in false accepts).
    @Test func thresholdsNearOneAreKept() throws {
        let model = try withHeader(try Fixtures.model(), replacing: "\"default_threshold\": ", upTo: ",", with: "0.9999874")
        #expect(model.defaultThreshold == 0.9999874)
        #expect(abs(HotPhraseDetector.threshold(sensitivity: 0.5, model: model) - 0.9999874) < 1e-12)
        #expect(HotPhraseDetector.threshold(sensitivity: 0.6, model: model) < 0.9999874)
        #expect(HotPhraseDetector.threshold(sensitivity: 0.4, model: model) > 0.9999874)
    }

    @Test func silenceNeverFires() throws {
        let model = try Fixtures.model()
        let (scores, detections) = run(HotPhraseDetector(model: model, threshold: 0.5), [Int16](repeating: 0, count: 16000 * 10))
        #expect(detections.isEmpty)
        #expect(scores.count == ((16000 * 10 - 480) / 160 + 1) / 3 - model.warmUpSteps)
    }
}

/// The model file with one header value replaced (the header length field rewritten to match).
func withHeader(_ model: HotPhraseModel, replacing key: String, upTo end: String, with value: String) throws -> HotPhraseModel {
    let full = [UInt8](try Data(contentsOf: URL(fileURLWithPath: model.path)))
    let length = Int(full[4]) | Int(full[5]) << 8 | Int(full[6]) << 16 | Int(full[7]) << 24
    var header = String(decoding: full[8..<(8 + length)], as: UTF8.self)
    let start = try #require(header.range(of: key))
    let stop = try #require(header.range(of: end, range: start.upperBound..<header.endIndex))
    header.replaceSubrange(start.upperBound..<stop.lowerBound, with: value)
    let h = Array(header.utf8)
    let n = UInt32(h.count)
    // Built in steps: Swift 6.2's type checker gives up on the one expression.
    let lengthBytes: [UInt8] = [UInt8(n & 0xff), UInt8(n >> 8 & 0xff), UInt8(n >> 16 & 0xff), UInt8(n >> 24)]
    var bytes: [UInt8] = Array("HPM1".utf8) + lengthBytes
    bytes += h
    bytes += full[(8 + length)...]
    return try HotPhraseModel(bytes: bytes, path: model.path)
}

@Suite struct FrontEndTests {
    /// The real FFT against the definition, for a size the front end uses and a small one.
    @Test(arguments: [8, 512]) func realFFTMatchesTheDFT(n: Int) {
        var g = SystemRandomNumberGenerator()
        let x = (0..<n).map { _ in Float.random(in: -1...1, using: &g) }
        var power = [Float](repeating: 0, count: n / 2 + 1)
        let fft = RealFFT(size: n)
        x.withUnsafeBufferPointer { p in power.withUnsafeMutableBufferPointer { fft.powerSpectrum(p.baseAddress!, count: n, into: $0.baseAddress!) } }
        for k in 0...(n / 2) {
            var re = 0.0, im = 0.0
            for (j, v) in x.enumerated() {
                re += Double(v) * cos(-2 * Double.pi * Double(k * j) / Double(n))
                im += Double(v) * sin(-2 * Double.pi * Double(k * j) / Double(n))
            }
            let expected = re * re + im * im
            #expect(abs(Double(power[k]) - expected) <= 1e-3 * max(1, expected), "bin \(k)")
        }
    }
}

@Suite struct ModelFileTests {
    func bytes() throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: Fixtures.modelPath))) }

    @Test func missingFileNamesThePath() {
        #expect { try HotPhraseModel.load(path: "/nonexistent/ok-hound.hpm") } throws: { error in
            "\(error)" == "hot-phrase model /nonexistent/ok-hound.hpm: no such file"
        }
    }

    @Test func aFolderOrAnEmptyFileIsNamedAsSuch() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hpm-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        #expect { try HotPhraseModel.load(path: dir) } throws: { error in
            "\(error)" == "hot-phrase model \(dir): is a folder, not a model file"
        }
        let empty = dir + "/empty.hpm"
        #expect(FileManager.default.createFile(atPath: empty, contents: Data()))
        #expect { try HotPhraseModel.load(path: empty) } throws: { error in
            "\(error)".contains("\(empty): not a hot-phrase model file")
        }
    }

    @Test func theShippedFileLoadsAsItsBytesDo() throws {
        // load(path:) reads the file itself; it must hand the loader exactly the file's bytes.
        let loaded = try HotPhraseModel.load(path: Fixtures.modelPath)
        let fromBytes = try HotPhraseModel(bytes: try bytes(), path: Fixtures.modelPath)
        #expect(loaded.fileBytes == fromBytes.fileBytes)
        #expect(loaded.defaultThreshold == fromBytes.defaultThreshold && loaded.phrase == fromBytes.phrase)
    }

    @Test func notAModel() {
        #expect { try HotPhraseModel(bytes: Array("RIFF....WAVEfmt ".utf8), path: "x.hpm") } throws: { error in
            "\(error)".contains("x.hpm: not a hot-phrase model file")
        }
    }

    @Test func truncatedFilesAreRefused() throws {
        let full = try bytes()
        #expect(throws: HotPhraseModelError.self) { try HotPhraseModel(bytes: Array(full.prefix(40)), path: "t.hpm") }
        #expect { try HotPhraseModel(bytes: Array(full.dropLast(100)), path: "t.hpm") } throws: { error in
            "\(error)".contains("outside the file") || "\(error)".contains("no scales")
        }
    }

    /// A header that lies about a tensor's shape (a model for another network) is refused by name.
    @Test func wrongShapeIsRefused() throws {
        var full = try bytes()
        let length = Int(full[4]) | Int(full[5]) << 8 | Int(full[6]) << 16 | Int(full[7]) << 24
        var header = String(decoding: full[8..<(8 + length)], as: UTF8.self)
        header = header.replacingOccurrences(of: "\"channels\": 96", with: "\"channels\": 95")
        #expect(header.utf8.count == length)
        full.replaceSubrange(8..<(8 + length), with: Array(header.utf8))
        #expect { try HotPhraseModel(bytes: full, path: "s.hpm") } throws: { error in
            "\(error)".contains("s.hpm: tensor in.weight has shape")
        }
    }

    /// A stop word's ring threshold is read when there, and one out of 0...1 is refused as the default one is.
    @Test func aRingThresholdIsReadAndChecked() throws {
        let model = try Fixtures.model()
        #expect(model.ringThreshold == nil)
        let ring = try withHeader(model, replacing: "\"default_threshold\": ", upTo: ",", with: "0.9, \"ring_threshold\": 0.75")
        #expect(ring.defaultThreshold == 0.9 && ring.ringThreshold == 0.75)
        #expect { try withHeader(model, replacing: "\"default_threshold\": ", upTo: ",", with: "0.9, \"ring_threshold\": 1.5") } throws: {
            "\($0)".contains("threshold or refractory period is out of range")
        }
    }

    @Test func locateSaysWhereItLooked() {
        #expect { try HotPhraseModel.locate("/nowhere/x.hpm") } throws: { "\($0)".contains("/nowhere/x.hpm: no such file") }
    }
}
