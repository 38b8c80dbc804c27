import Audio
import AudioCore
import Foundation
@testable import HotPhrase
import Testing
import TestSupport

/// The personal head in the household (docs/household.md, "The personal head"): kept in the file beside its
/// phrase's templates, scaled again for a new bank, and scored by the speaker's detector at the bank's z plus
/// `PersonalHead.offset`, above its own household negatives. With the parity fixture's takes, bank and stream
/// (Fixtures/household: "OK Hound" said once in the stream, the head's z peaking at 16.6 there).
@Suite(.serialized, .ownThread) struct HouseholdHeadTests {
    static let dir = Fixtures.dir.appendingPathComponent("household")

    struct Parts {
        let model: HotPhraseModel
        let bank: NegativeBank
        let takes: [(samples: [Int16], take: EnrolledTake)]
        let stream: [Int16]
        /// The fixture's takes as templates, and a head of them (clean takes only: fast, and the fixture's own).
        let household: Household
        let head: PersonalHead
    }

    static func parts() throws -> Parts {
        func samples(_ name: String) throws -> [Int16] { try AudioFile.readMono(path: dir.appendingPathComponent(name).path).samples }
        let model = try HotPhraseModel.load(path: Fixtures.dir.appendingPathComponent("embedding/test.hpm").path)
        let bank = try NegativeBank.load(path: dir.appendingPathComponent("bank.hpm").path)
        let takes = try (1...3).map { k in
            let s = try samples("take-\(k).wav")
            return (samples: s, take: try Enrollment.take(s, model: model))
        }
        var household = Household()
        for t in takes { try household.add(t.take, phrase: "OK Hound", bank: bank, now: Date(timeIntervalSince1970: 1_790_000_000)) }
        var positives = WindowRows(width: PersonalHead.window * bank.dim)
        for t in takes { positives.append(contentsOf: PersonalHead.positives(of: t.take, bank: bank)) }
        let head = try PersonalHead.fit(positives: positives, negatives: PersonalHead.negatives(bank: bank))
        return Parts(model: model, bank: bank, takes: takes, stream: try samples("stream.wav"), household: household, head: head)
    }

    /// Every wake over `samples` (in 20 ms pieces), and one still waiting at the end.
    static func wakes(_ detector: FusedDetector, _ samples: [Int16]) -> [WakeDetection] {
        var found = HouseholdFixtures.wakes(detector, samples)
        detector.finish { found.append($0) }
        return found
    }

    /// The household with its templates made deaf (their mu far below any score, so their z never nears a
    /// threshold): what wakes it then is the head.
    static func headOnly(_ h: Household) -> Household {
        var deaf = h
        for t in deaf.phrases[0].templates.indices { deaf.phrases[0].templates[t].mu = -1000 }
        return deaf
    }

    /// The head's z at each step of `samples` (-inf before a window is full), as the detector's ring sees it.
    static func headZ(_ head: PersonalHead, _ samples: [Int16], model: HotPhraseModel, bank: NegativeBank) -> [Double] {
        let frames = bank.normalised(HouseholdFixtures.frames(samples, model: model))
        let n = frames.count / bank.dim
        return frames.withUnsafeBufferPointer { f in
            (0..<n).map { $0 < PersonalHead.window - 1 ? -.infinity : head.z(f.baseAddress! + ($0 - PersonalHead.window + 1) * bank.dim) }
        }
    }

    @Test func aHeadIsKeptBesideItsTemplatesAndRefusedWhereItDoesNotFit() throws {
        let p = try Self.parts()
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hh-head-\(UUID().uuidString)/household.json").path
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        var h = p.household
        try h.addHead(p.head, phrase: "ok hound", takes: 3, bank: p.bank, now: Date(timeIntervalSince1970: 1_790_000_000))
        let kept = try #require(h.phrases[0].heads?.first)
        #expect(h.phrases[0].heads?.count == 1 && kept.takes == 3 && kept.bankSHA256 == p.bank.sha256 && kept.head == p.head)
        try h.save(path: path)
        #expect(try Household.load(path: path) == h)
        // a phrase not enrolled keeps no head; a head of another size is refused by name
        #expect(throws: Household.NotLearned.notEnrolled) { try h.addHead(p.head, phrase: "hey kitchen", takes: 3, bank: p.bank) }
        #expect { try h.addHead(PersonalHead(weights: [1, 2], bias: 0), phrase: "OK Hound", takes: 3, bank: p.bank) } throws: {
            "\($0)".contains("is not 12 frames of 96 finite numbers")
        }
        // a file from before the heads (no "heads") loads with none; a damaged head is named
        var old = p.household
        old.phrases[0].heads = nil
        try old.save(path: path)
        #expect(try !String(contentsOfFile: path, encoding: .utf8).contains("heads"))
        #expect(try Household.load(path: path)?.phrases[0].heads == nil)
        var damaged = h
        damaged.phrases[0].heads![0].weights.removeLast(5)
        try damaged.save(path: path)
        #expect { try Household.load(path: path) } throws: { "\($0)".contains("a personal head of \"OK Hound\" has the wrong size") }
        // and a head whose frames are not the bank's size is caught before it is scored
        damaged.phrases[0].heads![0].weights = [Float](repeating: 0, count: 12 * 95)
        #expect { try damaged.check(dim: 96) } throws: { "\($0)".contains("personal head that is not 12 frames of 96 numbers") }
    }

    /// A new bank (a new package) scales a head again: its z over the new bank's windows is again a z (mean 0,
    /// deviation 1), and it is then scored; until then a head of another bank is not.
    @Test func aNewBankScalesTheHeadAgain() throws {
        let p = try Self.parts()
        var h = p.household
        try h.addHead(p.head, phrase: "OK Hound", takes: 3, bank: p.bank)
        // as if scaled against another bank: shifted and stretched
        h.phrases[0].heads![0].weights = p.head.weights.map { $0 * 3 }
        h.phrases[0].heads![0].bias = p.head.bias * 3 + 7
        h.phrases[0].heads![0].bankSHA256 = "another"
        #expect(try FusedDetector.Plan(model: p.model, household: h, bank: p.bank).headCount == 0)
        #expect(try h.remeasure(bank: p.bank))
        let windows = PersonalHead.negatives(bank: p.bank)
        let head = h.phrases[0].heads![0].head
        let z = windows.withRows { base, starts in starts.map { head.z(base + $0) } }
        let mean = z.reduce(0, +) / Double(z.count)
        let sd = (z.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(z.count)).squareRoot()
        #expect(abs(mean) < 1e-3 && abs(sd - 1) < 1e-3, "mean \(mean), deviation \(sd)")
        // scaling is affine: the same z as the head it was scaled from
        let stream = Self.headZ(head, p.stream, model: p.model, bank: p.bank)
        let original = Self.headZ(p.head, p.stream, model: p.model, bank: p.bank)
        #expect(zip(stream, original).allSatisfy { $0 == $1 || abs($0 - $1) < 1e-3 }, "\(stream) vs \(original)")
        #expect(h.phrases[0].heads![0].bankSHA256 == p.bank.sha256)
        #expect(try FusedDetector.Plan(model: p.model, household: h, bank: p.bank).headCount == 1)
        #expect(try !h.remeasure(bank: p.bank))
    }

    /// With the templates deaf, the head alone wakes the speaker where the phrase is, once; without it nothing
    /// does; and its threshold is the bank's z plus the offset: just above its peak it is silent, at it it wakes.
    @Test func theHeadWakesAtTheBanksZPlusTheOffset() throws {
        let p = try Self.parts()
        var h = Self.headOnly(p.household)
        #expect(Self.wakes(try FusedDetector(model: p.model, household: h, bank: p.bank, threshold: 2), p.stream).isEmpty)
        try h.addHead(p.head, phrase: "OK Hound", takes: 3, bank: p.bank)
        let detector = try FusedDetector(model: p.model, household: h, bank: p.bank, threshold: 2)
        #expect(detector.headCount == 1 && detector.zThreshold == p.bank.zThreshold)
        let woke = Self.wakes(detector, p.stream)
        let z = Self.headZ(p.head, p.stream, model: p.model, bank: p.bank)
        let peak = z.indices.max { z[$0] < z[$1] }!
        let crossed = try #require(z.firstIndex { $0 >= p.bank.zThreshold + PersonalHead.offset })
        #expect(woke.count == 1 && woke.allSatisfy { $0.personal && $0.phrase == "OK Hound" }, "\(woke)")
        // the wake waits for the peak (as the templates' does), and reports the head's z on the templates' scale
        let step = p.model.stepSeconds
        let time = try #require(woke.first?.time)
        #expect(time > Double(crossed) * step && time < Double(peak + FusedDetector.peakWaitSteps + 13) * step, "\(time) s, peak at step \(peak)")
        #expect(abs(try #require(woke.first?.score) - (z[peak] - PersonalHead.offset)) < 1e-3)

        let above = z[peak] - PersonalHead.offset + 0.01
        #expect(Self.wakes(try FusedDetector(model: p.model, household: h, bank: p.bank, threshold: 2, zThreshold: above), p.stream).isEmpty)
        let at = z[peak] - PersonalHead.offset - 0.01
        #expect(Self.wakes(try FusedDetector(model: p.model, household: h, bank: p.bank, threshold: 2, zThreshold: at), p.stream).count == 1)
    }

    /// A false wake of the head kept as a household negative raises the head's threshold above what it scored
    /// there: the same sound no longer wakes the speaker, the phrase's takes still score as they did.
    @Test func aHouseholdNegativeRaisesTheHeadsThreshold() throws {
        let p = try Self.parts()
        var h = Self.headOnly(p.household)
        try h.addHead(p.head, phrase: "OK Hound", takes: 3, bank: p.bank)
        let detector = try FusedDetector(model: p.model, household: h, bank: p.bank, threshold: 2)
        #expect(Self.wakes(detector, p.stream).count == 1)
        let frames = detector.framesAtLastWake
        #expect(frames.count >= PersonalHead.window)
        h.addNegative(frames)
        #expect(h.negatives.last?.embeddings.count ?? 0 >= PersonalHead.window, "the negative holds a head's window")
        #expect(Self.wakes(try FusedDetector(model: p.model, household: h, bank: p.bank, threshold: 2), p.stream).isEmpty)
    }
}
