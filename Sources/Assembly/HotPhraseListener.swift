import FoundationEssentials
import Glibc
import Platform
import Synchronization
public import Audio
public import AudioCore
public import HotPhrase
public import Logging
public import SpeakerCore
public import Control
public import ControlCore

/// The "OK Hound" detector as the capture router uses it: `hear` on the capture thread (it reads only the echo
/// canceller), `process` and `reset` on the router's detector thread, one at a time (`HotPhraseDetecting`). So the
/// running detector's state is touched by that one thread only, and it runs holding no lock: `lock` guards only
/// which detector runs, the household beside it and what the latest wake left (its score and frames), so that
/// the loop and the status never wait for a frame being heard.
///
/// With a household (docs/household.md) it runs the FusedDetector: the generic model and the household's
/// templates; otherwise the generic HotPhraseDetector alone. A change to the household (a false wake kept,
/// `ctl forget`, `enroll` while running) measures the new household on a thread of its own, under `changing`, and
/// leaves the result (a `Plan`, plain values) in `lock`: the detector's thread never waits for a file or a DTW over
/// the negatives; it finishes the frame it is on with the old detector and makes the new one from the plan before
/// the next (buffers only).
public final class HotPhraseListener: HotPhraseDetecting, Sendable {
    /// The detector that runs. Not Sendable: it is made and used only on the thread that processes
    /// (HotPhraseDetecting's contract), inside `running`, and never leaves it.
    private enum Detector {
        case generic(HotPhraseDetector)
        case fused(FusedDetector)
    }

    /// Which detector to run, as plain values: measured off the detector's thread, made into a Detector on it.
    private enum Plan: Sendable {
        case generic
        case fused(FusedDetector.Plan)
    }

    /// The detector's thread's own: the detector and the samples it hears (copied in: what it hears stays its
    /// own). Only that thread takes this lock, so it never waits on it; the loop and the status use `lock`.
    private struct Running {
        var detector: Detector
        var heard: [Int16]
        /// The stop word for everyone (StopWord), beside either detector on its embedding frames; nil without
        /// its file or with a format-1 model.
        var stop: StopWord?
    }

    /// The detector to make next, the household beside it and what the latest wake left.
    private struct LoopFacing {
        /// Left by a household change, taken by the detector's thread before its next frame.
        var next: Plan?
        /// Whether the household's personal scorer runs (the plan last left is a fused one).
        var personal = false
        /// The household as the detector runs it (swapped with the plan: status never waits for a change
        /// being built).
        var household = Household()
        var score = 0.0
        /// The household detector's frames up to the latest wake (`FusedDetector.framesAtLastWake`), copied on the
        /// detector's thread as the wake is found, for `keepFalseWake`, and its phrase, for `keepAnsweredWake`.
        var wakeFrames: [[Float]] = []
        var wakePhrase: String?
        /// The wake whose question was answered (`holdAnsweredWake`), waiting for its answer to be heard to the end.
        var answered: (frames: [[Float]], phrase: String)?
    }

    private let lock: Mutex<LoopFacing>
    private let running: Mutex<Running>
    public let threshold: Double
    /// The threshold over the speaker's own sound (barge-in, `[hotphrase] barge_in_sensitivity`).
    public let bargeInThreshold: Double
    /// The household's z thresholds at the two sensitivities (the bank's; 0 without a household, never read then).
    private let zThreshold: Double
    private let bargeInZThreshold: Double
    /// The echo canceller the frames come through, if any: while it says an echo may still be in a frame (the
    /// room's reverberation after the speaker stopped), the barge-in threshold holds.
    private let echo: EchoCanceller?
    /// What `process(_:over:)` hears a frame in (made once, as long as the longest capture frame); the
    /// capture router has buffers of its own.
    private let filtered = Mutex([Int16](repeating: 0, count: EchoCanceller.maxFrame))

    private let model: HotPhraseModel
    private let settings: HotPhraseSettings
    /// Where the household lives and the bank it is scored against; nil: the generic detector only, for good.
    private let voices: HouseholdSource?
    /// Held while the household is changed and its detector built (never by the capture or the detector's thread).
    private let changing = Mutex(())
    /// Household changes waiting for the one thread that makes them, and whether it runs.
    private struct Changes {
        struct Change {
            var what: String
            /// nil: read the file again (a reload).
            var edit: (@Sendable (inout Household) throws -> Void)?
            var done: [@Sendable (Result<Household, HouseholdError>) -> Void]
        }
        var pending: [Change] = []
        var working = false
    }
    private let changes = Mutex(Changes())
    /// More changes waiting than this and the next is refused, in words: a local process sending them without end
    /// gets refusals, not threads or memory.
    public static let changesWaitingLimit = 64
    /// Why the household's file could not be used at start (nil: it could, or there is none); for `describe`.
    private let unusableAtStart: String?
    private let logger: Logger?
    /// A spoken enrollment's takes accepted so far (not saved), and the household they were checked against (the
    /// file as it was at the first take, with them added).
    private struct Enrolling {
        /// The session's accepted takes: their samples (for its personal head, trained once they are saved; never
        /// written anywhere) and what `Enrollment.take` made of them.
        var takes: [(samples: [Int16], take: EnrolledTake)] = []
        var trial: Household?
        /// Counts the sessions' ends (a save or a discard): a check still running when its session ended keeps nothing.
        var generation = 0
    }
    private let enrolling = Mutex(Enrolling())

    /// Where the household's file is and the negative bank its templates are measured against.
    public struct HouseholdSource: Sendable {
        public let path: String
        public let bank: NegativeBank
        public init(path: String, bank: NegativeBank) {
            self.path = path
            self.bank = bank
        }
    }

    /// The generic detector only.
    public convenience init(model: HotPhraseModel, settings: HotPhraseSettings, echo: EchoCanceller? = nil, stopWord: HotPhraseModel? = nil) {
        self.init(model: model, settings: settings, echo: echo, household: nil, logger: nil, stopWord: stopWord)
    }

    /// Whether the stop word for everyone is listened for (its file loaded and its embedding the model's), and
    /// why not when it is not; for the start's log line.
    public let stopWordStatus: String

    /// With `household` (the model format 2, the bank loaded), the household's file is read now: with takes, the
    /// FusedDetector runs; without, or unreadable (said in the log), the generic one until a reload finds takes.
    /// `stopWord`: the stop word's model file (StopWord), heard over the speaker's own sound beside the household's
    /// stop phrase; nil: none.
    public init(model: HotPhraseModel, settings: HotPhraseSettings, echo: EchoCanceller?, household source: HouseholdSource?, logger: Logger?,
                stopWord: HotPhraseModel? = nil) {
        threshold = HotPhraseDetector.threshold(sensitivity: settings.sensitivity, model: model)
        bargeInThreshold = HotPhraseDetector.threshold(sensitivity: settings.bargeInSensitivity, model: model)
        self.echo = echo
        self.model = model
        self.settings = settings
        self.logger = logger
        voices = source.flatMap { model.hasEmbeddings ? $0 : nil }
        zThreshold = voices?.bank.zThreshold(sensitivity: settings.sensitivity) ?? 0
        bargeInZThreshold = voices?.bank.zThreshold(sensitivity: settings.bargeInSensitivity) ?? 0
        lock = Mutex(LoopFacing())
        var stop: StopWord? = nil
        if !settings.stopWord {
            stopWordStatus = "no stop word for everyone ([hotphrase] stop_word = false; the household's enrolled stop phrase still works)"
        } else if stopWord != nil && !model.hasEmbeddings {
            // A format-1 hot-phrase model chosen on purpose (a slow board's): no embedding to ride on, not a fault.
            stopWordStatus = "no stop word for everyone (the hot-phrase model \(model.path) is format 1: the stop word needs its speech embedding)"
        } else if let stopWord {
            do {
                stop = try StopWord(model: stopWord, generic: model)
                let ring = stopWord.ringThreshold.map { ", over a ring \(String(cFormat: "%.4f", $0))" } ?? ""
                stopWordStatus = "the stop word \"\(stopWord.phrase)\" for everyone (model \(stopWord.path), threshold \(String(cFormat: "%.4f", stopWord.defaultThreshold))\(ring))"
            } catch {
                logger?.error("\(error): no stop word for everyone (the household's enrolled stop phrase still works)")
                stopWordStatus = "no stop word for everyone (\(error))"
            }
        } else {
            stopWordStatus = "no stop word for everyone (no stop.hpm)"
        }
        running = Mutex(Running(detector: .generic(HotPhraseDetector(model: model, threshold: threshold, refractorySeconds: settings.refractorySeconds)),
                                heard: Array(repeating: 0, count: EchoCanceller.maxFrame), stop: stop))
        let atStart = voices.map { Self.read($0, logger: logger) }
        unusableAtStart = atStart?.problem
        if let atStart { changing.withLock { _ in _ = install(atStart.0) } }
    }

    /// The household in the file (remeasured against the bank if it changed, and saved so); an empty one when
    /// there is none or it cannot be used (said in the log: the file is left as it is).
    private static func read(_ voices: HouseholdSource, logger: Logger?) -> (Household, problem: String?) {
        do {
            guard try Household.load(path: voices.path) != nil else { return (Household(), nil) }
            let household = try Household.update(path: voices.path, bank: voices.bank) { _ in }
            try household.check(dim: voices.bank.dim)
            return (household, nil)
        } catch {
            logger?.error("\(error): the hot phrase is listened for by the generic model alone")
            return (Household(), "\(error)")
        }
    }

    /// Measures `household` for the detector and leaves the plan for the detector's thread (the caller holds
    /// `changing`); returns the reason the generic detector runs instead, nil when the household's does.
    @discardableResult
    private func install(_ next: Household) -> String? {
        guard let voices else { return "no household" }
        guard next.phrases.contains(where: { !$0.templates.isEmpty }) else {
            swap(.generic, next)
            return "the household has no takes yet (hound-speaker enroll)"
        }
        do {
            swap(.fused(try FusedDetector.Plan(model: model, household: next, bank: voices.bank)), next)
            return nil
        } catch {
            logger?.error("\(error): the hot phrase is listened for by the generic model alone")
            swap(.generic, next)
            return "\(error)"
        }
    }

    private func swap(_ next: Plan, _ household: Household) {
        lock.withLock {
            $0.next = next
            if case .fused = next { $0.personal = true } else { $0.personal = false }
            $0.household = household
        }
    }

    /// The detector for `plan`, on the detector's thread: buffers only, the DTWs were run when it was planned.
    private func detector(for plan: Plan) -> Detector {
        switch plan {
        case .generic:
            .generic(HotPhraseDetector(model: model, threshold: threshold, refractorySeconds: settings.refractorySeconds))
        case .fused(let measured):
            .fused(FusedDetector(model: model, plan: measured, threshold: threshold, zThreshold: zThreshold,
                                 refractorySeconds: settings.refractorySeconds))
        }
    }

    /// Which detector runs and why: said once in the log at start.
    public var describe: String {
        guard voices != nil else {
            return model.hasEmbeddings ? "the generic model (no negative bank)" : "the generic model (the model is format 1: no speech embedding for the household's voices)"
        }
        let phrases = currentHousehold.phrases.filter { !$0.templates.isEmpty }
        guard personalActive else {
            if let unusableAtStart, phrases.isEmpty {
                return "the generic model alone (the household's file could not be used: \(unusableAtStart))"
            }
            return phrases.isEmpty ? "the generic model alone (the household has no takes yet: hound-speaker enroll)"
                                   : "the generic model alone (the household's file could not be used: see the error above)"
        }
        return "the generic model and the household's voices (" + phrases.map { p in
            "\"\(p.text)\": \(p.templates.count) take\(p.templates.count == 1 ? "" : "s")"
                + (p.headCount > 0 ? ", " + PersonalHead.counted(p.headCount) : "")
        }.joined(separator: ", ") + ")"
    }

    /// Whether the household's personal scorer runs.
    public var personalActive: Bool {
        lock.withLock { $0.personal }
    }

    /// The household as the detector runs it (for status).
    public var currentHousehold: Household { lock.withLock { $0.household } }

    /// What the detector hears of a frame that came through `echo`: the adaptive filter's output, without the
    /// residual suppressor (`EchoCanceller.hotPhraseFrame`); else the frame itself. True while the canceller says
    /// an echo may be in it. Read at the frame's capture, since the canceller has moved on by the time the
    /// detector's thread hears it.
    public func hear(_ frame: UnsafeBufferPointer<Int16>, into heard: UnsafeMutableBufferPointer<Int16>) -> Bool {
        if echo?.hotPhraseFrame(for: frame, into: heard) != true { _ = heard.update(fromContentsOf: frame) }
        return echo?.echoActive == true
    }

    public func process(_ frame: UnsafeBufferPointer<Int16>, over: OwnSound, echoing: Bool) -> HotPhraseHit? {
        let next = lock.withLock { $0.next.take() }
        let ownSound = over != .none || echoing
        // The stop word and the household's stop phrase count only while the speaker itself rings or speaks, not
        // in its echo's tail.
        let stopOver: StopWord.Over? = switch over {
        case .none: nil
        case .answer: .answer
        case .ring: .ring
        }
        let heard = running.withLock { r -> (hit: HotPhraseHit, score: Double, wake: (frames: [[Float]], phrase: String?)?)? in
            if let next {
                r.detector = detector(for: next)
                r.stop?.reset()  // a new detector's frames start afresh
                if case .fused(let d) = r.detector { d.stopWord = r.stop }
            }
            var hit: HotPhraseHit? = nil
            var detected = 0.0
            var start = 0
            while start < frame.count {
                // Copied sample by sample into the thread's own buffer (a frame is at most one such buffer).
                let count = min(frame.count - start, r.heard.count)
                for i in 0..<count { r.heard[i] = frame[start + i] }
                start += count
                r.heard.withUnsafeBufferPointer { buffer in
                    let samples = UnsafeBufferPointer(rebasing: buffer[0..<count])
                    switch r.detector {
                    case .generic(let d):
                        d.threshold = ownSound ? bargeInThreshold : threshold
                        let stop = r.stop
                        d.process(samples, onFrame: { e, sample in
                            if let stop, stop.push(e, sample: sample, over: stopOver) {
                                hit = .stop
                                detected = stop.score
                            }
                        }, onDetection: { detection in
                            guard hit != .stop else { return }  // a stop wins over a wake in the same frame
                            hit = .wake
                            detected = detection.score
                        })
                    case .fused(let d):
                        d.threshold = ownSound ? bargeInThreshold : threshold
                        d.zThreshold = ownSound ? bargeInZThreshold : zThreshold
                        d.stopOver = stopOver
                        d.process(samples) { detection in
                            hit = detection.stop ? .stop : .wake
                            detected = detection.score
                        }
                    }
                }
            }
            guard let hit else { return nil }
            // Copied now, on the thread that owns the detector's state (the loop asks for them later).
            let wake: (frames: [[Float]], phrase: String?)? = if case .fused(let d) = r.detector, hit == .wake {
                (d.framesAtLastWake, d.phraseAtLastWake)
            } else { nil }
            return (hit, detected, wake)
        }
        guard let heard else { return nil }
        lock.withLock {
            $0.score = heard.score
            if let wake = heard.wake { ($0.wakeFrames, $0.wakePhrase) = wake }
        }
        return heard.hit
    }

    /// `hear` and `process` in one, for a caller that feeds frames itself, one at a time (a test, a tool).
    public func process(_ frame: UnsafeBufferPointer<Int16>, over: OwnSound) -> HotPhraseHit? {
        guard frame.count <= EchoCanceller.maxFrame else { return process(frame, over: over, echoing: echo?.echoActive == true) }
        return filtered.withLock { filtered in
            filtered.withUnsafeMutableBufferPointer { buffer in
                let heard = UnsafeMutableBufferPointer(rebasing: buffer[0..<frame.count])
                let echoing = hear(frame, into: heard)
                return process(UnsafeBufferPointer(heard), over: over, echoing: echoing)
            }
        }
    }

    public func reset() {
        running.withLock { r in
            r.stop?.reset()
            switch r.detector {
            case .generic(let d): d.reset()
            case .fused(let d): d.reset()
            }
        }
    }

    /// The score of the latest detection (for the log line).
    public var lastDetectionScore: Double {
        lock.withLock { $0.score }
    }

    /// The latest wake was false (SpeakerCore's `FalseWake`): its frames become a household negative, saved and
    /// applied at once, on a thread of this listener's (the loop never waits for the file). Nothing without the
    /// household's detector (the generic one has no frames to keep).
    public func keepFalseWake() {
        let frames: [[Float]] = lock.withLock {
            guard $0.personal else { return [] }
            return $0.wakeFrames
        }
        guard !frames.isEmpty, voices != nil else { return }
        change("a false wake kept as a household negative") { $0.addNegative(frames) }
    }

    /// The latest wake's question was answered (SpeakerCore's `holdAnsweredWake`): its frames and phrase are set
    /// aside as they are now, so a wake heard while the answer plays cannot take their place. Nothing without the
    /// household's detector.
    public func holdAnsweredWake() {
        lock.withLock {
            guard $0.personal, let phrase = $0.wakePhrase, !$0.wakeFrames.isEmpty else { $0.answered = nil; return }
            $0.answered = ($0.wakeFrames, phrase)
        }
    }

    /// The answer to the wake set aside was heard to the end (SpeakerCore's `answeredWake`): where the household's
    /// templates heard that wake's phrase themselves, the frames they matched become a learned template
    /// (Household.learn), saved and applied at once on a thread of this listener's. Nothing when no wake is set
    /// aside (each is taken once), without the household's detector, with `[hotphrase] learn_from_answers` off, or
    /// for the stop phrase.
    public func keepAnsweredWake() {
        let answered = lock.withLock { facing in
            defer { facing.answered = nil }
            return facing.answered
        }
        guard settings.learnFromAnswers, let voices, let (frames, phrase) = answered else { return }
        guard !Household.isStopPhrase(phrase) else { return }
        let zThreshold = zThreshold, logger = logger
        change("an answered wake of \"\(phrase)\" learned", { household in
            do {
                try household.learn(from: frames, phrase: phrase, bank: voices.bank, zThreshold: zThreshold)
            } catch let why as Household.NotLearned {
                logger?.info("an answered wake of \"\(phrase)\" not learned: \(why)")
            }
        })
    }

    /// Changes the household as its file holds it now (`enroll` may have written it since), saves it atomically
    /// (nothing changed: not written) and swaps in its detector; `done` gets the household as it now runs, or why
    /// not. `edit` nil: only read the file again, which is refused (and the running household kept) when the file
    /// cannot be used. One thread makes the changes, in order, one at a time: a reload waiting behind another is one
    /// with it, and past `changesWaitingLimit` waiting a change is refused.
    public func change(_ what: String, _ edit: (@Sendable (inout Household) throws -> Void)?,
                       done: (@Sendable (Result<Household, HouseholdError>) -> Void)? = nil) {
        guard let voices else {
            done?(.failure(HouseholdError(file: "household file", path: "", problem:
                "not used by this speaker: its model has no speech embedding (format 1) or the negative bank is missing (see the log at start)")))
            return
        }
        let waiters = done.map { [$0] } ?? []
        enum Queued { case joined, queued, start, refused }
        let queued: Queued = changes.withLock { queue in
            if edit == nil, let last = queue.pending.indices.last, queue.pending[last].edit == nil {
                queue.pending[last].done += waiters  // the reload waiting reads the file as this one would
                return .joined
            }
            guard queue.pending.count < Self.changesWaitingLimit else { return .refused }
            queue.pending.append(Changes.Change(what: what, edit: edit, done: waiters))
            if queue.working { return .queued }
            queue.working = true
            return .start
        }
        switch queued {
        case .joined, .queued:
            break
        case .refused:
            logger?.warning("\(what): refused, \(Self.changesWaitingLimit) household changes are waiting")
            done?(.failure(HouseholdError(file: "household", path: "", problem:
                "is busy: \(Self.changesWaitingLimit) changes are waiting; try again in a moment")))
        case .start:
            if let problem = OwnedThread.tryStart(name: "hs-household", { [self] in makeChanges(voices) }) {
                // The system refused the thread: every change waiting is refused with its reason, none is lost silently.
                let refused = changes.withLock { queue in
                    defer { queue.pending = []; queue.working = false }
                    return queue.pending
                }
                logger?.error("household changes: \(problem)")
                let failure = HouseholdError(file: "household", path: "", problem: "could not be changed: \(problem)")
                for change in refused { for waiter in change.done { waiter(.failure(failure)) } }
            }
        }
    }

    /// The household thread: the changes waiting, in order, until there are none (then it ends).
    private func makeChanges(_ voices: HouseholdSource) {
        while let next = changes.withLock({ queue -> Changes.Change? in
            guard !queue.pending.isEmpty else {
                queue.working = false
                return nil
            }
            return queue.pending.removeFirst()
        }) {
            let result = changing.withLock { _ in make(next, voices) }
            for waiter in next.done { waiter(result) }
        }
    }

    private func make(_ change: Changes.Change, _ voices: HouseholdSource) -> Result<Household, HouseholdError> {
        do {
            // Read, changed and written under the file's lock: `enroll` may change it too, and neither writes over
            // the other's change.
            let (next, changed): (Household, Bool) = try AtomicFile.whileLocked(voices.path) {
                var next = try Household.load(path: voices.path) ?? Household()
                if let edit = change.edit {
                    let before = next
                    try edit(&next)
                    let changed = next != before
                    if changed { try next.save(path: voices.path) }
                    // A change is kept even where the detector cannot use the result (install falls back to the
                    // generic model): a forget must leave nothing of the voice, in the file or in the detector.
                    _ = install(next)
                    return (next, changed)
                }
                let remeasured = try next.remeasure(bank: voices.bank)
                // A reload of a file the detector cannot use is refused, and the running household kept.
                let plan = try plan(next, voices)
                if remeasured { try next.save(path: voices.path) }
                swap(plan, next)
                return (next, true)
            }
            // An edit that changed nothing (an answered wake not learned) is not news.
            if changed { logger?.notice("\(change.what): listening with \(describeLocked); \(next.negatives.count) household negative\(next.negatives.count == 1 ? "" : "s")") }
            return .success(next)
        } catch {
            let problem = error as? HouseholdError ?? HouseholdError(file: "household file", path: voices.path, problem: "\(error)")
            logger?.error("\(change.what): \(problem)")
            return .failure(problem)
        }
    }

    /// The detector's plan for `household`, or why it cannot be used (as a reload refuses it).
    private func plan(_ household: Household, _ voices: HouseholdSource) throws(HouseholdError) -> Plan {
        guard household.phrases.contains(where: { !$0.templates.isEmpty }) else { return .generic }
        do {
            return .fused(try FusedDetector.Plan(model: model, household: household, bank: voices.bank))
        } catch {
            throw HouseholdError(file: "household file", path: voices.path, problem:
                "cannot be used by this speaker's model and bank (\(error)); the speaker keeps the household it ran")
        }
    }

    private var describeLocked: String {
        let phrases = currentHousehold.phrases.filter { !$0.templates.isEmpty }
        return phrases.isEmpty ? "the generic model" : "the generic model and " + phrases.map { p in
            "\"\(p.text)\"" + (p.headCount > 0 ? " (" + PersonalHead.counted(p.headCount) + ")" : "")
        }.joined(separator: ", ")
    }

    /// Whether the household's part can run at all (format-2 model and a bank).
    public var hasHousehold: Bool { voices != nil }
}

extension HotPhraseListener: ControlledHousehold {
    public var householdSummary: HouseholdSummary {
        let (household, active) = lock.withLock { ($0.household, $0.personal) }
        return HouseholdSummary(phrases: household.phrases.filter { !$0.templates.isEmpty }.map { p in
            HouseholdSummary.Phrase(text: p.text, takes: p.templates.filter { !$0.isLearned }.map { $0.added.formatted(.iso8601) },
                                    learned: p.templates.count { $0.isLearned }, heads: p.headCount)
        }, negatives: household.negatives.count, personalActive: active)
    }

    public func apply(_ change: HouseholdChange) async -> Result<HouseholdSummary, ControlCommand.Problem> {
        let result: Result<Household, HouseholdError> = await withCheckedContinuation { continuation in
            let done: @Sendable (Result<Household, HouseholdError>) -> Void = { continuation.resume(returning: $0) }
            switch change {
            case .reload:
                self.change("household reloaded", nil, done: done)
            case .forgetNegatives:
                self.change("household negatives forgotten", { $0.negatives = [] }, done: done)
            case .forget(let text):
                self.change("\"\(text)\" forgotten", { household in
                    guard let i = household.phrases.firstIndex(where: { Household.same($0.text, text) }) else {
                        let known = household.phrases.map { "\"\($0.text)\"" }
                        throw HouseholdError(file: "household", path: "", problem:
                            "has no phrase \"\(text)\" (enrolled: \(known.isEmpty ? "none" : known.joined(separator: ", ")); ctl voices lists them)")
                    }
                    household.phrases.remove(at: i)
                }, done: done)
            }
        }
        switch result {
        case .success: return .success(householdSummary)
        case .failure(let error): return .failure(ControlCommand.Problem(error.path.isEmpty ? "\(error.file) \(error.problem)" : error.description))
        }
    }
}

/// The spoken enrollment's checks and save (`ctl enroll`, SpeakerCore's `EnrollmentSession`): each take checked
/// as `hound-speaker enroll` checks a recording, on a thread of its own; the accepted ones held until the session
/// saves them into household.json, which the detector then runs with at once.
extension HotPhraseListener: EnrollmentPort {
    public var defaultPhrase: String { model.phrase }

    public var unavailable: String? {
        guard voices == nil else { return nil }
        return model.hasEmbeddings
            ? "this speaker cannot learn voices: the negative bank or the household folder is missing (the log at start says which)"
            : "this speaker cannot learn voices: \(Enrollment.needsEmbedding(model).description)"
    }

    public func check(_ take: [Int16], phrase: String, done: @escaping @Sendable (Result<Void, TakeCheckFailure>) -> Void) {
        guard let voices else { return done(.failure(.failed(unavailable ?? ""))) }
        let generation = enrolling.withLock { $0.generation }
        let refused = OwnedThread.tryStart(name: "hs-enroll") { [self] in
            let enrolled: EnrolledTake
            do { enrolled = try Enrollment.take(take, model: model) } catch let problem as TakeProblem {
                return done(.failure(.refused(TakeRefusal(problem))))
            } catch {
                return done(.failure(.failed("\(error)")))
            }
            do {
                var trial = try enrolling.withLock { $0.trial } ?? Household.loadMeasured(path: voices.path, bank: voices.bank)
                // "Unlike the others" against this session's takes only: the household's earlier ones may be
                // other people's. The session's takes are the last ones of the trial household.
                let sessionStart = trial.templateCount(phrase) - enrolling.withLock { $0.takes.count }
                try trial.add(enrolled, phrase: phrase, bank: voices.bank, sessionStart: sessionStart)
                enrolling.withLock {
                    guard $0.generation == generation else { return }
                    $0.trial = trial
                    $0.takes.append((take, enrolled))
                }
                done(.success(()))
            } catch let problem as TakeProblem {
                done(.failure(.refused(TakeRefusal(problem))))
            } catch {
                done(.failure(.failed("\(error)")))
            }
        }
        // The system refused the thread: the take could not be checked, which ends the session keeping nothing.
        if let refused { done(.failure(.failed(refused))) }
    }

    public func save(phrase: String, done: @escaping @Sendable (String?) -> Void) {
        let takes = enrolling.withLock { session -> [(samples: [Int16], take: EnrolledTake)] in
            defer { session = Enrolling(generation: session.generation + 1) }
            return session.takes
        }
        guard let bank = voices?.bank else { return done(unavailable ?? "") }
        change("\(takes.count) takes of \"\(phrase)\" enrolled", { household in
            // Added as `enroll` adds them, to the file as it is now (a false wake may have been kept meanwhile).
            // Checked against each other in their session already (check above).
            for take in takes { try household.add(take.take, phrase: phrase, bank: bank, sessionStart: nil) }
        }, done: { [self] result in
            switch result {
            case .success:
                done(nil)
                trainHead(takes: takes, phrase: phrase, bank: bank)
            case .failure(let problem): done(problem.description)
            }
        })
    }

    /// The saved session's personal head (HeadTraining: espeak-ng's babble on the speech thread, the fit on a
    /// thread of its own), added to the household when trained and listened with at once; the templates listen
    /// meanwhile. A head that cannot be trained or kept is said in the log.
    private func trainHead(takes: [(samples: [Int16], take: EnrolledTake)], phrase: String, bank: NegativeBank) {
        guard takes.count >= PersonalHead.minimumTakes else {
            logger?.info("no personal head for \"\(phrase)\": \(takes.count) takes in the session, a head needs \(PersonalHead.minimumTakes)")
            return
        }
        let model = model, logger = logger
        Task { [self] in
            let head: PersonalHead
            do throws(HeadTraining.Failure) { head = try await HeadTraining.train(takes: takes, model: model, bank: bank) } catch {
                logger?.error("\"\(phrase)\": \(error); its templates listen alone")
                return
            }
            change("a personal head of \"\(phrase)\" trained on \(takes.count) takes", { household in
                do {
                    try household.addHead(head, phrase: phrase, takes: takes.count, bank: bank)
                } catch Household.NotLearned.notEnrolled {
                    logger?.info("\(PersonalHead.forgotten(phrase))")
                }
            })
        }
    }

    public func discard() {
        enrolling.withLock { $0 = Enrolling(generation: $0.generation + 1) }
    }
}
