import Audio
import AudioCore
import Foundation
@testable import HotPhrase
import Testing
import TestSupport

/// The Python reference's numbers for the same takes, bank and stream (Fixtures/household, its README has the
/// tolerances and why): the Swift enrollment and personal scorer must agree with them.
@Suite(.ownThread) struct HouseholdParityTests {
    static let dir = Fixtures.dir.appendingPathComponent("household")

    struct Expected: Decodable {
        struct Tolerances: Decodable {
            let e: Float
            let score: Double
            let mu: Double
            let sd_relative: Double
            let z: Double
            let mean: Float
            let head_z: Double
        }
        struct Take: Decodable {
            let file: String
            let speech: [Double]
            let t: [Int]
            let e: [[Float]]
            let mu: Double
            let sd: Double
        }
        struct Stream: Decodable {
            let file: String
            let t: [Int]
            let score: [[Double?]]
            let z: [[Double?]]
            let personal: [Double?]
            let detections: [Double]
        }
        let model: String
        let bank: String
        let phrase: String
        let z_threshold: Double
        let sensitivity: Double
        let tolerances: Tolerances
        let mean: [Float]
        struct Head: Decodable {
            let window: Int
            let l2: Double
            let positives: Int
            let negatives: Int
            let shifts: [Int]
            let last_template_frame: [Int]
            let bias: Double
            let weights: [Float]
            let stream_z: [Double?]
        }
        let takes: [Take]
        let stream: Stream
        let head: Head
    }

    func expected() throws -> Expected {
        try JSONDecoder().decode(Expected.self, from: Data(contentsOf: Self.dir.appendingPathComponent("expected.json")))
    }

    func samples(_ file: String) throws -> [Int16] {
        try AudioFile.readMono(path: Self.dir.appendingPathComponent(file).path).samples
    }

    func load() throws -> (Expected, HotPhraseModel, NegativeBank) {
        let x = try expected()
        let model = try HotPhraseModel.load(path: Self.dir.appendingPathComponent(x.model).path)
        let bank = try NegativeBank.load(path: Self.dir.appendingPathComponent(x.bank).path)
        return (x, model, bank)
    }

    @Test func theBankReadsAsTheReferenceWroteIt() throws {
        let (x, _, bank) = try load()
        #expect(bank.zThreshold == x.z_threshold)
        #expect(bank.mean.count == x.mean.count)
        #expect(zip(bank.mean, x.mean).allSatisfy { abs($0 - $1) <= x.tolerances.mean })
    }

    @Test func takesBecomeTheReferenceTemplates() throws {
        let (x, model, bank) = try load()
        for take in x.takes {
            let made = try Enrollment.take(try samples(take.file), model: model)
            #expect([made.speech.lowerBound, made.speech.upperBound] == take.speech, "\(take.file)")
            #expect(made.templateSamples == take.t, "\(take.file)")
            #expect(made.template.count == take.e.count)
            let worst = zip(made.template, take.e).map { a, b in zip(a, b).map { abs($0 - $1) }.max() ?? 0 }.max() ?? 0
            #expect(worst <= x.tolerances.e, "\(take.file): embeddings differ by \(worst)")
            let (mu, sd) = try bank.measure(template: made.template)
            #expect(abs(mu - take.mu) <= x.tolerances.mu, "\(take.file): mu \(mu) vs \(take.mu)")
            #expect(abs(sd - take.sd) <= x.tolerances.sd_relative * take.sd, "\(take.file): sd \(sd) vs \(take.sd)")
        }
    }

    /// The stream through the three templates: t_k, every template's score and z, the personal score, and the
    /// detection the fused detector makes by the templates alone (the generic model held off with a threshold
    /// above any probability).
    @Test func theStreamScoresAsTheReferenceScoresIt() throws {
        let (x, model, bank) = try load()
        var household = Household()
        for take in x.takes { try household.add(try Enrollment.take(try samples(take.file), model: model), phrase: x.phrase, bank: bank) }
        let templates = try #require(household.phrase(x.phrase)?.templates)
        let stream = try samples(x.stream.file)

        var times: [Int] = []
        var frames: [[Float]] = []
        let detector = HotPhraseDetector(model: model)
        stream.withUnsafeBufferPointer {
            detector.process($0, onFrame: { e, t in frames.append(Array(e)); times.append(t) }, onDetection: { _ in })
        }
        #expect(times == x.stream.t)
        let normalised = bank.normalised(frames)
        var personal = [Double](repeating: -.infinity, count: frames.count)
        for (j, t) in templates.enumerated() {
            let dtw = SubsequenceDTW(template: bank.normalised(t.embeddings), dim: bank.dim)
            normalised.withUnsafeBufferPointer { f in
                for n in 0..<frames.count {
                    let s = dtw.push(f.baseAddress! + n * bank.dim)
                    let z = Household.z(score: s, mu: t.mu, sd: t.sd)
                    personal[n] = max(personal[n], z)
                    guard n < x.stream.score[j].count else { continue }
                    if let expected = x.stream.score[j][n] {
                        #expect(abs(Double(s) - expected) <= x.tolerances.score, "template \(j) step \(n): \(s) vs \(expected)")
                        #expect(abs(z - (x.stream.z[j][n] ?? .nan)) <= x.tolerances.z, "template \(j) step \(n)")
                    } else {
                        #expect(s.isInfinite, "template \(j) step \(n): \(s), the reference has no path yet")
                    }
                }
            }
        }
        for (n, expected) in x.stream.personal.enumerated() {
            if let expected { #expect(abs(personal[n] - expected) <= x.tolerances.z, "step \(n)") } else { #expect(personal[n].isInfinite) }
        }

        let fused = try FusedDetector(model: model, household: household, bank: bank, threshold: 2,
                                      zThreshold: bank.zThreshold(sensitivity: x.sensitivity), refractorySeconds: 2)
        var detections: [WakeDetection] = []
        stream.withUnsafeBufferPointer { fused.process($0) { detections.append($0) } }
        #expect(detections.map(\.time) == x.stream.detections)
        #expect(detections.allSatisfy { $0.personal && $0.phrase == x.phrase })
    }

    /// The personal head fitted on the three takes against the bank's windows, as the reference fits it
    /// (household_head.fit: scipy's L-BFGS-B on the same objective), and its z over the stream. The objective is
    /// strictly convex, so both minimisers reach one head; what differs is the embeddings (float32 against the
    /// numpy reference, within 0.01) and where each stops.
    @Test func theHeadFitsAndScoresAsTheReferences() throws {
        let (x, model, bank) = try load()
        #expect(x.head.window == PersonalHead.window && x.head.shifts == PersonalHead.shifts && x.head.l2 == HeadFit.l2)
        var positives = WindowRows(width: PersonalHead.window * bank.dim)
        for (take, end) in zip(x.takes, x.head.last_template_frame) {
            let made = try Enrollment.take(try samples(take.file), model: model)
            #expect(made.templateEnd == end, "\(take.file)")
            positives.append(contentsOf: PersonalHead.positives(of: made, bank: bank))
        }
        let negatives = PersonalHead.negatives(bank: bank)
        #expect(positives.count == x.head.positives)
        #expect(negatives.count == x.head.negatives)
        let head = try PersonalHead.fit(positives: positives, negatives: negatives)

        var frames: [[Float]] = []
        let detector = HotPhraseDetector(model: model)
        try samples(x.stream.file).withUnsafeBufferPointer {
            detector.process($0, onFrame: { e, _ in frames.append(Array(e)) }, onDetection: { _ in })
        }
        let normalised = bank.normalised(frames)
        #expect(frames.count == x.head.stream_z.count)
        var worst = 0.0
        normalised.withUnsafeBufferPointer { f in
            for (n, expected) in x.head.stream_z.enumerated() {
                guard let expected else {
                    #expect(n < PersonalHead.window - 1, "step \(n): the reference has no window")
                    continue
                }
                let z = head.z(f.baseAddress! + (n - PersonalHead.window + 1) * bank.dim)
                worst = max(worst, abs(z - expected))
                #expect(abs(z - expected) <= x.tolerances.head_z, "step \(n): z \(z) vs \(expected)")
            }
        }
        print("head parity: worst z difference \(worst) over \(x.head.stream_z.count) steps")
    }

    /// A rendering with no room and no noise is the take padded as enrolled: its windows are the take's own,
    /// number for number (the renderings' frames line up with the clean take's).
    @Test func aRenderingThatChangesNothingGivesTheTakesOwnWindows() throws {
        let (x, model, bank) = try load()
        for take in x.takes {
            let samples = try samples(take.file)
            let made = try Enrollment.take(samples, model: model)
            let same = TakeRenderings.render(samples, .init(room: false, snr: nil), seed: 1).samples
            #expect(PersonalHead.positives(ofRendering: same, take: made, model: model, bank: bank)
                == PersonalHead.positives(of: made, bank: bank), "\(take.file)")
        }
    }

    /// The head as the speaker trains it (the takes clean and in the measurement's 13 renderings each, against
    /// the bank): the measurement's 168 positive windows, and over the stream it peaks where the phrase is, as the
    /// head of the clean takes alone does, far above the speech before it.
    @Test func theTrainedHeadHearsThePhraseWhereTheCleanTakesHeadDoes() throws {
        let (x, model, bank) = try load()
        let takes = try x.takes.map { t in
            let s = try samples(t.file)
            return (samples: s, take: try Enrollment.take(s, model: model))
        }
        let head = try PersonalHead.train(takes: takes, model: model, bank: bank)
        var frames: [[Float]] = []
        let detector = HotPhraseDetector(model: model)
        try samples(x.stream.file).withUnsafeBufferPointer {
            detector.process($0, onFrame: { e, _ in frames.append(Array(e)) }, onDetection: { _ in })
        }
        let normalised = bank.normalised(frames)
        let z = normalised.withUnsafeBufferPointer { f in
            (PersonalHead.window - 1..<frames.count).map { head.z(f.baseAddress! + ($0 - PersonalHead.window + 1) * bank.dim) }
        }
        let peak = z.indices.max { z[$0] < z[$1] }! + PersonalHead.window - 1
        let clean = x.head.stream_z.indices.max { (x.head.stream_z[$0] ?? -.infinity) < (x.head.stream_z[$1] ?? -.infinity) }!
        #expect(abs(peak - clean) <= 1, "peak at step \(peak), the clean takes' head at \(clean)")
        let before = z.prefix(6).max()!  // the windows over "Put it away."
        #expect(z.max()! > before + 3, "phrase \(z.max()!) against the speech before it \(before)")
        var rows = WindowRows(width: PersonalHead.window * bank.dim)
        for t in takes {
            rows.append(contentsOf: PersonalHead.positives(of: t.take, bank: bank))
            for rendering in TakeRenderings.measured {
                rows.append(contentsOf: PersonalHead.positives(ofRendering: TakeRenderings.render(t.samples, rendering, seed: 0).samples,
                                                              take: t.take, model: model, bank: bank))
            }
        }
        #expect(rows.count == 168)
    }
}
