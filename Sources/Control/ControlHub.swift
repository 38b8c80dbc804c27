import BoardCore
public import ControlCore
public import JSONKit
public import SpeakerCore
import Synchronization
import Timers

/// The household's voices as the control API shows them (docs/household.md): each enrolled phrase with when its
/// takes were added, how many false wakes are kept, and whether the personal scorer runs.
public struct HouseholdSummary: Sendable, Equatable {
    public struct Phrase: Sendable, Equatable {
        public var text: String
        /// When each enrolled take was added (ISO 8601), oldest first.
        public var takes: [String]
        /// Templates learned from answered wakes (Household.learn), beside the takes.
        public var learned: Int
        /// Personal heads (one a session of three takes or more; docs/household.md, "The personal head").
        public var heads: Int
        public init(text: String, takes: [String], learned: Int = 0, heads: Int = 0) {
            self.text = text
            self.takes = takes
            self.learned = learned
            self.heads = heads
        }
    }

    public var phrases: [Phrase]
    public var negatives: Int
    public var personalActive: Bool

    public init(phrases: [Phrase], negatives: Int, personalActive: Bool) {
        self.phrases = phrases
        self.negatives = negatives
        self.personalActive = personalActive
    }

    /// In the status: the counts. `withTakes` (the `voices` reply): each take's date too.
    public func json(withTakes: Bool = false) -> JSONValue {
        .object([
            "phrases": .array(phrases.map { p in
                var o: [String: JSONValue] = ["text": .string(p.text), "takes": .int(Int64(p.takes.count)),
                                              "learned": .int(Int64(p.learned)), "heads": .int(Int64(p.heads))]
                if withTakes { o["added"] = .array(p.takes.map { .string($0) }) }
                return .object(o)
            }),
            "negatives": .int(Int64(negatives)), "personal_active": .bool(personalActive),
        ])
    }
}

/// What the control API may change of the household.
public enum HouseholdChange: Sendable, Equatable {
    /// One phrase's takes.
    case forget(String)
    /// The household's false wakes.
    case forgetNegatives
    /// Read the file again.
    case reload
}

/// The running speaker's household (the hot-phrase listener): its summary, and changes that apply at once.
public protocol ControlledHousehold: AnyObject, Sendable {
    var householdSummary: HouseholdSummary { get }
    /// Carries out `change` (saved and applied); the household after it, or why not, in words for a person.
    func apply(_ change: HouseholdChange) async -> Result<HouseholdSummary, ControlCommand.Problem>
}

/// One connected client of the event stream (a WebSocket).
public protocol ControlSubscriber: AnyObject, Sendable {
    /// Hands one JSON line over without waiting for it to be sent; false when the client is too far behind to
    /// keep (it has then been closed).
    func deliver(_ line: String) -> Bool
    /// Closes the client, telling it why (a WebSocket close code and reason).
    func close(code: UInt16, reason: String)
    /// The client is on this machine (the kiosk's screen): it is shown setup mode's code.
    var onThisMachine: Bool { get }
}

extension ControlSubscriber {
    public var onThisMachine: Bool { false }
}

/// Between the speaker and the control API's clients: every activity goes out to every client as one JSON line
/// (the same line as `run --events json`), a client that connects first gets a snapshot, and commands go to the
/// speaker's loop. Nothing here waits on a client: the loop calls `publish`, which only hands lines over.
public final class ControlHub: Sendable {
    struct State {
        /// Setup mode (issue #64): where to go and the code, while the speaker has no credentials.
        var setup: (@Sendable () -> (address: String, code: String)?)?
        var speaker: (any ControlledSpeaker)?
        /// Nil: no hot phrase, so no household to show.
        var household: (any ControlledHousehold)?
        var subscribers: [ObjectIdentifier: any ControlSubscriber] = [:]
        /// When each client was last heard from (connected, or sent a command), on `tick`: when the hub is full, the
        /// one silent the longest makes room for a newcomer.
        var lastHeard: [ObjectIdentifier: Int] = [:]
        var tick = 0
        /// Typed questions waited for, by their number: until the question is taken (`asked`) or until its end.
        var waiters: [Int: (untilEnd: Bool, continuation: CheckedContinuation<SpeakerActivity.QuestionReport?, Never>)] = [:]
        /// The next typed question's number (0 is nobody's: `SpeakerEvent.textQuery`).
        var nextQuestion = 1
        /// Questions numbered whose wait has not registered yet; one taken out before it registers was cancelled.
        var unregistered: Set<Int> = []
        var dropped = 0
    }

    private let state = Mutex(State())

    /// At most this many WebSocket clients at once, by default: a kiosk screen, a few phones and a home
    /// automation need far fewer. Each may queue at most ControlServer.largestBacklog, so together they hold
    /// a bounded amount of memory (60 clients that never read once took 73 MB, issue #34).
    public static let defaultLargestSubscriberCount = 32
    /// The limit this hub keeps.
    public let largestSubscriberCount: Int

    public init(largestSubscriberCount: Int = ControlHub.defaultLargestSubscriberCount) {
        self.largestSubscriberCount = largestSubscriberCount
    }

    /// What `subscribe` did.
    public enum Subscription: Sendable, Equatable {
        /// Handed the snapshot; every activity follows.
        case subscribed
        /// Subscribed in the place of the client silent the longest, which has been closed: `largestSubscriberCount`
        /// were connected. A process holding every place cannot keep a new screen (or phone) out.
        case replacedSilentClient
        /// Too far behind already to take the snapshot (it has been closed).
        case dropped
    }

    /// The speaker, once its loop exists (it is made after the hub, which is one of its observers).
    public func attach(_ speaker: any ControlledSpeaker) { state.withLock { $0.speaker = speaker } }

    /// The household's voices (when the speaker listens for the hot phrase).
    public func attach(household: any ControlledHousehold) { state.withLock { $0.household = household } }

    /// How many clients are connected now.
    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }
    /// How many clients were dropped for not keeping up.
    public var droppedCount: Int { state.withLock { $0.dropped } }

    /// The loop's observer: hands the event to every client. (What the snapshot shows of it, the loop's snapshot
    /// holds: the loop records each activity there before its observers hear of it.)
    public func publish(_ activity: SpeakerActivity) {
        let line = activity.json
        let waiter = state.withLock { s -> (CheckedContinuation<SpeakerActivity.QuestionReport?, Never>, SpeakerActivity.QuestionReport)? in
            Self.deliver(line, in: &s)
            // Each question's reply is made of its own reports only: another's answer is not its answer.
            guard case .question(let report) = activity, let waiter = s.waiters[report.id], report.isEnd || !waiter.untilEnd else {
                return nil
            }
            s.waiters[report.id] = nil
            return (waiter.continuation, report)
        }
        if let (continuation, report) = waiter { continuation.resume(returning: report) }
    }

    /// Setup mode began after the start (Houndify refused the key): where to go, and the code to the clients on
    /// this machine only, as in the snapshot.
    public func setupStarted() {
        state.withLock { s in
            guard let setup = s.setup?() else { return }
            Self.deliver(in: &s) { subscriber in
                JSONValue.asciiJSON(orderedMembers: [("event", "setup")] + Self.setupMembers(setup, onThisMachine: subscriber.onThisMachine))
            }
        }
    }

    /// Setup mode has ended (the credentials saved): every client is told `{"event":"setup","setup_mode":false}`.
    public func setupEnded() {
        let line = JSONValue.asciiJSON(orderedMembers: [("event", "setup"), ("setup_mode", false)])
        state.withLock { Self.deliver(line, in: &$0) }
    }

    /// `line` to every client; one too far behind to keep has been closed, and goes.
    private static func deliver(_ line: String, in s: inout State) {
        deliver(in: &s) { _ in line }
    }

    /// Each client its own line (`line(subscriber)`).
    private static func deliver(in s: inout State, _ line: (any ControlSubscriber) -> String) {
        for (id, subscriber) in s.subscribers where !subscriber.deliver(line(subscriber)) {
            s.subscribers[id] = nil
            s.lastHeard[id] = nil
            s.dropped += 1
        }
    }

    /// Adds a client: it is handed the snapshot, then every activity after it, in order (the snapshot is handed
    /// over under the same lock as the activities, so none falls between the two).
    @discardableResult
    public func subscribe(_ subscriber: any ControlSubscriber) -> Subscription {
        let (subscription, evicted) = state.withLock { s -> (Subscription, (any ControlSubscriber)?) in
            var evicted: (any ControlSubscriber)? = nil
            if s.subscribers.count >= largestSubscriberCount, let silent = s.lastHeard.min(by: { $0.value < $1.value })?.key {
                evicted = s.subscribers.removeValue(forKey: silent)
                s.lastHeard[silent] = nil
            }
            guard subscriber.deliver(JSONValue.asciiJSON(orderedMembers: Self.snapshot(s, onThisMachine: subscriber.onThisMachine))) else { return (.dropped, evicted) }
            let id = ObjectIdentifier(subscriber)
            s.subscribers[id] = subscriber
            s.tick += 1
            s.lastHeard[id] = s.tick
            return (evicted == nil ? .subscribed : .replacedSilentClient, evicted)
        }
        // Closed outside the lock: closing may call back (unsubscribe) on this thread.
        evicted?.close(code: 1013, reason: "replaced by a newer client (\(largestSubscriberCount) at most)")
        return subscription
    }

    /// `subscriber` sent a command: it is the last to make room for a newcomer.
    public func heard(from subscriber: any ControlSubscriber) {
        state.withLock { s in
            let id = ObjectIdentifier(subscriber)
            guard s.subscribers[id] != nil else { return }
            s.tick += 1
            s.lastHeard[id] = s.tick
        }
    }

    public func unsubscribe(_ subscriber: any ControlSubscriber) {
        state.withLock { s in
            s.subscribers.removeValue(forKey: ObjectIdentifier(subscriber))
            s.lastHeard.removeValue(forKey: ObjectIdentifier(subscriber))
        }
    }

    /// Setup mode's address and code while the speaker has none of Houndify's credentials (nil: set up).
    public func attach(setup: @escaping @Sendable () -> (address: String, code: String)?) {
        state.withLock { $0.setup = setup }
    }

    /// The snapshot as a reply: `{"ok":true, "state":..., ...}`. `onThisMachine`: the asker is on loopback, and is
    /// told setup mode's code.
    public func snapshotReply(onThisMachine: Bool = false) -> JSONValue {
        var members = Dictionary(uniqueKeysWithValues: state.withLock { Self.snapshot($0, onThisMachine: onThisMachine) }.dropFirst())
        members["ok"] = true
        return .object(members)
    }

    /// Setup mode's members: where to go, and the code to a client on this machine only (the code is what proves a
    /// person is at the speaker).
    private static func setupMembers(_ setup: (address: String, code: String)?, onThisMachine: Bool) -> [(String, JSONValue)] {
        [("setup_mode", .bool(setup != nil)), ("setup_address", setup.map { .string($0.address) } ?? .null),
         ("setup_code", onThisMachine ? setup.map { .string($0.code) } ?? .null : .null)]
    }

    /// The snapshot's members, "event":"snapshot" first.
    private static func snapshot(_ s: State, onThisMachine: Bool) -> [(String, JSONValue)] {
        guard let snapshot = s.speaker?.snapshot else { return [("event", "snapshot"), ("state", "none")] }
        // Appended in steps: one long `+` chain of literals is beyond the type checker's time limit on slower builds.
        var members: [(String, JSONValue)] = [
            ("event", "snapshot"), ("state", .string(snapshot.state.rawValue)), ("muted", .bool(snapshot.muted)),
        ]
        members += setupMembers(s.setup?(), onThisMachine: onThisMachine)
        members += [
            ("offline", .bool(snapshot.offline)), ("leds", .string(snapshot.leds.rawValue)),
            ("volume", .int(Int64(snapshot.volume))), ("sound_off", .bool(snapshot.soundOff)),
            ("timers", .array(snapshot.timers.map { timer($0, now: snapshot.now) })),
            ("alarms", .array(snapshot.alarms.map(alarm))),
            // A timer that could not be saved still rings in this run; a restart would lose it.
            ("timers_saved", .bool(snapshot.timersSaveProblem == nil)),
            ("timers_save_problem", snapshot.timersSaveProblem.map { .string($0) } ?? .null),
            ("partial", .string(snapshot.partial)), ("transcript", .string(snapshot.transcript)),
            ("answer", .string(snapshot.answer)), ("problem", .string(snapshot.problem)), ("display", snapshot.display),
            ("screen", .object(Dictionary(uniqueKeysWithValues: snapshot.screen.fields))),
            ("household", s.household?.householdSummary.json() ?? .null),
            ("enrollment", snapshot.enrollment.map { JSONValue.object(Dictionary(uniqueKeysWithValues: $0.fields)) } ?? .null),
            // The detector's own frames dropped because it fell behind the microphone (never the question's audio).
            ("hot_phrase_frames_dropped", .int(Int64(snapshot.hotPhraseFramesDropped))),
            ("ring", snapshot.ring.map(ring) ?? .null),
        ]
        return members
    }

    /// The LED ring's setting: `{"on": true, "percent": 32}`.
    static func ring(_ ring: RingSetting) -> JSONValue {
        ["on": .bool(ring.on), "percent": .int(Int64(ring.percent))]
    }

    static func timer(_ timer: SpeakerTimer, now: BootTime) -> JSONValue {
        let status = switch timer.status {
        case .running: "running"
        case .paused: "paused"
        case .ringing: "ringing"
        }
        return .object(["id": .int(Int64(timer.id)), "name": .string(timer.name), "seconds": .int(Int64(timer.seconds)),
                        "remaining_s": .int(Int64(timer.remainingSeconds(at: now))), "status": .string(status)])
    }

    static func alarm(_ alarm: SpeakerAlarm) -> JSONValue {
        var object: [String: JSONValue] = ["id": .int(Int64(alarm.id)), "name": .string(alarm.name), "time": .string(alarm.spokenTime),
                                           "days": .array(alarm.days.sorted().map { .string($0.name) }),
                                           "status": .string(alarm.isRinging ? "ringing" : "scheduled")]
        if case .scheduled(let at) = alarm.status { object["next_at"] = .double(at) }
        return .object(object)
    }

    /// Carries out a command. The reply says it was taken (`"ok":true`) or why not. A typed question is numbered,
    /// and its reply is made of what the speaker tells of that number only: with `waitForAnswer`, its answer (or
    /// why it has none) within `answerTimeout`; without, that it was asked (`"id"`, which its `question` events
    /// carry) or why it was refused.
    public func perform(_ command: ControlCommand, waitForAnswer: Bool, answerTimeout: Duration = .seconds(30),
                        onThisMachine: Bool = false) async -> JSONValue {
        guard let speaker = state.withLock({ $0.speaker }) else { return Self.failure("the speaker is not running yet") }
        switch command {
        case .status: return snapshotReply(onThisMachine: onThisMachine)
        case .wake:
            speaker.wakeScreen()
            return ["ok": true]
        case .ring(let on, let percent):
            switch speaker.setRing(on: on, percent: percent) {
            case .success(let ring): return ["ok": true, "ring": Self.ring(ring)]
            case .failure(let problem): return Self.failure(problem.message)
            }
        case .voices, .forget, .reloadHousehold:
            guard let household = state.withLock({ $0.household }) else {
                return Self.failure("this speaker does not listen for the hot phrase ([hotphrase] enabled = false): it has no household's voices")
            }
            let result: Result<HouseholdSummary, ControlCommand.Problem>
            switch command {
            case .forget(let phrase?): result = await household.apply(.forget(phrase))
            case .forget(nil): result = await household.apply(.forgetNegatives)
            case .reloadHousehold: result = await household.apply(.reload)
            default: result = .success(household.householdSummary)
            }
            switch result {
            case .success(let summary): return ["ok": true, "household": summary.json(withTakes: true)]
            case .failure(let problem): return Self.failure(problem.description)
            }
        case .enroll(let phrase):
            switch await speaker.enroll(phrase: phrase) {
            case .success(let progress): return ["ok": true, "enrollment": .object(Dictionary(uniqueKeysWithValues: progress.fields))]
            case .failure(let problem): return Self.failure(problem.message)
            }
        case .text(let query):
            return await ask(query, of: speaker, untilAnswered: waitForAnswer, timeout: answerTimeout)
        case .cancelTimer(let selection):
            // Looked up in the timers as they are now, as the loop will (TimerBook): a timer that is not there is
            // the script's mistake to hear of, not a command taken and silently doing nothing.
            let snapshot = speaker.snapshot
            var book = TimerBook(timers: snapshot.timers, alarms: snapshot.alarms)
            let outcome = book.apply(.cancel(selection.timer), now: snapshot.now)
            guard outcome.succeeded else { return Self.failure(Self.notFound(outcome.sentence, selection == .all ? nil : "timer")) }
        case .cancelAlarm(let selection):
            let snapshot = speaker.snapshot
            var book = TimerBook(timers: snapshot.timers, alarms: snapshot.alarms)
            // Cancelling reads neither the time nor the calendar.
            let outcome = book.apply(.cancel(selection.alarm), now: 0, calendar: FixedOffsetCalendar(), clockSynchronized: true)
            guard outcome.succeeded else { return Self.failure(Self.notFound(outcome.sentence, selection == .all ? nil : "alarm")) }
        default: break
        }
        if let event = command.event { speaker.send(event) }
        return ["ok": true]
    }

    /// The speaker's sentence for a cancel that found nothing, and where the right number is found.
    private static func notFound(_ sentence: String, _ kind: String?) -> String {
        guard let kind else { return sentence }
        return "\(sentence) (\"status\" lists the \(kind)s, with their ids)"
    }

    private func ask(_ query: String, of speaker: any ControlledSpeaker, untilAnswered: Bool, timeout: Duration) async -> JSONValue {
        let id = state.withLock { s in
            defer { s.nextQuestion += 1 }
            s.unregistered.insert(s.nextQuestion)
            return s.nextQuestion
        }
        // The wait and its timeout are children of this task: a shutdown (the control server's task cancelled)
        // ends both at once, and nothing outlives the command (before, a detached timer task held it up to the
        // timeout).
        let report = await withTaskGroup(of: SpeakerActivity.QuestionReport?.self) { group in
            group.addTask {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { continuation in
                        let cancelled = self.state.withLock { s in
                            if s.unregistered.remove(id) == nil { return true }
                            s.waiters[id] = (untilAnswered, continuation)
                            return false
                        }
                        if cancelled { continuation.resume(returning: nil) } else { speaker.send(.textQuery(query, id: id)) }
                    }
                } onCancel: {
                    self.stopWaiting(for: id)
                }
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        switch report?.status {
        case .asked?: return ["ok": true, "id": .int(Int64(id))]
        case .answered(let transcript, let answer, let done)?:
            var reply: [String: JSONValue] = ["ok": true, "id": .int(Int64(id)), "transcript": .string(transcript), "answer": .string(answer)]
            if !done.isEmpty { reply["done"] = .string(done) }
            return .object(reply)
        case .refused(let reason)?: return ["ok": false, "id": .int(Int64(id)), "error": .string(reason)]
        case .failed(let error)?:
            return ["ok": false, "id": .int(Int64(id)), "error": .string(error.sentence), "detail": .string(error.detail)]
        case .dropped(let reason)?: return ["ok": false, "id": .int(Int64(id)), "error": .string("the question was dropped: \(reason)")]
        case nil:
            if Task.isCancelled { return Self.failure("the control API is stopping") }
            return Self.failure(untilAnswered ? "no answer within \(timeout)" : "the speaker did not take the question within \(timeout)")
        }
    }

    /// Ends a wait that timed out or was cancelled. A wait not registered yet (cancelled before its continuation
    /// existed) ends as soon as it registers instead of waiting forever; one already answered is left alone.
    private func stopWaiting(for id: Int) {
        let waiter = state.withLock { s in
            s.unregistered.remove(id)
            return s.waiters.removeValue(forKey: id)?.continuation
        }
        waiter?.resume(returning: nil)
    }

    static func failure(_ message: String) -> JSONValue { ["ok": false, "error": .string(message)] }
}

