import Audio
import AudioCore
import Control
import ControlCore
import Foundation
import HotPhrase
import JSONKit
import Assembly
import SpeakerCore
import Synchronization
import Platform
import Testing
import TestSupport

/// The household inside the running speaker (issue #37, part 3), with real parts: the speech-embedding test
/// model, the parity fixture's takes, stream and negative bank (Tests/HotPhraseTests/Fixtures/household), and
/// household.json in a temporary folder.
@Suite(.ownThread) struct HouseholdListenerTests {
    static let fixtures = repositoryRoot + "/Tests/HotPhraseTests/Fixtures/household"

    func hits(_ listener: HotPhraseListener, _ samples: [Int16], over: OwnSound = .none, kind: HotPhraseHit = .wake) -> Int {
        listener.reset()
        var count = 0
        for start in stride(from: 0, to: samples.count - 319, by: 320) {
            samples[start..<start + 320].withUnsafeBufferPointer { if listener.process($0, over: over) == kind { count += 1 } }
        }
        return count
    }

    /// Waits (up to 10 s) for the listener's own thread to finish a change.
    func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<1000 where !condition() { usleep(10_000) }
        return condition()
    }

    /// The test model, and a household.json in a fresh folder (the caller removes it) holding the fixture's three
    /// takes as `phrase`, scored against the fixture's bank.
    func enrolled(_ phrase: String) throws -> (HotPhraseModel, HotPhraseListener.HouseholdSource) {
        let model = try HotPhraseModel.load(path: repositoryRoot + "/Tests/HotPhraseTests/Fixtures/embedding/test.hpm")
        let bank = try NegativeBank.load(path: Self.fixtures + "/bank.hpm")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hs-household-\(UUID().uuidString)").path
        var household = Household()
        for k in 1...3 {
            let take = try AudioFile.readMono(path: Self.fixtures + "/take-\(k).wav", targetRate: 16_000).samples
            try household.add(try Enrollment.take(take, model: model), phrase: phrase, bank: bank)
        }
        try household.save(path: dir + "/household.json")
        return (model, HotPhraseListener.HouseholdSource(path: dir + "/household.json", bank: bank))
    }

    /// A household with a personal head: the start log and the summary count it, and `forget` removes it with
    /// the phrase's takes.
    @Test func theListenerSaysItsHeadsAndForgetsThemWithTheirPhrase() async throws {
        let (model, source) = try enrolled("OK Hound")
        defer { try? FileManager.default.removeItem(atPath: (source.path as NSString).deletingLastPathComponent) }
        var household = try #require(try Household.load(path: source.path))
        var positives = WindowRows(width: PersonalHead.window * source.bank.dim)
        for k in 1...3 {
            let take = try AudioFile.readMono(path: Self.fixtures + "/take-\(k).wav", targetRate: 16_000).samples
            positives.append(contentsOf: PersonalHead.positives(of: try Enrollment.take(take, model: model), bank: source.bank))
        }
        let head = try PersonalHead.fit(positives: positives, negatives: PersonalHead.negatives(bank: source.bank))
        try household.addHead(head, phrase: "OK Hound", takes: 3, bank: source.bank)
        try household.save(path: source.path)
        let listener = HotPhraseListener(model: model, settings: HotPhraseSettings(sensitivity: 0), echo: nil, household: source, logger: nil)
        #expect(listener.describe == "the generic model and the household's voices (\"OK Hound\": 3 takes, 1 personal head)")
        #expect(listener.householdSummary.phrases.first?.heads == 1)
        #expect(listener.householdSummary.json()["phrases"]?.arrayValue?.first?["heads"]?.int64Value == 1)
        guard case .success(let after) = await listener.apply(.forget("ok hound")) else { Issue.record("forget failed"); return }
        #expect(after.phrases.isEmpty)
        #expect(try Household.load(path: source.path)?.phrases.isEmpty == true)
    }

    @Test func theListenerRunsTheHouseholdKeepsItsFalseWakesAndForgets() async throws {
        let model = try HotPhraseModel.load(path: repositoryRoot + "/Tests/HotPhraseTests/Fixtures/embedding/test.hpm")
        let bank = try NegativeBank.load(path: Self.fixtures + "/bank.hpm")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hs-household-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/household.json"
        let source = HotPhraseListener.HouseholdSource(path: path, bank: bank)
        // The generic model held off (sensitivity 0: the test model's random head never reaches its threshold).
        let settings = HotPhraseSettings(sensitivity: 0)
        let stream = try AudioFile.readMono(path: Self.fixtures + "/stream.wav", targetRate: 16_000).samples

        // No household file yet: the generic detector, which does not hear the phrase.
        let empty = HotPhraseListener(model: model, settings: settings, echo: nil, household: source, logger: nil)
        #expect(!empty.personalActive && empty.householdSummary.phrases.isEmpty)
        #expect(empty.describe.contains("no takes yet"))
        #expect(hits(empty, stream) == 0)

        var household = Household()
        for k in 1...3 {
            let take = try AudioFile.readMono(path: Self.fixtures + "/take-\(k).wav", targetRate: 16_000).samples
            try household.add(try Enrollment.take(take, model: model), phrase: "OK Hound", bank: bank)
        }
        try household.save(path: path)
        // Told to read the file again (as `enroll` does through the control API): the household's scorer runs.
        guard case .success(let reloaded) = await empty.apply(.reload) else { Issue.record("reload failed"); return }
        #expect(reloaded == HouseholdSummary(phrases: [.init(text: "OK Hound", takes: reloaded.phrases.first?.takes ?? [])],
                                             negatives: 0, personalActive: true))
        #expect(reloaded.phrases.first?.takes.count == 3)
        #expect(hits(empty, stream) == 1)

        // A listener started with the file runs it at once; the wake it hears, kept as a false wake, is saved
        // and applied at once: the same sound no longer wakes it (the wake waited for its match's peak, so the
        // negative holds it; docs/household.md).
        let listener = HotPhraseListener(model: model, settings: settings, echo: nil, household: source, logger: nil)
        #expect(listener.personalActive)
        #expect(listener.describe == "the generic model and the household's voices (\"OK Hound\": 3 takes)")
        #expect(hits(listener, stream) == 1)
        let before = listener.lastDetectionScore
        listener.reset()  // as the earcon that ends the wake does, before the loop says it was false
        listener.keepFalseWake()
        #expect(eventually { listener.householdSummary.negatives == 1 })
        let saved = try #require(try Household.load(path: path))
        #expect(saved.negatives.count == 1)
        let longest = saved.phrases.flatMap(\.templates).map(\.embeddings.count).max() ?? 0
        // the frames it heard up to the wake (22 here: the stream is short), at most min(24, 2 x longest + 1)
        #expect((longest...min(24, 2 * longest + 1)).contains(saved.negatives.first?.embeddings.count ?? 0), "\(saved.negatives.first?.embeddings.count ?? 0)")
        #expect(hits(listener, stream) == 0)

        // Forgetting: an unknown phrase is refused by name; the negatives, then the phrase.
        guard case .failure(let problem) = await listener.apply(.forget("hey kitchen")) else { Issue.record("forgot a phrase never enrolled"); return }
        #expect(problem.description.contains("has no phrase \"hey kitchen\" (enrolled: \"OK Hound\""), "\(problem)")
        guard case .success(let noNegatives) = await listener.apply(.forgetNegatives) else { Issue.record("forget negatives failed"); return }
        #expect(noNegatives.negatives == 0 && noNegatives.personalActive)
        #expect(try Household.load(path: path)?.negatives.isEmpty == true)
        #expect(hits(listener, stream) == 1)
        #expect(listener.lastDetectionScore == before)
        guard case .success(let forgotten) = await listener.apply(.forget("ok hound")) else { Issue.record("forget failed"); return }
        #expect(forgotten == HouseholdSummary(phrases: [], negatives: 0, personalActive: false))
        #expect(try Household.load(path: path)?.phrases.isEmpty == true)
        #expect(hits(listener, stream) == 0)
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
    }

    /// An answered wake (set aside by the loop's `holdAnsweredWake`, learned at its `keepAnsweredWake`) that the
    /// templates heard becomes a learned template, saved 0600 and counted in the summary beside the takes; with
    /// `learn_from_answers` off nothing is kept, nor without a wake set aside, and each is learned once.
    @Test func anAnsweredWakeIsLearnedUnlessTurnedOff() async throws {
        let (model, source) = try enrolled("OK Hound")
        defer { try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: source.path).deletingLastPathComponent().path) }
        let path = source.path
        let stream = try AudioFile.readMono(path: Self.fixtures + "/stream.wav", targetRate: 16_000).samples
        var off = HotPhraseSettings(sensitivity: 0)
        off.learnFromAnswers = false
        let quiet = HotPhraseListener(model: model, settings: off, echo: nil, household: source, logger: nil)
        #expect(hits(quiet, stream) == 1)
        quiet.holdAnsweredWake()
        quiet.keepAnsweredWake()
        // a change that would have been made is on another thread: a reload after it reads the file as it is
        guard case .success(let unchanged) = await quiet.apply(.reload) else { Issue.record("reload failed"); return }
        #expect(unchanged.phrases.first?.learned == 0 && unchanged.phrases.first?.takes.count == 3)

        let listener = HotPhraseListener(model: model, settings: HotPhraseSettings(sensitivity: 0), echo: nil, household: source, logger: nil)
        listener.holdAnsweredWake()  // no wake yet: nothing set aside
        #expect(hits(listener, stream) == 1)
        listener.keepAnsweredWake()  // a wake, but none set aside: nothing to learn
        guard case .success(let notYet) = await listener.apply(.reload) else { Issue.record("reload failed"); return }
        #expect(notYet.phrases.first?.learned == 0)
        listener.holdAnsweredWake()
        listener.keepAnsweredWake()
        listener.keepAnsweredWake()  // taken once: this one learns nothing more
        #expect(eventually { listener.householdSummary.phrases.first?.learned == 1 })
        guard case .success(let once) = await listener.apply(.reload) else { Issue.record("reload failed"); return }
        #expect(once.phrases.first?.learned == 1)
        #expect(listener.householdSummary.phrases.first?.takes.count == 3)
        let saved = try #require(try Household.load(path: path)?.phrase("OK Hound")?.templates)
        #expect(saved.map(\.isLearned) == [false, false, false, true])
        #expect(listener.householdSummary.json()["phrases"]?[0]?["learned"]?.int64Value == 1)
        #expect(hits(listener, stream) == 1)
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
    }

    /// The household's stop phrase: the same takes enrolled as "stop" are heard as a stop, and only over the
    /// speaker's own sound (while it rings or speaks); never as a wake.
    @Test func theStopPhraseCountsOnlyOverTheSpeakersOwnSound() throws {
        let (model, source) = try enrolled("Stop")
        defer { try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: source.path).deletingLastPathComponent().path) }
        // The generic model held off, and the barge-in sensitivity the same as the other, so that only the
        // speaker's own sound (not a different threshold) tells the two runs apart.
        var settings = HotPhraseSettings(sensitivity: 0)
        settings.bargeInSensitivity = 0
        let listener = HotPhraseListener(model: model, settings: settings, echo: nil,
                                         household: source, logger: nil)
        #expect(listener.personalActive)
        let stream = try AudioFile.readMono(path: Self.fixtures + "/stream.wav", targetRate: 16_000).samples
        #expect(hits(listener, stream, over: .none, kind: .stop) == 0)
        #expect(hits(listener, stream, over: .none, kind: .wake) == 0)
        #expect(hits(listener, stream, over: .answer, kind: .stop) == 1)
        #expect(hits(listener, stream, over: .answer, kind: .wake) == 0)
        #expect(hits(listener, stream, over: .ring, kind: .stop) == 1)
    }

    /// A format-1 model: the generic detector only, and a change is refused with the reason.
    @Test func aFormatOneModelRunsTheGenericDetectorOnly() async throws {
        let model = try HotPhraseModel.load(path: repositoryRoot + "/Tests/HotPhraseTests/Fixtures/ok-hound-v9.hpm")
        try #require(!model.hasEmbeddings)
        let bank = try NegativeBank.load(path: Self.fixtures + "/bank.hpm")
        let listener = HotPhraseListener(model: model, settings: HotPhraseSettings(), echo: nil,
                                         household: .init(path: "/nonexistent/household.json", bank: bank), logger: nil)
        #expect(!listener.personalActive && !listener.hasHousehold)
        #expect(listener.describe.contains("format 1"))
        guard case .failure(let problem) = await listener.apply(.forgetNegatives) else { Issue.record("a change was taken"); return }
        #expect(problem.description.contains("format 1"), "\(problem)")
    }

    /// A household file that is damaged at start: the generic detector, the start line says why (not "no takes
    /// yet"), and the file is left as it was for the owner to look at.
    @Test func aDamagedHouseholdFileIsNamedAndKept() throws {
        let model = try HotPhraseModel.load(path: repositoryRoot + "/Tests/HotPhraseTests/Fixtures/embedding/test.hpm")
        let bank = try NegativeBank.load(path: Self.fixtures + "/bank.hpm")
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hs-household-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/household.json"
        let damaged = Data("{\"phrases\": [".utf8)
        try damaged.write(to: URL(fileURLWithPath: path))
        let listener = HotPhraseListener(model: model, settings: HotPhraseSettings(), echo: nil,
                                         household: .init(path: path, bank: bank), logger: nil)
        #expect(!listener.personalActive)
        #expect(listener.describe.contains("could not be used") && listener.describe.contains("household.json"), "\(listener.describe)")
        #expect(!listener.describe.contains("no takes yet"))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == damaged)
    }

    /// A household file the model and bank cannot use (its embeddings one number short) reloaded: refused with the
    /// reason, and the speaker keeps listening with the household it ran.
    @Test func aReloadOfAnUnusableHouseholdIsRefusedAndTheRunningOneKept() async throws {
        let (model, source) = try enrolled("OK Hound")
        defer { try? FileManager.default.removeItem(atPath: (source.path as NSString).deletingLastPathComponent) }
        let listener = HotPhraseListener(model: model, settings: HotPhraseSettings(sensitivity: 0), echo: nil, household: source, logger: nil)
        #expect(listener.personalActive)
        var other = try #require(try Household.load(path: source.path))
        for p in other.phrases.indices {
            for t in other.phrases[p].templates.indices {
                other.phrases[p].templates[t].embeddings = other.phrases[p].templates[t].embeddings.map { Array($0.dropLast()) }
            }
        }
        other.phrases[0].text = "hey kitchen"
        try other.save(path: source.path)
        guard case .failure(let problem) = await listener.apply(.reload) else { Issue.record("an unusable household was taken"); return }
        #expect(problem.description.contains("cannot be used"), "\(problem)")
        #expect(problem.description.contains("keeps the household it ran"), "\(problem)")
        #expect(listener.personalActive)
        #expect(listener.householdSummary.phrases.map(\.text) == ["OK Hound"])
    }

    /// Thousands of household changes at once (a local process on the control API): one thread makes them, the
    /// ones past the waiting limit are refused in words, every asker hears back, and a forget is applied.
    @Test func aBurstOfHouseholdChangesTakesOneThreadAndAnswersEveryAsker() async throws {
        let (model, source) = try enrolled("OK Hound")
        defer { try? FileManager.default.removeItem(atPath: (source.path as NSString).deletingLastPathComponent) }
        let listener = HotPhraseListener(model: model, settings: HotPhraseSettings(sensitivity: 0), echo: nil, household: source, logger: nil)
        // The household threads by name: the test process runs other suites' threads meanwhile, as many as it likes.
        func threads() -> Int {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
            return tasks.filter { (try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8)) == "hs-household\n" }.count
        }
        let before = threads()
        let answers = Mutex<[Result<Household, HouseholdError>]>([])
        var most = before
        for k in 0..<3000 {
            let done: @Sendable (Result<Household, HouseholdError>) -> Void = { result in answers.withLock { $0.append(result) } }
            if k == 1500 {
                listener.change("forget", { household in household.phrases.removeAll { Household.same($0.text, "ok hound") } }, done: done)
            } else {
                listener.change("reload", nil, done: done)
            }
            if k % 100 == 0 { most = max(most, threads()) }
        }
        #expect(eventually { answers.withLock { $0.count } == 3000 })
        // Other tests' listeners may be changing their households too: a few, never one a change.
        #expect(most <= before + 4, "\(before) household threads before, \(most) at most")
        let refusals = answers.withLock { $0.compactMap { if case .failure(let e) = $0 { e.problem } else { nil } } }
        #expect(refusals.allSatisfy { $0.contains("changes are waiting") }, "\(Set(refusals))")
        #expect(eventually { listener.householdSummary.phrases.isEmpty })
        #expect(try Household.load(path: source.path)?.phrases.isEmpty == true)
    }

    @Test func aPhrasesWordsAreAPersonsWords() throws {
        #expect(PhraseText.problem("hey kitchen") == nil)
        #expect(PhraseText.problem("  ") != nil)
        #expect(PhraseText.problem("hey\u{0}kitchen")?.contains("U+0") == true)
        #expect(PhraseText.problem("hey \u{202E}nehctik")?.contains("U+202E") == true)
        #expect(PhraseText.problem(String(repeating: "a", count: 101)) != nil)
        let (model, source) = try enrolled("OK Hound")
        defer { try? FileManager.default.removeItem(atPath: (source.path as NSString).deletingLastPathComponent) }
        var household = try #require(try Household.load(path: source.path))
        let take = try Enrollment.take(try AudioFile.readMono(path: Self.fixtures + "/take-1.wav", targetRate: 16_000).samples, model: model)
        #expect(throws: HouseholdError.self) { try household.add(take, phrase: "hey\u{2066}kitchen", bank: source.bank) }
        household.phrases[0].text = "OK\u{1B}Hound"
        try household.save(path: source.path)
        #expect(throws: HouseholdError.self) { try Household.load(path: source.path) }
    }

    /// The speaker and `enroll` both change household.json: each change is made to the file as it is then, under
    /// its lock, so a forget made while `enroll` ran stays forgotten and `enroll`'s takes are kept beside it.
    @Test func aForgetIsFinalAndAKeptTakeKeptWhateverWritesBesideIt() async throws {
        let (model, source) = try enrolled("OK Hound")
        defer { try? FileManager.default.removeItem(atPath: (source.path as NSString).deletingLastPathComponent) }
        let listener = HotPhraseListener(model: model, settings: HotPhraseSettings(sensitivity: 0), echo: nil, household: source, logger: nil)
        // `enroll` starts: it reads the file (with "OK Hound") to check its takes against.
        let atStart = try #require(try Household.load(path: source.path))
        #expect(atStart.phrases.map(\.text) == ["OK Hound"])
        // Meanwhile the owner forgets "OK Hound" on the running speaker.
        guard case .success(let forgotten) = await listener.apply(.forget("ok hound")) else { Issue.record("forget failed"); return }
        #expect(forgotten.phrases.isEmpty)
        // `enroll` keeps its take of another phrase: to the file as it is now.
        let take = try Enrollment.take(try AudioFile.readMono(path: Self.fixtures + "/take-1.wav", targetRate: 16_000).samples, model: model)
        try Household.update(path: source.path, bank: source.bank) { try $0.add(take, phrase: "hey kitchen", bank: source.bank, sessionStart: nil) }
        #expect(try Household.load(path: source.path)?.phrases.map(\.text) == ["hey kitchen"])
        // Told to read it again, the speaker hears the new phrase, and the forgotten one is not back.
        guard case .success(let reloaded) = await listener.apply(.reload) else { Issue.record("reload failed"); return }
        #expect(reloaded.phrases.map(\.text) == ["hey kitchen"])
    }

    /// Writers at once, in threads of their own: not one change is lost (each is made to the file as the one before
    /// left it, under the file's lock).
    @Test func writersAtOnceLoseNoChange() throws {
        let (_, source) = try enrolled("OK Hound")
        defer { try? FileManager.default.removeItem(atPath: (source.path as NSString).deletingLastPathComponent) }
        let frames: [[Float]] = Array(repeating: Array(repeating: 0.5, count: source.bank.dim), count: 8)
        let failures = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 40) { _ in
            do { try Household.update(path: source.path, bank: nil) { $0.addNegative(frames) } } catch { failures.withLock { $0 += 1 } }
        }
        #expect(failures.withLock { $0 } == 0)
        #expect(try Household.load(path: source.path)?.negatives.count == 40)
    }

    /// Every number in household.json is checked at load: a template's mean and spread over the bank in their
    /// range (a damaged digit there once doubled the wakes). (JSON holds no NaN or infinity to damage them with.)
    @Test func aDamagedNumberInTheHouseholdIsRefusedAtLoad() throws {
        let (_, source) = try enrolled("OK Hound")
        defer { try? FileManager.default.removeItem(atPath: (source.path as NSString).deletingLastPathComponent) }
        let good = try #require(try Household.load(path: source.path))
        let template = try #require(good.phrases.first?.templates.first)
        #expect((0...2).contains(template.mu) && template.sd > 0 && template.sd <= 1, "the fixture's own are in range")
        let damages: [(String, (inout Household) -> Void)] = [
            ("mu 6.2", { $0.phrases[0].templates[0].mu = 6.2 }),
            ("mu -0.1", { $0.phrases[0].templates[0].mu = -0.1 }),
            ("sd 0", { $0.phrases[0].templates[0].sd = 0 }),
            ("sd 3", { $0.phrases[0].templates[0].sd = 3 }),
        ]
        for (what, damage) in damages {
            var household = good
            damage(&household)
            try household.save(path: source.path)
            #expect(throws: HouseholdError.self, "\(what)") { try Household.load(path: source.path) }
        }
    }
}
