import Audio
import AudioCore
import Foundation
@testable import HotPhrase
import Testing
import TestSupport

/// Enrollment, the subsequence DTW, the negative bank and the household file (docs/household.md).
enum HouseholdFixtures {
    /// espeak-ng saying `text` with `voice` at `speed` words a minute, 16 kHz mono, with a second of quiet (a
    /// faint noise floor) before and after: the front end needs 0.8 s of audio for its first embedding.
    static func say(_ text: String, voice: String = "en-us", speed: Int = 175) throws -> [Int16] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hh-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let espeak = Process()
        espeak.executableURL = URL(fileURLWithPath: "/usr/bin/espeak-ng")
        espeak.arguments = ["-v", voice, "-s", "\(speed)", "-w", path, text]
        espeak.standardError = FileHandle.nullDevice
        try espeak.run()
        espeak.waitUntilExit()
        guard espeak.terminationStatus == 0 else { throw CocoaError(.fileWriteUnknown) }
        var rng = SplitMix(seed: UInt64(text.utf8.count))
        let quiet = (0..<16_000).map { _ in Int16(rng.unit() * 20 - 10) }
        return quiet + (try AudioFile.readMono(path: path).samples) + quiet
    }

    /// A household whose one take is espeak-ng's "hey kitchen", enrolled as `phrase`.
    static func kitchen(_ phrase: String, model: HotPhraseModel, bank: NegativeBank) throws -> Household {
        var household = Household()
        try household.add(try Enrollment.take(try say("hey kitchen"), model: model), phrase: phrase, bank: bank)
        return household
    }

    /// Every wake of `detector` over `samples`, fed in 20 ms pieces.
    static func wakes(_ detector: FusedDetector, _ samples: [Int16]) -> [WakeDetection] {
        var found: [WakeDetection] = []
        samples.withUnsafeBufferPointer { all in
            var i = 0
            while i < all.count {
                detector.process(UnsafeBufferPointer(rebasing: all[i..<min(i + 320, all.count)])) { found.append($0) }
                i += 320
            }
        }
        return found
    }

    /// Every embedding frame of `samples` from reset.
    static func frames(_ samples: [Int16], model: HotPhraseModel) -> [[Float]] {
        let detector = HotPhraseDetector(model: model)
        var frames: [[Float]] = []
        samples.withUnsafeBufferPointer { detector.process($0, onFrame: { e, _ in frames.append(Array(e)) }, onDetection: { _ in }) }
        return frames
    }

    static let bankSentences = [
        "what time is it", "turn the lights off in the kitchen", "how is the weather tomorrow",
        "play some music please", "set a timer for ten minutes", "who won the game last night",
        "remind me to call my mother", "the quick brown fox jumps over the lazy dog", "how far is the moon",
        "add milk to the shopping list", "what is the capital of France", "tell me a joke",
    ]

    /// A format-3 bank file of `segments` (raw frames), as tools/hotphrase writes one: float16 frames, float32 mean.
    static func bankBytes(_ segments: [[[Float]]], zThreshold: Double, dim: Int = 96) throws -> [UInt8] {
        let all = segments.flatMap { $0 }
        var mean = [Float](repeating: 0, count: dim)
        for f in all { for j in 0..<dim { mean[j] += f[j] / Float(all.count) } }
        var payload: [UInt8] = []
        for f in all { for v in f { let b = Float16(v).bitPattern; payload += [UInt8(b & 0xff), UInt8(b >> 8)] } }
        while payload.count % 4 != 0 { payload.append(0) }
        let meanOffset = payload.count
        for v in mean { let b = v.bitPattern; payload += [0, 8, 16, 24].map { UInt8((b >> $0) & 0xff) } }
        let header: [String: Any] = [
            "format": 3, "kind": "negative-embeddings", "embedding_dim": dim, "segments": segments.map(\.count),
            "z_threshold": zThreshold,
            "sources": [["name": "espeak-ng test sentences", "licence": "GPL-3.0", "seconds": 30.0, "speakers": 1]],
            "tensors": [
                ["name": "frames", "dtype": "float16", "shape": [all.count, dim], "offset": 0, "bytes": all.count * dim * 2],
                ["name": "mean", "dtype": "float32", "shape": [dim], "offset": meanOffset, "bytes": dim * 4],
            ],
        ]
        var json = [UInt8](try JSONSerialization.data(withJSONObject: header))
        while (8 + json.count) % 4 != 0 { json.append(0x20) }
        let n = UInt32(json.count)
        return Array("HPM1".utf8) + [0, 8, 16, 24].map { UInt8((n >> $0) & 0xff) } + json + payload
    }

    /// The test model's bank from the sentences above (en-us), written to a temporary file and loaded.
    static func bank(zThreshold: Double = 3) throws -> (NegativeBank, path: String) {
        let model = try EmbeddingFixtures.model()
        let segments = try bankSentences.map { frames(try say($0), model: model) }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("bank-\(UUID().uuidString).hpm").path
        try Data(try bankBytes(segments, zThreshold: zThreshold)).write(to: URL(fileURLWithPath: path))
        return (try NegativeBank.load(path: path), path)
    }

    /// The best (largest) z of `templates` of the household over `samples`.
    static func bestZ(_ household: Household, _ phrase: String, over samples: [Int16], bank: NegativeBank, model: HotPhraseModel) -> Double {
        let frames = bank.normalised(self.frames(samples, model: model))
        var best = -Double.infinity
        for t in household.phrase(phrase)?.templates ?? [] {
            let dtw = SubsequenceDTW(template: bank.normalised(t.embeddings), dim: bank.dim)
            frames.withUnsafeBufferPointer { f in
                for k in 0..<(frames.count / bank.dim) {
                    best = max(best, Household.z(score: dtw.push(f.baseAddress! + k * bank.dim), mu: t.mu, sd: t.sd))
                }
            }
        }
        return best
    }
}

extension SplitMix {
    /// Uniform in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}

/// The brute-force definition of the page's DTW: every assignment of a stream frame tau(i) to each template
/// frame, tau(i) - tau(i-1) in {1, 2}, or 0 when i >= 2 and tau(i-1) - tau(i-2) == 1; the cheapest ending at t.
func bruteForceDTW(cost: [[Float]], end t: Int) -> (score: Float, steps: [Int], start: Int) {
    let length = cost.count
    var best = Float.infinity, bestSteps: [Int] = [], bestStart = -1
    func extend(_ taus: [Int], _ sum: Float) {
        let i = taus.count
        if i == length {
            if taus.last == t, sum < best { best = sum; bestSteps = zip(taus.dropFirst(), taus).map { $0 - $1 }; bestStart = taus[0] }
            return
        }
        for step in [0, 1, 2] {
            if step == 0 && (i < 2 || taus[i - 1] - taus[i - 2] != 1) { continue }
            let tau = taus[i - 1] + step
            if tau > t { continue }
            extend(taus + [tau], sum + cost[i][tau])
        }
    }
    for start in 0...t { extend([start], cost[0][start]) }
    return (best / Float(length), bestSteps, bestStart)
}

@Suite struct SubsequenceDTWTests {
    /// Random unit vectors: the streaming scorer equals the brute force at every t (+inf where no path reaches
    /// the template's end yet), its best path starts where the brute force's does, and the best paths over the
    /// cases use all three step kinds.
    @Test func matchesTheBruteForceDefinition() {
        var rng = SplitMix(seed: 37)
        let dim = 4
        var kinds = Set<Int>()
        for trial in 0..<60 {
            let length = 1 + trial % 5, frames = 3 + (trial / 5) % 7
            func unit() -> [Float] {
                let v = (0..<dim).map { _ in Float(rng.unit() * 2 - 1) }
                let n = v.map { $0 * $0 }.reduce(0, +).squareRoot()
                return v.map { $0 / n }
            }
            let template = (0..<length).map { _ in unit() }
            let stream = (0..<frames).map { _ in unit() }
            let cost = template.map { a in stream.map { b in 1 - zip(a, b).map { $0 * $1 }.reduce(0, +) } }
            let dtw = SubsequenceDTW(template: template.flatMap { $0 }, dim: dim)
            for t in 0..<frames {
                let streamed = stream[t].withUnsafeBufferPointer { dtw.push($0.baseAddress!) }
                let (expected, steps, start) = bruteForceDTW(cost: cost, end: t)
                if expected.isInfinite {
                    #expect(streamed.isInfinite, "L \(length) t \(t): \(streamed)")
                } else {
                    #expect(abs(streamed - expected) < 1e-5, "L \(length) t \(t): \(streamed) vs \(expected)")
                    #expect(dtw.lastStart == start, "L \(length) t \(t): path starts at \(dtw.lastStart), brute force \(start)")
                    kinds.formUnion(steps)
                }
            }
            // the earliest end: the template's L frames on floor(L / 2) + 1 stream frames
            if length / 2 < frames { #expect(bruteForceDTW(cost: cost, end: length / 2).score.isFinite) }
            if length >= 2, length / 2 - 1 < frames { #expect(bruteForceDTW(cost: cost, end: length / 2 - 1).score.isInfinite) }
        }
        #expect(kinds == [0, 1, 2], "step kinds used by best paths: \(kinds)")
    }

    @Test func resetStartsAFreshStream() {
        let template: [Float] = [1, 0, 0, 1]
        let dtw = SubsequenceDTW(template: template, dim: 2)
        let a: [Float] = [1, 0], b: [Float] = [0, 1]
        _ = a.withUnsafeBufferPointer { dtw.push($0.baseAddress!) }
        #expect(b.withUnsafeBufferPointer { dtw.push($0.baseAddress!) } == 0)
        dtw.reset()
        #expect(b.withUnsafeBufferPointer { dtw.push($0.baseAddress!) }.isInfinite)
    }
}

@Suite struct TakeCheckTests {
    /// 0.5 s of silence, `seconds` of a 300 Hz tone at `amplitude` with noise, 0.5 s of silence.
    func burst(seconds: Double, amplitude: Double, floor: Double = 20) -> [Int16] {
        var rng = SplitMix(seed: 1)
        let n = Int(seconds * 16_000)
        let quiet = (0..<8000).map { _ in Int16((rng.unit() * 2 - 1) * floor) }
        let tone = (0..<n).map { i in Int16(max(-32768, min(32767, amplitude * sin(Double(i) * 2 * .pi * 300 / 16_000)
                                                             + (rng.unit() * 2 - 1) * floor))) }
        return quiet + tone + quiet
    }

    @Test func eachCheckRejectsWhatItShould() throws {
        #expect(throws: TakeProblem.self) { try Enrollment.check(burst(seconds: 0.6, amplitude: 40000)) }
        #expect { try Enrollment.check(burst(seconds: 0.6, amplitude: 40000)) } throws: { error in
            guard case .clipped(let fraction) = error as? TakeProblem else { return false }
            return fraction > 0.001 && "\(error)".contains("clipped")
        }
        #expect { try Enrollment.check(burst(seconds: 0.6, amplitude: 200, floor: 2)) } throws: { error in
            guard case .tooQuiet(let dB) = error as? TakeProblem else { return false }
            return dB < -40 && "\(error)".contains("too quiet")
        }
        // a steady tone from end to end: nothing stands 4 times above the quietest 10 ms
        let steady = (0..<16_000).map { Int16(8000 * sin(Double($0) * 2 * .pi * 300 / 16_000)) }
        #expect(throws: TakeProblem.noSpeech) { try Enrollment.check(steady) }
        #expect { try Enrollment.check(burst(seconds: 3, amplitude: 8000)) } throws: { error in
            guard case .speechTooLong(let s) = error as? TakeProblem else { return false }
            return abs(s - 3) < 0.02 && "\(error)".contains("longer than 2.5 s")
        }
        #expect { try Enrollment.check([Int16](repeating: 0, count: 16_000 * 11)) } throws: { error in
            guard case .recordingTooLong = error as? TakeProblem else { return false }
            return "\(error)".contains("at most 10 s")
        }
    }

    @Test func theSpeechSpanIsFoundByTheBlockRule() throws {
        let span = try Enrollment.check(burst(seconds: 0.6, amplitude: 8000))
        #expect(abs(span.lowerBound - 0.5) <= 0.01 && abs(span.upperBound - 1.1) <= 0.01, "\(span)")
    }

    @Test func aFormatOneModelCannotEnroll() throws {
        #expect { try Enrollment.take(burst(seconds: 0.6, amplitude: 8000), model: try Fixtures.model()) } throws: { error in
            "\(error)".contains("enrollment needs the speech-embedding model")
        }
    }
}

@Suite(.serialized, .ownThread) struct EnrollmentTests {
    /// Three takes of "hey kitchen" (two speeds, two voices); said again by a voice no take used, its templates'
    /// z is far above a different sentence's, and the fused detector wakes for it (by the templates alone:
    /// not the model's phrase) and not for the other sentence.
    @Test func theEnrolledPhraseSaidAgainScoresAboveOtherSpeech() throws {
        let model = try EmbeddingFixtures.model()
        let (bank, bankPath) = try HouseholdFixtures.bank()
        defer { try? FileManager.default.removeItem(atPath: bankPath) }
        var household = Household()
        for (voice, speed) in [("en-us", 160), ("en-us", 190), ("en-gb", 175)] {
            let take = try Enrollment.take(try HouseholdFixtures.say("hey kitchen", voice: voice, speed: speed), model: model)
            #expect((Enrollment.minFrames...Enrollment.maxFrames).contains(take.template.count))
            try household.add(take, phrase: "hey kitchen", bank: bank)
        }
        #expect(household.phrase("Hey Kitchen")?.templates.count == 3)
        let again = try HouseholdFixtures.say("hey kitchen", voice: "en-us+f3", speed: 170)
        let other = try HouseholdFixtures.say("please check the kettle", voice: "en-us+f3", speed: 170)
        let zAgain = HouseholdFixtures.bestZ(household, "hey kitchen", over: again, bank: bank, model: model)
        let zOther = HouseholdFixtures.bestZ(household, "hey kitchen", over: other, bank: bank, model: model)
        #expect(zAgain > zOther + 2, "again \(zAgain), other \(zOther)")

        let threshold = (zAgain + zOther) / 2
        func wakes(_ samples: [Int16]) throws -> [WakeDetection] {
            let detector = try FusedDetector(model: model, household: household, bank: bank, threshold: 1, zThreshold: threshold)
            var found: [WakeDetection] = []
            (samples + [Int16](repeating: 0, count: 16_000)).withUnsafeBufferPointer { all in
                var i = 0
                while i < all.count {
                    detector.process(UnsafeBufferPointer(rebasing: all[i..<min(i + 320, all.count)])) { found.append($0) }
                    i += 320
                }
            }
            return found
        }
        let heard = try wakes(again)
        #expect(heard.count == 1 && heard.first?.phrase == "hey kitchen" && heard.first?.personal == true, "\(heard)")
        #expect((heard.first?.score ?? 0) >= threshold)
        #expect(try wakes(other).isEmpty)

        // a take of another sentence is refused as unlike the others, at the bank's threshold
        let unlike = try Enrollment.take(other, model: model)
        #expect { try household.add(unlike, phrase: "hey kitchen", bank: bank) } throws: { error in
            guard case .unlikeTheOthers = error as? TakeProblem else { return false }
            return "\(error)".contains("unlike the other takes")
        }
    }

    /// "Unlike the others" compares a take with its own session's takes only: a later session (another person, say)
    /// is not refused for being unlike the household's earlier takes, and within it a take unlike its first is.
    @Test func unlikeTheOthersIsJudgedWithinOneSession() throws {
        let model = try EmbeddingFixtures.model()
        let (bank, bankPath) = try HouseholdFixtures.bank()
        defer { try? FileManager.default.removeItem(atPath: bankPath) }
        let kitchen = try Enrollment.take(try HouseholdFixtures.say("hey kitchen"), model: model)
        let kettle = try Enrollment.take(try HouseholdFixtures.say("please check the kettle", voice: "en-us+f3", speed: 170), model: model)
        var household = Household()
        try household.add(kitchen, phrase: "hey kitchen", bank: bank)
        // compared with everything (sessionStart 0), the second sentence is refused
        #expect(throws: TakeProblem.self) { var all = household; try all.add(kettle, phrase: "hey kitchen", bank: bank) }
        // a new session starts after the first take: not compared with it
        let start = household.templateCount("hey kitchen")
        #expect(start == 1)
        try household.add(kettle, phrase: "hey kitchen", bank: bank, sessionStart: start)
        // within that session, a take unlike its first is refused
        #expect { try household.add(kitchen, phrase: "hey kitchen", bank: bank, sessionStart: start) } throws: { error in
            guard case .unlikeTheOthers = error as? TakeProblem else { return false }
            return true
        }
        #expect(household.templateCount("hey kitchen") == 2)
        // takes already checked in their session are added unchecked (nil)
        try household.add(kitchen, phrase: "hey kitchen", bank: bank, sessionStart: nil)
        #expect(household.templateCount("hey kitchen") == 3)
    }

    /// Answered wakes (docs/household.md, "Answered wakes"): the frames the templates matched in a wake they heard
    /// become a learned template, cut out of the frames heard up to the wake by the DTW path's start; a wake the
    /// templates did not hear, or of a phrase never enrolled, teaches nothing; the newest four learned templates
    /// are kept beside the enrolled takes, which are never replaced; the flag survives a save, and a file
    /// without it reads as enrolled takes.
    @Test func anAnsweredWakeStrengthensTheEnrollment() throws {
        let model = try EmbeddingFixtures.model()
        let (bank, bankPath) = try HouseholdFixtures.bank()
        defer { try? FileManager.default.removeItem(atPath: bankPath) }
        var household = Household()
        for (voice, speed) in [("en-us", 160), ("en-us", 190), ("en-gb", 175)] {
            try household.add(try Enrollment.take(try HouseholdFixtures.say("hey kitchen", voice: voice, speed: speed), model: model),
                              phrase: "hey kitchen", bank: bank)
        }
        let again = try HouseholdFixtures.say("hey kitchen", voice: "en-us+f3", speed: 170)
        let other = try HouseholdFixtures.say("please check the kettle", voice: "en-us+f3", speed: 170)
        let zAgain = HouseholdFixtures.bestZ(household, "hey kitchen", over: again, bank: bank, model: model)
        let zOther = HouseholdFixtures.bestZ(household, "hey kitchen", over: other, bank: bank, model: model)
        let threshold = (zAgain + zOther) / 2

        // the wake, as the speaker hears it: the fused detector keeps the frames up to it and its phrase
        let detector = try FusedDetector(model: model, household: household, bank: bank, threshold: 1, zThreshold: threshold)
        var woke: [WakeDetection] = []
        again.withUnsafeBufferPointer { detector.process($0) { woke.append($0) } }
        #expect(woke.count == 1 && detector.phraseAtLastWake == "hey kitchen", "\(woke)")
        let heard = detector.framesAtLastWake
        #expect(!heard.isEmpty)

        var learning = household
        let kept = try learning.learn(from: heard, phrase: "Hey Kitchen", bank: bank, zThreshold: threshold)
        let templates = try #require(learning.phrase("hey kitchen")?.templates)
        #expect(templates.count == 4 && templates.prefix(3).allSatisfy { !$0.isLearned } && templates[3].isLearned)
        let learned = templates[3]
        // a contiguous run of the frames heard, shorter than all of them (the wake's frames begin before the phrase)
        #expect(learned.embeddings.count == kept && (Enrollment.minFrames...Enrollment.maxFrames).contains(kept))
        #expect(kept < heard.count, "kept \(kept) of \(heard.count)")
        let runs = (0...(heard.count - kept)).filter { Array(heard[$0..<($0 + kept)]) == learned.embeddings }
        #expect(runs.count == 1, "the learned frames are not a run of the frames heard")
        #expect(learned.bankSHA256 == bank.sha256 && learned.sd > 0)
        // the learned template alone hears the utterance it came from, and not the other sentence
        var alone = Household()
        alone.phrases = [Household.Phrase(text: "hey kitchen", templates: [learned])]
        #expect(HouseholdFixtures.bestZ(alone, "hey kitchen", over: again, bank: bank, model: model) >= threshold)
        #expect(HouseholdFixtures.bestZ(alone, "hey kitchen", over: other, bank: bank, model: model) < threshold)

        // what the templates did not hear, and a phrase never enrolled, teach nothing
        let otherFrames = HouseholdFixtures.frames(other, model: model)
        #expect { try learning.learn(from: Array(otherFrames.suffix(24)), phrase: "hey kitchen", bank: bank, zThreshold: threshold) } throws: { error in
            guard case .templatesDidNotHear = error as? Household.NotLearned else { return false }
            return "\(error)".contains("did not hear")
        }
        #expect(throws: Household.NotLearned.notEnrolled) { try learning.learn(from: heard, phrase: "OK Hound", bank: bank, zThreshold: threshold) }
        #expect(learning.phrase("hey kitchen")?.templates.count == 4)
        // only the takes cut what is learned: a wake that a learned template alone heard (here one made of the
        // other sentence, which hears itself at once) teaches nothing
        var drifted = household
        let wrong = Array(otherFrames.suffix(12))
        let (mu, sd) = try bank.measure(template: wrong)
        drifted.phrases[0].templates.append(Household.Template(embeddings: wrong, mu: mu, sd: sd, added: Date(),
                                                               bankSHA256: bank.sha256, learned: true))
        #expect(HouseholdFixtures.bestZ(drifted, "hey kitchen", over: other, bank: bank, model: model) >= threshold)
        #expect { try drifted.learn(from: Array(otherFrames.suffix(24)), phrase: "hey kitchen", bank: bank, zThreshold: threshold) } throws: { error in
            guard case .templatesDidNotHear = error as? Household.NotLearned else { return false }
            return true
        }
        #expect(drifted.phrase("hey kitchen")?.templates.count == 4)

        // bounded: the newest four learned, the three takes kept
        for i in 1...5 {
            try learning.learn(from: heard, phrase: "hey kitchen", bank: bank, zThreshold: threshold,
                               now: Date(timeIntervalSince1970: 1_790_000_000 + Double(i)))
        }
        let bounded = try #require(learning.phrase("hey kitchen")?.templates)
        #expect(bounded.count == 3 + Household.learnedKept && Household.learnedKept == 4)
        #expect(bounded.prefix(3) == household.phrase("hey kitchen")?.templates.prefix(3))
        #expect(bounded.suffix(4).map(\.added) == (2...5).map { Date(timeIntervalSince1970: 1_790_000_000 + Double($0)) })

        // saved and read back with the flag; a file written before it existed reads as takes
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hh-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try learning.save(path: "\(dir)/household.json")
        // (dates are kept to the second, so the templates are compared by what they hold)
        let loaded = try #require(try Household.load(path: "\(dir)/household.json")?.phrase("hey kitchen")?.templates)
        #expect(loaded.map(\.isLearned) == bounded.map(\.isLearned) && loaded.map(\.embeddings) == bounded.map(\.embeddings))
        let text = try String(contentsOfFile: "\(dir)/household.json", encoding: .utf8)
        #expect(text.components(separatedBy: "\"learned\":true").count - 1 == 4)
        try household.save(path: "\(dir)/household.json")
        #expect(try !String(contentsOfFile: "\(dir)/household.json", encoding: .utf8).contains("learned"))
        #expect(try Household.load(path: "\(dir)/household.json")?.phrase("hey kitchen")?.templates.contains { $0.isLearned } == false)
    }

    /// The frames the detector keeps at a wake (what the speaker keeps when that wake was false) raise the
    /// templates' thresholds above what the sound scores, so the same sound no longer wakes the speaker: the wake
    /// waited for its match's peak (FusedDetector.peakWaitSteps), so those frames hold it.
    @Test func aHouseholdNegativeRaisesTheThreshold() throws {
        let model = try EmbeddingFixtures.model()
        let (bank, bankPath) = try HouseholdFixtures.bank()
        defer { try? FileManager.default.removeItem(atPath: bankPath) }
        var household = Household()
        let take = try Enrollment.take(try HouseholdFixtures.say("hey kitchen"), model: model)
        try household.add(take, phrase: "hey kitchen", bank: bank)
        let samples = try HouseholdFixtures.say("hey kitchen", voice: "en-gb", speed: 160)
        func wakes(_ household: Household) throws -> (found: [WakeDetection], kept: [[Float]]) {
            let detector = try FusedDetector(model: model, household: household, bank: bank, threshold: 1, zThreshold: 1)
            var found: [WakeDetection] = []
            samples.withUnsafeBufferPointer { detector.process($0) { found.append($0) } }
            return (found, detector.framesAtLastWake)
        }
        let first = try wakes(household)
        #expect(first.found.count == 1)
        // the template's z over the sound: the wake came no earlier than where it first reached the threshold
        let frames = HouseholdFixtures.frames(samples, model: model)
        let t = household.phrases[0].templates[0]
        let dtw = SubsequenceDTW(template: bank.normalised(t.embeddings), dim: bank.dim)
        let normalised = bank.normalised(frames)
        let z = normalised.withUnsafeBufferPointer { f in
            (0..<frames.count).map { Household.z(score: dtw.push(f.baseAddress! + $0 * bank.dim), mu: t.mu, sd: t.sd) }
        }
        let crossing = try #require(z.firstIndex { $0 >= 1 })
        #expect(first.kept.count > crossing && first.kept.count <= crossing + 1 + FusedDetector.peakWaitSteps, "\(first.kept.count) \(crossing)")
        #expect(first.kept == Array(frames.prefix(first.kept.count)))
        household.addNegative(first.kept)
        #expect(household.negatives.first?.embeddings.count == min(24, 2 * take.template.count + 1, first.kept.count))
        let again = try wakes(household).found
        #expect(again.isEmpty, "\(z.map { (($0 * 100).rounded() / 100) }) crossing \(crossing) kept \(first.kept.count) \(first.found) again \(again)")
    }
}

@Suite(.serialized, .ownThread) struct FusionTests {
    func wakes(_ detector: FusedDetector, _ samples: [Int16]) -> [WakeDetection] { HouseholdFixtures.wakes(detector, samples) }

    /// For the model's own phrase (the test model's is "test") either detector wakes the speaker: the templates
    /// alone with the generic model held off; with the generic model at threshold 0 (it would fire on its first
    /// score, 2.022 s, and every step after) one refractory period of 2 s spaces all wakes, whichever woke it, and
    /// a generic wake while the templates' wake waits for its peak is the wake.
    @Test func theModelsPhraseWakesByEitherWithOneRefractoryPeriod() throws {
        let model = try EmbeddingFixtures.model()
        let (bank, bankPath) = try HouseholdFixtures.bank()
        defer { try? FileManager.default.removeItem(atPath: bankPath) }
        let household = try HouseholdFixtures.kitchen("Test", model: model, bank: bank)
        let stream = try HouseholdFixtures.say("hey kitchen", voice: "en-gb", speed: 160) + [Int16](repeating: 0, count: 64_000)

        let personal = wakes(try FusedDetector(model: model, household: household, bank: bank, threshold: 2, zThreshold: 1), stream)
        #expect(personal.count == 1 && personal.allSatisfy { $0.personal && $0.phrase == "Test" }, "\(personal)")

        let both = wakes(try FusedDetector(model: model, household: household, bank: bank, threshold: 0, zThreshold: 1,
                                           refractorySeconds: 2), stream)
        // the templates first hear it at 1.622 s and wait for their peak, after the generic model's first score
        // (2.022 s): that is the wake, and the generic model's every 2 s after it
        #expect(try #require(personal.first?.time) > 2.022, "\(personal)")
        #expect(both.first?.time == 2.022, "\(both)")
        #expect(both.allSatisfy { !$0.personal && $0.phrase == "test" } && both.count > 1, "\(both)")
        #expect(zip(both, both.dropFirst()).allSatisfy { $1.time - $0.time >= 2 - 1e-9 }, "\(both.map(\.time))")
        let generic = HotPhraseDetector(model: model, threshold: 0, refractorySeconds: 2)
        var alone: [HotPhraseDetection] = []
        stream.withUnsafeBufferPointer { generic.process($0) { alone.append($0) } }
        #expect(both.count >= alone.count, "fusion never hears less than the generic model alone")
    }

    /// A wake of the templates waits for its match's peak (at most `peakWaitSteps` steps); the stop phrase, the
    /// same takes under its name, does not: it is heard on the step its templates first reach the threshold.
    @Test func aPersonalWakeWaitsForItsPeakAndAStopDoesNot() throws {
        let model = try EmbeddingFixtures.model()
        let (bank, bankPath) = try HouseholdFixtures.bank()
        defer { try? FileManager.default.removeItem(atPath: bankPath) }
        let take = try Enrollment.take(try HouseholdFixtures.say("hey kitchen"), model: model)
        let stream = try HouseholdFixtures.say("hey kitchen", voice: "en-gb", speed: 160) + [Int16](repeating: 0, count: 16_000)
        func first(_ phrase: String) throws -> WakeDetection? {
            var household = Household()
            try household.add(take, phrase: phrase, bank: bank)
            let detector = try FusedDetector(model: model, household: household, bank: bank, threshold: 2, zThreshold: 1)
            detector.stopOver = .answer
            return wakes(detector, stream).first
        }
        let wake = try #require(try first("hey kitchen"))
        let stop = try #require(try first("stop"))
        #expect(stop.stop && !wake.stop)
        let step = model.stepSeconds
        let waited = ((wake.time - stop.time) / step).rounded()
        #expect(waited >= 1 && waited <= Double(FusedDetector.peakWaitSteps), "\(stop.time) \(wake.time)")
        #expect(wake.score > stop.score, "the wake reports its peak's z: \(wake.score) against \(stop.score)")
    }

    /// A file that ends while a personal wake waits for its peak: `finish` gives that wake, at the last step heard,
    /// once; without it nothing would come.
    @Test func aWakeStillWaitingWhenTheInputEndsComesAtFinish() throws {
        let model = try EmbeddingFixtures.model()
        let (bank, bankPath) = try HouseholdFixtures.bank()
        defer { try? FileManager.default.removeItem(atPath: bankPath) }
        let household = try HouseholdFixtures.kitchen("hey kitchen", model: model, bank: bank)
        let stream = try HouseholdFixtures.say("hey kitchen", voice: "en-gb", speed: 160) + [Int16](repeating: 0, count: 16_000)
        func detector() throws -> FusedDetector { try FusedDetector(model: model, household: household, bank: bank, threshold: 2, zThreshold: 1) }
        let whole = try #require(wakes(try detector(), stream).first)
        // cut two steps before that wake: its templates have crossed (it waited more than two steps) but not fired
        let cut = Array(stream.prefix(Int((whole.time - 2 * model.stepSeconds) * 16_000)))
        let early = try detector()
        #expect(wakes(early, cut).isEmpty)
        var finished: [WakeDetection] = []
        early.finish { finished.append($0) }
        #expect(finished.count == 1 && finished.first?.phrase == "hey kitchen", "\(finished)")
        #expect((finished.first?.time ?? 99) <= Double(cut.count) / 16_000)
        #expect(!early.framesAtLastWake.isEmpty)
        early.finish { finished.append($0) }
        #expect(finished.count == 1)
    }

    /// With templates of the model's phrase, a generic wake they score within 0.05 of a kept negative needs
    /// 1 - (1 - threshold) / 4: the frames the detector kept at a generic wake, kept as the speaker keeps a false
    /// wake, silence the same sound there. The templates' z is held out of reach (z 50), so neither they nor the
    /// negative heard as a sound (which needs the same z) can be what silences it; a sound that is not like it still
    /// wakes it (below).
    @Test func aKeptGenericWakeNoLongerWakesItThere() throws {
        let model = try EmbeddingFixtures.model()
        let (bank, bankPath) = try HouseholdFixtures.bank()
        defer { try? FileManager.default.removeItem(atPath: bankPath) }
        var household = try HouseholdFixtures.kitchen("Test", model: model, bank: bank)
        let stream = try HouseholdFixtures.say("what time is it") + [Int16](repeating: 0, count: 16_000)
        let probe = HotPhraseDetector(model: model, threshold: 0)
        var first: HotPhraseDetection?
        stream.withUnsafeBufferPointer { probe.process($0) { d in first = first ?? d } }
        let wake = try #require(first)
        let threshold = wake.score - 1e-4
        try #require(threshold < 0.99)
        func generic(_ household: Household) throws -> (wakes: [WakeDetection], kept: [[Float]]) {
            let detector = try FusedDetector(model: model, household: household, bank: bank, threshold: threshold, zThreshold: 50)
            return (wakes(detector, stream), detector.framesAtLastWake)
        }
        let before = try generic(household)
        #expect(before.wakes.first?.time == wake.time, "\(before.wakes)")
        household.addNegative(before.kept)
        #expect(household.negatives.count == 1)
        let after = try generic(household).wakes
        #expect(!after.contains { $0.time == wake.time }, "\(after)")
        household.negatives = []
        #expect(try generic(household).wakes.first?.time == wake.time, "without the negative it wakes there again")

        // another sound, which the generic model hears as much, is not like the negative: it still wakes it
        let other = try HouseholdFixtures.say("put the kettle on please", voice: "en-gb") + [Int16](repeating: 0, count: 16_000)
        let otherProbe = HotPhraseDetector(model: model, threshold: 0)
        var otherFirst: HotPhraseDetection?
        other.withUnsafeBufferPointer { otherProbe.process($0) { d in otherFirst = otherFirst ?? d } }
        let otherWake = try #require(otherFirst)
        household.addNegative(before.kept)
        let heard = wakes(try FusedDetector(model: model, household: household, bank: bank, threshold: otherWake.score - 1e-4, zThreshold: 50), other)
        #expect(heard.contains { $0.time == otherWake.time && !$0.personal }, "\(heard) against \(otherWake)")
    }

    /// A generic wake swallowed as like a kept negative leaves a wake of the templates that is waiting for its peak
    /// alone: the household's own phrase still wakes the speaker, by its templates, at their peak.
    @Test func aSwallowedGenericWakeDoesNotTakeTheTemplatesWakeWithIt() throws {
        let model = try EmbeddingFixtures.model()
        let (bank, bankPath) = try HouseholdFixtures.bank()
        defer { try? FileManager.default.removeItem(atPath: bankPath) }
        var household = try HouseholdFixtures.kitchen("Test", model: model, bank: bank)
        let stream = try HouseholdFixtures.say("hey kitchen", voice: "en-gb", speed: 160) + [Int16](repeating: 0, count: 64_000)
        // the generic model at 0 fires on its first score (2.022 s), while the templates' wake (from 1.622 s) waits
        func run(_ samples: [Int16]) throws -> (wakes: [WakeDetection], kept: [[Float]]) {
            let detector = try FusedDetector(model: model, household: household, bank: bank, threshold: 0, zThreshold: 1)
            return (wakes(detector, samples), detector.framesAtLastWake)
        }
        // up to just after the first wake, whose frames are the negative
        let before = try run(Array(stream.prefix(Int(2.1 * 16_000))))
        #expect(before.wakes.first.map { !$0.personal && $0.time == 2.022 } == true, "\(before.wakes)")
        // only its last 5 frames: heard as a sound there, and too short for the 11-frame template's path (which needs
        // at least 6), so the template's threshold stays where it was
        household.addNegative(Array(before.kept.suffix(5)))
        #expect(before.wakes.count == 1 && household.negatives.first?.embeddings.count == 5)
        let after = try run(stream).wakes
        #expect(!after.contains { !$0.personal && $0.time == 2.022 }, "the generic wake is swallowed: \(after)")
        let personal = try #require(after.first, "\(after)")
        #expect(personal.personal && personal.phrase == "Test" && personal.time > 2.022, "\(after)")
    }

    /// A kept generic wake is heard again as a sound on any offset of the 80 ms step grid (a television's rerun):
    /// the frames the detector kept at the wake, kept as the speaker keeps a false wake, silence the same sound
    /// shifted by 0-60 ms, for its refractory period (the steps after it, where the sound goes on, too); without
    /// the negative every one wakes it.
    @Test func aKeptGenericWakeNoLongerWakesItOnAnyOffset() throws {
        let model = try EmbeddingFixtures.model()
        let (bank, bankPath) = try HouseholdFixtures.bank()
        defer { try? FileManager.default.removeItem(atPath: bankPath) }
        var household = try HouseholdFixtures.kitchen("Test", model: model, bank: bank)
        let sound = try HouseholdFixtures.say("what time is it") + [Int16](repeating: 0, count: 16_000)
        let streams = [0, 160, 320, 640, 960].map { [Int16](repeating: 0, count: $0) + sound }
        func firstScore(_ stream: [Int16]) -> Double {
            let probe = HotPhraseDetector(model: model, threshold: 0)
            var first: HotPhraseDetection?
            stream.withUnsafeBufferPointer { probe.process($0) { d in first = first ?? d } }
            return first?.score ?? 1
        }
        let threshold = streams.map(firstScore).min()! - 1e-4
        try #require(threshold < 0.99)
        func generic(_ household: Household, _ stream: [Int16]) throws -> (wakes: [WakeDetection], kept: [[Float]]) {
            let detector = try FusedDetector(model: model, household: household, bank: bank, threshold: threshold)
            let found = wakes(detector, stream)
            return (found, detector.framesAtLastWake)
        }
        for stream in streams { #expect(try !generic(household, stream).wakes.isEmpty) }
        let first = try generic(household, streams[0])
        #expect(first.wakes.first?.personal == false, "\(first.wakes)")
        household.addNegative(first.kept)
        for (k, stream) in streams.enumerated() {
            let after = try generic(household, stream).wakes
            #expect(after.allSatisfy { $0.time > first.wakes[0].time + 1 }, "offset \(k): \(after) against \(first.wakes[0])")
        }
    }


    /// A generic wake whose frames match a kept household negative (no templates: by the mean distance of the
    /// newest frames) needs 1 - (1 - threshold) / 4: at a threshold just under the first score it no longer fires
    /// there, and still does without the negative.
    @Test func aHouseholdNegativeRaisesTheGenericThresholdWhereItWasHeard() throws {
        let model = try EmbeddingFixtures.model()
        let (bank, bankPath) = try HouseholdFixtures.bank()
        defer { try? FileManager.default.removeItem(atPath: bankPath) }
        let stream = try HouseholdFixtures.say("what time is it") + [Int16](repeating: 0, count: 16_000)
        let probe = HotPhraseDetector(model: model, threshold: 0)
        var first: HotPhraseDetection?
        var frames: [[Float]] = []
        stream.withUnsafeBufferPointer {
            probe.process($0, onFrame: { e, t in if t <= 32_352 { frames.append(Array(e)) } }) { d in first = first ?? d }
        }
        let wake = try #require(first)
        #expect(wake.time == 2.022 && wake.score < 0.99, "\(wake)")
        let threshold = wake.score - 1e-4
        func at(_ household: Household) throws -> [WakeDetection] {
            wakes(try FusedDetector(model: model, household: household, bank: bank, threshold: threshold), stream).filter { $0.time == wake.time }
        }
        var household = Household()
        #expect(try at(household).count == 1)
        household.addNegative(frames)
        #expect(household.negatives.first?.embeddings.count == frames.count)
        #expect(try at(household).isEmpty)
    }
}

@Suite(.ownThread) struct HouseholdFileTests {
    func sample() -> Household {
        var h = Household()
        let frame = (0..<96).map { Float($0) / 96 }
        h.phrases = [Household.Phrase(text: "OK Hound", templates: [
            Household.Template(embeddings: Array(repeating: frame, count: 5), mu: 0.7, sd: 0.05,
                               added: Date(timeIntervalSince1970: 1_790_000_000), bankSHA256: "ab")])]
        h.negatives = [Household.Negative(embeddings: [frame], added: Date(timeIntervalSince1970: 1_790_000_100))]
        return h
    }

    @Test func roundTripsWithMode0600() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hh-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = "\(dir)/household.json"
        #expect(try Household.load(path: path) == nil)
        try sample().save(path: path)
        #expect(try Household.load(path: path) == sample())
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
    }

    /// The household's false wakes: the newest 64 are kept, each its last frames (at most twice the longest
    /// template's and one more, a slower saying's path and the step after its peak), and they survive a save and a
    /// load.
    @Test func falseWakesAreBoundedToTheNewest64AndSaved() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hh-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = "\(dir)/household.json"
        var h = sample()  // its one template has 5 frames
        h.negatives = []
        for i in 0..<70 {
            h.addNegative((0..<30).map { k in [Float](repeating: Float(i * 100 + k), count: 96) },
                          now: Date(timeIntervalSince1970: 1_790_000_000 + Double(i)))
        }
        #expect(h.negatives.count == Household.negativesKept && Household.negativesKept == 64)
        #expect(h.negatives.first?.embeddings.map { $0[0] } == (619...629).map(Float.init))  // the 7th added, its last 2 x 5 + 1 frames
        #expect(h.negatives.last?.embeddings.map { $0[0] } == (6919...6929).map(Float.init))
        try h.save(path: path)
        #expect(try Household.load(path: path) == h)
    }

    @Test func aDamagedFileIsNamed() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hh-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = "\(dir)/household.json"
        try sample().save(path: path)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: path))
        #expect { try Household.load(path: path) } throws: { error in
            "\(error)".hasPrefix("household file \(path): is damaged")
        }
        // valid JSON, but a template of 2 frames
        var small = sample()
        small.phrases[0].templates[0].embeddings.removeLast(3)
        try small.save(path: path)
        #expect { try Household.load(path: path) } throws: { error in "\(error)".contains("template 1 of \"OK Hound\" has 2 frames, not 4-24") }
    }

    /// The fused detector refuses what it cannot score: templates with a format-1 model (no embedding), and
    /// embeddings of another size than the bank's.
    @Test func theFusedDetectorRefusesWhatItCannotScore() throws {
        let (bank, bankPath) = try HouseholdFixtures.bank()
        defer { try? FileManager.default.removeItem(atPath: bankPath) }
        #expect { try FusedDetector(model: try Fixtures.model(), household: sample(), bank: bank) } throws: { error in
            "\(error)".contains("enrollment needs the speech-embedding model")
        }
        #expect(throws: Never.self) { try FusedDetector(model: try Fixtures.model(), household: Household(), bank: bank) }
        var other = sample()
        other.negatives[0].embeddings = [[1, 2, 3]]
        #expect { try FusedDetector(model: try EmbeddingFixtures.model(), household: other, bank: bank) } throws: { error in
            "\(error)".contains("not 96 numbers each")
        }
    }

    @Test func aNewBankMeasuresTheTemplatesAgain() throws {
        let (bank, bankPath) = try HouseholdFixtures.bank()
        defer { try? FileManager.default.removeItem(atPath: bankPath) }
        var h = sample()
        #expect(try h.remeasure(bank: bank))
        let t = h.phrases[0].templates[0]
        #expect(t.bankSHA256 == bank.sha256 && t.bankSHA256.count == 64)
        #expect(t.mu != 0.7 && t.sd > 0)
        #expect(try !h.remeasure(bank: bank))
    }
}

@Suite(.ownThread) struct NegativeBankTests {
    @Test func loadsAndHashesTheFile() throws {
        let (bank, path) = try HouseholdFixtures.bank(zThreshold: 4.5)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(bank.segments.count == HouseholdFixtures.bankSentences.count)
        #expect(bank.zThreshold == 4.5 && bank.dim == 96 && bank.mean.count == 96)
        #expect(bank.sources.first?.licence == "GPL-3.0")
        // sha256sum's answer for the same bytes
        let sha = Process()
        sha.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        sha.arguments = [path]
        let out = Pipe()
        sha.standardOutput = out
        try sha.run()
        sha.waitUntilExit()
        #expect(String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).hasPrefix(bank.sha256))
        #expect(abs(bank.zThreshold(sensitivity: 0.6) - 4.1) < 1e-9 && abs(bank.zThreshold(sensitivity: 0) - 6.5) < 1e-9)
    }

    @Test func badFilesAreNamedWithTheProblem() throws {
        #expect { try NegativeBank.load(path: "/nonexistent/bank.hpm") } throws: { "\($0)" == "negative bank /nonexistent/bank.hpm: no such file" }
        #expect { try NegativeBank.load(path: EmbeddingFixtures.modelPath) } throws: { error in
            "\(error)".hasPrefix("negative bank \(EmbeddingFixtures.modelPath): is format 2") }
        let good = try HouseholdFixtures.bankBytes([[[Float](repeating: 0.5, count: 96)]], zThreshold: 3)
        #expect { try NegativeBank(bytes: Array(good.dropLast(8)), path: "b.hpm") } throws: { "\($0)".contains("truncated") }
        #expect { try NegativeBank(bytes: Array("JUNKJUNK".utf8), path: "b.hpm") } throws: { "\($0)".contains("not a negative bank") }
    }
}
