public import JSONKit

/// Wall-clock time in seconds since 1970 (UTC): what alarms (a time of day) are kept in. It steps whenever the
/// clock is set (a Pi has no battery clock: time sync sets it after every boot and power cut).
public typealias WallTime = Double

/// Seconds on the monotonic clock that keeps counting across suspend (CLOCK_BOOTTIME, which is what Swift's
/// ContinuousClock reads on Linux): what running timers are kept in. A timer is a duration, so it must not move
/// when the wall clock is stepped (issue #34: a 10-minute timer and a +1 h step was deleted as missed; -1 h, it rang
/// after 70 minutes). It starts again at each boot, so the timers file keeps time left, not instants (`json(at:)`).
public typealias BootTime = Double

/// Both clocks read at one moment, and which boot it was in (/proc/sys/kernel/random/boot_id): what a saved timer
/// needs to be counted on after a restart.
public struct ClockReading: Sendable, Equatable {
    public var wall: WallTime
    public var boot: BootTime
    /// "" when it is not known (then no two readings are taken to be in the same boot).
    public var bootID: String

    public init(wall: WallTime, boot: BootTime, bootID: String) {
        self.wall = wall
        self.boot = boot
        self.bootID = bootID
    }

    /// The monotonic seconds from `earlier` to this reading, when both were taken in the same boot (nil when not:
    /// CLOCK_BOOTTIME started again in between, and says nothing of how long the machine was off).
    public func seconds(since earlier: ClockReading) -> Double? {
        guard !bootID.isEmpty, bootID == earlier.bootID, boot >= earlier.boot, (boot - earlier.boot).isFinite else { return nil }
        return boot - earlier.boot
    }
}

/// A kitchen timer the speaker keeps itself (Houndify leaves timers to the client: docs/houndify-protocol.md,
/// "Timers").
public struct SpeakerTimer: Sendable, Equatable {
    public enum Status: Sendable, Equatable {
        /// Due at `endsAt` on the monotonic clock.
        case running(endsAt: BootTime)
        case paused(remaining: Double)
        /// Rang at `since` (monotonic) and has not been stopped.
        case ringing(since: BootTime)
    }

    public var id: Int
    /// What the person called it ("pasta"); "" for an unnamed timer.
    public var name: String
    /// The length it was set for, in seconds (what "reset" goes back to).
    public var seconds: Int
    public var status: Status

    public init(id: Int, name: String, seconds: Int, status: Status) {
        self.id = id
        self.name = name
        self.seconds = seconds
        self.status = status
    }

    /// Seconds left at `now` (monotonic; 0 once due or ringing).
    public func remaining(at now: BootTime) -> Double {
        switch status {
        case .running(let end): max(0, end - now)
        case .paused(let left): left
        case .ringing: 0
        }
    }

    /// Whole seconds left at `now` (monotonic), rounded up: what is said and shown. To the millisecond first: a
    /// timer set at `now` ends at `now + 600`, and (now + 600) - now comes out a hair over 600 for about one clock
    /// reading in 700, which rounded up said "10 minutes and 1 second" of a timer just set for 10 minutes.
    /// Saturating, so that a number no command can make (a timer built by hand) cannot trap whoever says it.
    public func remainingSeconds(at now: BootTime) -> Int {
        Saturating.int((remaining(at: now) * 1000).rounded() / 1000, .up, in: 0...Int.max)
    }

    public var isRunning: Bool { if case .running = status { true } else { false } }
    public var isRinging: Bool { if case .ringing = status { true } else { false } }

    /// "the pasta timer", or "the 10 minute timer" for one without a name.
    public var spokenName: String {
        name.isEmpty ? "the \(SpokenDuration.adjective(seconds)) timer" : "the \(name) timer"
    }
}

/// Which timers a command means.
public enum TimerSelection: Sendable, Equatable {
    /// "the timer": the one there is, or, among several, the one that is ringing, else the one due soonest.
    case the
    case named(String)
    /// "the 10 minute timer": by the length it was set for.
    case length(seconds: Int)
    /// "the second timer": by the order they were set in, from 1.
    case position(Int)
    /// By its id (the control API: a screen's cancel button).
    case id(Int)
    case all
}

/// What a person can ask of the timers (Houndify's TimerCommand kinds, as the speaker carries them out).
public enum TimerAction: Sendable, Equatable {
    case set(seconds: Int, name: String)
    case cancel(TimerSelection)
    /// "how much time is left"
    case timeLeft(TimerSelection)
    case addTime(seconds: Int, TimerSelection)
    case pause(TimerSelection)
    case resume(TimerSelection)
    /// Back to the length it was set for, running.
    case reset(TimerSelection)
}

/// What happened to one timer, for the activity stream and the log.
public struct TimerChange: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case set, cancelled, paused, resumed, extended, reset, ringing, stopped, missed
    }
    public var kind: Kind
    public var timer: SpeakerTimer

    public init(_ kind: Kind, _ timer: SpeakerTimer) {
        self.kind = kind
        self.timer = timer
    }
}

/// The result of carrying out one action: whether it did what was asked, what the speaker says about it, and
/// the timers it changed.
public struct TimerOutcome: Sendable, Equatable {
    public var succeeded: Bool
    public var sentence: String
    public var changes: [TimerChange]
    public var alarmChanges: [AlarmChange]
    /// It failed because no timer or alarm matched what was asked (Houndify's NoMatch branch).
    public var matchedNothing: Bool

    public init(succeeded: Bool, sentence: String, changes: [TimerChange] = [], alarmChanges: [AlarmChange] = [],
                matchedNothing: Bool = false) {
        self.succeeded = succeeded
        self.sentence = sentence
        self.changes = changes
        self.alarmChanges = alarmChanges
        self.matchedNothing = matchedNothing
    }

    /// Something was changed (not only looked at, nor refused).
    public var changedAnything: Bool { !changes.isEmpty || !alarmChanges.isEmpty }
}

/// The speaker's timers: what they are, what each command does to them, when the next one is due. Pure: the
/// time is passed in, so a 10-minute timer is tested in microseconds; the loop schedules, rings and saves.
public struct TimerBook: Sendable, Equatable {
    public private(set) var timers: [SpeakerTimer] = []
    public internal(set) var alarms: [SpeakerAlarm] = []
    private var nextID = 1
    /// A timer set for longer than this is refused (a day: a longer wait is an alarm's job); adding time is held to
    /// it too, and so is a paused timer's time left read from the file.
    public static let longestSeconds = 24 * 3600
    /// Ids are counted from 1; one beyond this in a file is damage, not a timer (and would overflow the count).
    public static let largestID = Int(Int32.max)
    /// A time read from the timers file must fall in this range (1970 to the year 5138): any real time does, and
    /// every sum and conversion on such a time stays exact and within Int.
    public static let plausibleTimes: ClosedRange<WallTime> = 0...100_000_000_000
    /// A timer that rang while the speaker was off is still rung if it fell due at most this long ago; an older
    /// one is reported as missed (a pasta timer from last night must not ring at breakfast).
    public static let stillWorthRinging: Double = 15 * 60

    public init(timers: [SpeakerTimer] = [], alarms: [SpeakerAlarm] = []) {
        self.timers = timers
        self.alarms = alarms
        // Clamped: ids from a file are checked, but a book made in code could hold any Int.
        nextID = min(max((timers.map(\.id) + alarms.map(\.id)).max() ?? 0, 0), Self.largestID) + 1
    }

    public var ringing: [SpeakerTimer] { timers.filter(\.isRinging) }
    public var anyRunning: Bool { timers.contains(where: \.isRunning) }
    /// A timer or an alarm is ringing.
    public var anyRinging: Bool { !ringing.isEmpty || alarms.contains(where: \.isRinging) }

    mutating func takeID() -> Int {
        defer { nextID += 1 }
        return nextID
    }

    /// When the next running timer is due, on the monotonic clock.
    public var nextTimerDeadline: BootTime? {
        timers.compactMap { if case .running(let end) = $0.status { end } else { nil } }.min()
    }

    /// When the next scheduled alarm is due, on the wall clock. (Two answers, not one: the two clocks drift apart
    /// at every step of the wall clock, so their times cannot be compared.)
    public var nextAlarm: WallTime? {
        alarms.compactMap { if case .scheduled(let at) = $0.status { at } else { nil } }.min()
    }

    /// Carries out `action` at `now` (monotonic).
    public mutating func apply(_ action: TimerAction, now: BootTime) -> TimerOutcome {
        switch action {
        case .set(let seconds, let name):
            guard seconds > 0 else { return TimerOutcome(succeeded: false, sentence: "How long should the timer be?") }
            guard seconds <= Self.longestSeconds else {
                return TimerOutcome(succeeded: false, sentence: "I can only set timers of up to 24 hours.")
            }
            let label = Self.cleanName(name)
            if !label.isEmpty, timers.contains(where: { $0.name == label }) {
                return TimerOutcome(succeeded: false, sentence: "There's already a \(label) timer.")
            }
            let timer = SpeakerTimer(id: takeID(), name: label, seconds: seconds, status: .running(endsAt: now + Double(seconds)))
            timers.append(timer)
            let what = label.isEmpty ? "Timer" : "\(label.prefix(1).uppercased())\(label.dropFirst()) timer"
            return TimerOutcome(succeeded: true, sentence: "\(what) set for \(SpokenDuration.words(seconds)).", changes: [TimerChange(.set, timer)])

        case .cancel(let selection):
            let chosen = select(selection, now: now)
            guard case .found(let found) = chosen else { return chosen.failure(doing: "cancel", in: self) }
            timers.removeAll { t in found.contains { $0.id == t.id } }
            let sentence = found.count == 1 ? "\(Self.capitalised(found[0].spokenName)) is cancelled." : "All \(found.count) timers are cancelled."
            return TimerOutcome(succeeded: true, sentence: sentence, changes: found.map { TimerChange($0.isRinging ? .stopped : .cancelled, $0) })

        case .timeLeft(let selection):
            let chosen = select(selection == .the && timers.count > 1 ? .all : selection, now: now)
            guard case .found(let found) = chosen else { return chosen.failure(doing: "check", in: self) }
            let parts = found.map { timer -> String in
                switch timer.status {
                case .ringing: return "\(timer.spokenName) is ringing"
                case .paused: return "\(timer.spokenName) is paused with \(SpokenDuration.words(timer.remainingSeconds(at: now))) left"
                case .running: return "\(SpokenDuration.words(timer.remainingSeconds(at: now))) left on \(timer.spokenName)"
                }
            }
            let sentence = (found.count > 1 ? "You have \(found.count) timers: " : "") + Self.list(parts) + "."
            return TimerOutcome(succeeded: true, sentence: Self.capitalised(sentence))

        case .addTime(let seconds, let selection):
            let chosen = select(selection, now: now)
            guard case .found(let found) = chosen, seconds > 0 else {
                return seconds > 0 ? chosen.failure(doing: "change", in: self) : TimerOutcome(succeeded: false, sentence: "How much time should I add?")
            }
            // Held to the same day as setting one: "add 9999999999999999 seconds" once made a deadline no clock
            // could arm (a trap in the loop, and again at every start, since the timer was saved first). All are
            // checked before any is changed, so a refusal changes nothing.
            let limit = Double(Self.longestSeconds)
            if found.contains(where: { $0.remaining(at: now) + Double(seconds) > limit }) {
                guard found.count == 1 else {
                    return TimerOutcome(succeeded: false, sentence: "Timers can run for up to 24 hours, so I didn't add that.")
                }
                let room = Saturating.int(limit - found[0].remaining(at: now), .down, in: 0...Self.longestSeconds)
                let sentence = room < 1 ? "Timers can run for up to 24 hours, and \(found[0].spokenName) already has 24 hours left."
                    : "Timers can run for up to 24 hours: I can add at most \(SpokenDuration.words(room)) to \(found[0].spokenName)."
                return TimerOutcome(succeeded: false, sentence: sentence)
            }
            var changes: [TimerChange] = []
            for timer in found {
                guard let index = timers.firstIndex(where: { $0.id == timer.id }) else { continue }
                switch timers[index].status {
                case .running(let end): timers[index].status = .running(endsAt: end + Double(seconds))
                case .paused(let left): timers[index].status = .paused(remaining: left + Double(seconds))
                case .ringing: timers[index].status = .running(endsAt: now + Double(seconds))
                }
                changes.append(TimerChange(.extended, timers[index]))
            }
            let left = changes.count == 1 ? ": \(SpokenDuration.words(changes[0].timer.remainingSeconds(at: now))) left" : ""
            return TimerOutcome(succeeded: true, sentence: "Added \(SpokenDuration.words(seconds))\(left).", changes: changes)

        case .pause(let selection):
            return change(selection, now: now, doing: "pause", kind: .paused, past: "paused") { timer in
                guard case .running(let end) = timer.status else { return nil }
                return .paused(remaining: max(0, end - now))
            }

        case .resume(let selection):
            return change(selection, now: now, doing: "resume", kind: .resumed, past: "running again") { timer in
                guard case .paused(let left) = timer.status else { return nil }
                return .running(endsAt: now + left)
            }

        case .reset(let selection):
            return change(selection, now: now, doing: "reset", kind: .reset, past: "restarted") { timer in
                .running(endsAt: now + Double(timer.seconds))
            }
        }
    }

    /// Running timers due by `now` (monotonic) start ringing; they are returned (each once). Timers that fell due
    /// long before `now` (the speaker was off) are removed and returned as missed instead.
    public mutating func due(now: BootTime) -> [TimerChange] {
        var changes: [TimerChange] = []
        for index in timers.indices {
            guard case .running(let end) = timers[index].status, end <= now else { continue }
            if now - end > Self.stillWorthRinging {
                changes.append(TimerChange(.missed, timers[index]))
            } else {
                timers[index].status = .ringing(since: end)
                changes.append(TimerChange(.ringing, timers[index]))
            }
        }
        let missed = Set(changes.filter { $0.kind == .missed }.map(\.timer.id))
        timers.removeAll { missed.contains($0.id) }
        return changes
    }

    /// After a restart: what `due` does, and a timer that was still ringing when the speaker went off rings on if
    /// it started at most `stillWorthRinging` ago (else it is missed, and removed). True when any is ringing.
    public mutating func restarted(now: ClockReading, calendar: any LocalCalendar) -> (changes: [TimerChange], alarmChanges: [AlarmChange], ringing: Bool) {
        let (unusable, unusableAlarms) = keepWithinLimits(now: now.wall, calendar: calendar)
        var changes = unusable + due(now: now.boot)
        let stale = timers.filter { if case .ringing(let since) = $0.status { now.boot - since > Self.stillWorthRinging } else { false } }
        timers.removeAll { t in stale.contains { $0.id == t.id } }
        changes += stale.map { TimerChange(.missed, $0) }
        var alarmChanges = unusableAlarms + alarmsDue(now: now.wall, calendar: calendar)
        for index in alarms.indices {
            guard case .ringing(let since) = alarms[index].status, now.wall - since > Self.stillWorthRinging else { continue }
            alarmChanges.append(AlarmChange(.missed, alarms[index]))
            alarms[index].status = .scheduled(at: alarms[index].next(after: now.wall, calendar))
        }
        alarms.removeAll { alarm in alarm.days.isEmpty && alarmChanges.contains { $0.kind == .missed && $0.alarm.id == alarm.id } }
        return (changes, alarmChanges, anyRinging)
    }

    /// Brings what no command can make within the limits, before anything is scheduled on it (the file's reader
    /// refuses all of these; a book made in code may hold them): a length or a paused time beyond a day is a day, a
    /// timer or alarm whose time is not a number is removed and returned as missed (or scheduled for its next time,
    /// for an alarm). An alarm far ahead is kept as it is: the wall clock may be behind after a boot (a Pi has no
    /// battery clock), and its time is right again once the clock is set.
    mutating func keepWithinLimits(now: WallTime, calendar: any LocalCalendar) -> ([TimerChange], [AlarmChange]) {
        let limit = Double(Self.longestSeconds)
        var missed: [TimerChange] = []
        for index in timers.indices {
            timers[index].seconds = min(max(timers[index].seconds, 1), Self.longestSeconds)
            switch timers[index].status {
            case .running(let end) where end.isFinite: break
            case .paused(let left) where left.isFinite: timers[index].status = .paused(remaining: min(max(left, 0), limit))
            case .ringing(let since) where since.isFinite: break
            default: missed.append(TimerChange(.missed, timers[index]))
            }
        }
        timers.removeAll { t in missed.contains { $0.timer.id == t.id } }
        var missedAlarms: [AlarmChange] = []
        for index in alarms.indices {
            guard (0..<1440).contains(alarms[index].minuteOfDay) else {
                missedAlarms.append(AlarmChange(.missed, alarms[index]))
                continue
            }
            switch alarms[index].status {
            case .scheduled(let at) where at.isFinite: break
            case .ringing(let since) where since.isFinite: break
            default: alarms[index].status = .scheduled(at: alarms[index].next(after: now, calendar))
            }
        }
        alarms.removeAll { a in missedAlarms.contains { $0.alarm.id == a.id } }
        return (missed, missedAlarms)
    }

    /// The ringing timers are done: removed, and returned.
    public mutating func stopRinging() -> [TimerChange] {
        let stopped = ringing
        timers.removeAll(where: \.isRinging)
        return stopped.map { TimerChange(.stopped, $0) }
    }

    // MARK: Choosing timers

    enum Choice {
        case found([SpeakerTimer])
        case none
        case noMatch(String)
        /// Several match and the command needs one.
        case ambiguous([SpeakerTimer])

        func failure(doing verb: String, in book: TimerBook) -> TimerOutcome {
            switch self {
            case .found: TimerOutcome(succeeded: true, sentence: "")
            case .none: TimerOutcome(succeeded: false, sentence: "There's no timer to \(verb).", matchedNothing: true)
            case .noMatch(let what): TimerOutcome(succeeded: false, sentence: "There's no \(what) timer.", matchedNothing: true)
            case .ambiguous(let timers):
                TimerOutcome(succeeded: false, sentence: "You have \(timers.count) timers: \(TimerBook.list(timers.map(\.spokenName))). Which one?")
            }
        }
    }

    func select(_ selection: TimerSelection, now: BootTime) -> Choice {
        guard !timers.isEmpty else { return .none }
        switch selection {
        case .all:
            return .found(timers)
        case .named(let name):
            let wanted = Self.cleanName(name)
            let found = timers.filter { $0.name == wanted }
            return found.isEmpty ? .noMatch(wanted) : .found(found)
        case .length(let seconds):
            let found = timers.filter { $0.seconds == seconds }
            if found.isEmpty { return .noMatch(SpokenDuration.adjective(seconds)) }
            return found.count == 1 ? .found(found) : .ambiguous(found)
        case .position(let n):
            return n >= 1 && timers.indices.contains(n - 1) ? .found([timers[n - 1]]) : .noMatch(SpokenDuration.ordinal(n))
        case .id(let id):
            return timers.first { $0.id == id }.map { .found([$0]) } ?? .noMatch("number \(id)")
        case .the:
            if timers.count == 1 { return .found(timers) }
            let ringing = self.ringing
            if !ringing.isEmpty { return .found(ringing) }
            return .ambiguous(timers)
        }
    }

    private mutating func change(_ selection: TimerSelection, now: BootTime, doing verb: String, kind: TimerChange.Kind, past: String,
                                 _ next: (SpeakerTimer) -> SpeakerTimer.Status?) -> TimerOutcome {
        let chosen = select(selection, now: now)
        guard case .found(let found) = chosen else { return chosen.failure(doing: verb, in: self) }
        var changes: [TimerChange] = []
        for timer in found {
            guard let index = timers.firstIndex(where: { $0.id == timer.id }), let status = next(timers[index]) else { continue }
            timers[index].status = status
            changes.append(TimerChange(kind, timers[index]))
        }
        guard !changes.isEmpty else {
            let state = verb == "resume" ? "isn't paused" : verb == "pause" ? "isn't running" : "can't be changed"
            return TimerOutcome(succeeded: false, sentence: "\(Self.capitalised(found.count == 1 ? found[0].spokenName : "the timer")) \(state).")
        }
        let subject = changes.count == 1 ? Self.capitalised(changes[0].timer.spokenName) + " is" : "\(changes.count) timers are"
        return TimerOutcome(succeeded: true, sentence: "\(subject) \(past).", changes: changes)
    }

    // MARK: Words

    static func cleanName(_ name: String, suffix: String = "timer") -> String {
        var words = name.lowercased().split(whereSeparator: \.isWhitespace).map(String.init)
        if words.last == suffix { words.removeLast() }
        if words.first == "the" || words.first == "a" { words.removeFirst() }
        return words.joined(separator: " ")
    }

    static func capitalised(_ text: String) -> String { text.prefix(1).uppercased() + text.dropFirst() }

    static func list(_ items: [String]) -> String {
        switch items.count {
        case 0: ""
        case 1: items[0]
        default: items.dropLast().joined(separator: ", ") + " and " + items.last!
        }
    }
}

/// Durations as the speaker says them.
public enum SpokenDuration {
    /// "1 hour, 5 minutes and 30 seconds"; "10 minutes".
    public static func words(_ seconds: Int) -> String {
        let s = max(0, seconds)
        let parts = [(s / 3600, "hour"), ((s % 3600) / 60, "minute"), (s % 60, "second")]
            .filter { $0.0 > 0 }.map { "\($0.0) \($0.1)\($0.0 == 1 ? "" : "s")" }
        return parts.isEmpty ? "0 seconds" : TimerBook.list(parts)
    }

    /// "10 minute", "1 hour 30 minute": the form before "timer".
    public static func adjective(_ seconds: Int) -> String {
        let parts = [(seconds / 3600, "hour"), ((seconds % 3600) / 60, "minute"), (seconds % 60, "second")]
            .filter { $0.0 > 0 }.map { "\($0.0) \($0.1)" }
        return parts.isEmpty ? "0 second" : parts.joined(separator: " ")
    }

    /// "first", "second", ... "10th".
    public static func ordinal(_ n: Int) -> String {
        let words = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth"]
        if n >= 1, words.indices.contains(n - 1) { return words[n - 1] }
        let suffix = (11...13).contains(n % 100) ? "th" : [1: "st", 2: "nd", 3: "rd"][n % 10] ?? "th"
        return "\(n)\(suffix)"
    }
}

// MARK: Saving

extension TimerBook {
    /// The timers as saved in the state directory (`timers.json`) at `now`. A running timer's end is an instant on
    /// this boot's monotonic clock, which means nothing after a reboot, so each timer is saved with its time left
    /// (`remaining`, or `ringingFor` for one ringing), and the file with both clocks and the boot as they were at
    /// the save (`savedAt`): `reading(json:at:)` counts on from there. Each also keeps the wall-clock instant the
    /// file held before (`endsAt`, `ringingSince`), and the file its version 1, so that an older speaker (apt rolls
    /// back) reads it as it always did. Alarms are times of day: saved as wall-clock instants, as before.
    public func json(at now: ClockReading) -> JSONValue {
        .object(["version": 1,
                 "savedAt": ["wall": .double(now.wall), "boot": .double(now.boot), "bootID": .string(now.bootID)],
                 "alarms": .array(alarms.map { alarm in
            var object: [String: JSONValue] = ["id": .int(Int64(alarm.id)), "name": .string(alarm.name),
                                               "minuteOfDay": .int(Int64(alarm.minuteOfDay)),
                                               "days": .array(alarm.days.sorted().map { .int(Int64($0.rawValue)) })]
            switch alarm.status {
            case .scheduled(let at): object["at"] = .double(at)
            case .ringing(let since): object["ringingSince"] = .double(since)
            }
            return .object(object)
        }), "timers": .array(timers.map { timer in
            var object: [String: JSONValue] = ["id": .int(Int64(timer.id)), "name": .string(timer.name), "seconds": .int(Int64(timer.seconds))]
            switch timer.status {
            case .running(let end):
                // Held to what the reader takes: one due and not yet rung (it is rung at the next check, within
                // milliseconds) has 0 left, and rings at the start.
                let left = min(max(end - now.boot, 0), Double(Self.longestSeconds))
                object["remaining"] = .double(left.isFinite ? left : 0)
                object["endsAt"] = .double(now.wall + (left.isFinite ? left : 0))
            case .paused(let left): object["pausedRemaining"] = .double(left)
            case .ringing(let since):
                let rung = max(now.boot - since, 0)
                object["ringingFor"] = .double(rung.isFinite ? rung : 0)
                object["ringingSince"] = .double(now.wall - (rung.isFinite ? rung : 0))
            }
            return .object(object)
        })])
    }

    /// Reads what `json(at:)` wrote, at `now`, keeping the entries that make sense (`reading(json:at:)` also names
    /// the others).
    public init(json: JSONValue, at now: ClockReading) throws(TimerFileError) {
        self = try Self.reading(json: json, at: now).book
    }

    /// Reads what `json(at:)` wrote (or a file from before it, which has only wall-clock instants), at `now`: each
    /// running timer is due its time left after `now`, less the time the speaker was off. An entry whose numbers
    /// are out of their limits (ids, lengths, times: the file is outside input, and a number in it once crashed the
    /// speaker at every start) or that does not parse is not kept, and is named in `rejected` with its reason, so
    /// that the caller can say so and keep the file aside.
    public static func reading(json: JSONValue, at now: ClockReading) throws(TimerFileError) -> (book: TimerBook, rejected: [TimerFileRejection]) {
        guard json["version"]?.int64Value == 1, let items = json["timers"]?.arrayValue else {
            throw TimerFileError(problem: "not a timers file of version 1")
        }
        let off = savedAt(json).map { offFor(since: $0, now: now) }
        var rejected: [TimerFileRejection] = []
        var ids: Set<Int> = []
        var timers: [SpeakerTimer] = []
        for (index, item) in items.enumerated() {
            switch timer(item, ids: &ids, now: now, off: off) {
            case .success(let timer): timers.append(timer)
            case .failure(let reason): rejected.append(TimerFileRejection(what: Self.entryName("timer", item, index: index), reason: reason.text))
            }
        }
        var alarms: [SpeakerAlarm] = []
        for (index, item) in (json["alarms"]?.arrayValue ?? []).enumerated() {
            switch alarm(item, ids: &ids) {
            case .success(let alarm): alarms.append(alarm)
            case .failure(let reason): rejected.append(TimerFileRejection(what: Self.entryName("alarm", item, index: index), reason: reason.text))
            }
        }
        return (TimerBook(timers: timers, alarms: alarms), rejected)
    }

    /// The clocks as the file was saved with them; nil for a file from before they were kept, or if they are not
    /// numbers a clock could show (the timers' wall-clock instants are read instead).
    static func savedAt(_ json: JSONValue) -> ClockReading? {
        guard let saved = json["savedAt"], let wall = saved["wall"]?.doubleValue, plausibleTimes.contains(wall),
              let boot = saved["boot"]?.doubleValue, plausibleTimes.contains(boot), let id = saved["bootID"]?.stringValue else { return nil }
        return ClockReading(wall: wall, boot: boot, bootID: id)
    }

    /// How long the timers are counted to have run while the speaker was off. In the same boot the monotonic
    /// clock says it exactly, whatever the wall clock did meanwhile. After a reboot the time left is taken as it was
    /// saved, not less the wall-clock difference: on a Pi the wall clock is not to be trusted across a boot (it has
    /// no battery clock: until time sync steps it, it reads the time saved at the last shutdown, or 1970, so the
    /// difference can be hours either way), and a reboot is mostly a power cut, which stopped the oven and the
    /// kitchen's other clocks too: the pasta needs the minutes it had left, not a timer that rings at breakfast.
    static func offFor(since saved: ClockReading, now: ClockReading) -> Double {
        now.seconds(since: saved) ?? 0
    }

    struct Reason: Error { var text: String }

    /// "timer 3 \"pasta\"", or "timer entry 4" for one without a readable id.
    static func entryName(_ kind: String, _ item: JSONValue, index: Int) -> String {
        let name = item["name"]?.stringValue.map { " \"\($0)\"" } ?? ""
        guard let id = item["id"], id.int64Value != nil else { return "\(kind) entry \(index + 1)\(name)" }
        return "\(kind) \(shown(id))\(name)"
    }

    /// A value as the log shows it: a Double as Swift prints it (JSON cannot show NaN or infinity), the rest as JSON.
    static func shown(_ value: JSONValue) -> String {
        if case .double(let d) = value { return "\(d)" }
        return value.asciiJSON()
    }

    static func id(_ item: JSONValue, ids: inout Set<Int>) -> Result<Int, Reason> {
        guard let raw = item["id"]?.int64Value else { return .failure(Reason(text: "it has no id")) }
        guard (1...Int64(largestID)).contains(raw) else { return .failure(Reason(text: "its id is not 1 to \(largestID)")) }
        guard ids.insert(Int(raw)).inserted else { return .failure(Reason(text: "its id is used by an earlier entry")) }
        return .success(Int(raw))
    }

    /// A time of the status `key`, if the entry has one: nil when it has none, a reason when it is not a time.
    static func time(_ item: JSONValue, _ key: String, _ what: String) -> Result<WallTime, Reason>? {
        guard let value = item[key] else { return nil }
        guard let time = value.doubleValue, plausibleTimes.contains(time) else {
            return .failure(Reason(text: "its \(what) (\(shown(value))) is not a time"))
        }
        return .success(time)
    }

    /// Seconds a status counts (time left, time rung) under `key`, if the entry has them: nil when it has none, a
    /// reason when they are not within `limits`.
    static func seconds(_ item: JSONValue, _ key: String, _ what: String, _ limits: ClosedRange<Double>, _ limitText: String) -> Result<Double, Reason>? {
        guard let value = item[key] else { return nil }
        guard let seconds = value.doubleValue, limits.contains(seconds) else {
            return .failure(Reason(text: "its \(what) (\(shown(value))) is not \(limitText)"))
        }
        return .success(seconds)
    }

    /// `off`: how long the speaker was off by the file's own clocks (`offFor`), nil for a file without them.
    static func timer(_ item: JSONValue, ids: inout Set<Int>, now: ClockReading, off: Double?) -> Result<SpeakerTimer, Reason> {
        guard item.objectValue != nil else { return .failure(Reason(text: "not an object")) }
        guard let name = item["name"]?.stringValue else { return .failure(Reason(text: "its name is not text")) }
        let length = item["seconds"] ?? .null
        guard let seconds = length.int64Value, (1...Int64(longestSeconds)).contains(seconds) else {
            return .failure(Reason(text: "its length (\(shown(length)) s) is not 1 s to 24 hours"))
        }
        let day = Double(longestSeconds)
        let status: SpeakerTimer.Status
        if let off, let left = Self.seconds(item, "remaining", "time left", 0...day, "0 to 24 hours") {
            guard case .success(let left) = left else { return .failure(left.reason) }
            status = .running(endsAt: now.boot + left - off)
        } else if let end = time(item, "endsAt", "end") {
            guard case .success(let end) = end else { return .failure(end.reason) }
            // A file from before the time left was kept: the wall clock is all it has. Held to a day ahead, the most
            // a timer can have left, in case the wall clock is behind (a boot before time sync).
            status = .running(endsAt: now.boot + min(end - now.wall, day))
        } else if let left = Self.seconds(item, "pausedRemaining", "time left", 0...day, "0 to 24 hours") {
            guard case .success(let left) = left else { return .failure(left.reason) }
            status = .paused(remaining: left)
        } else if let off, let rung = Self.seconds(item, "ringingFor", "time ringing", plausibleTimes, "a time") {
            guard case .success(let rung) = rung else { return .failure(rung.reason) }
            status = .ringing(since: now.boot - off - rung)
        } else if let since = time(item, "ringingSince", "ringing start") {
            guard case .success(let since) = since else { return .failure(since.reason) }
            status = .ringing(since: now.boot - (now.wall - since))
        } else {
            return .failure(Reason(text: "it is neither running, paused nor ringing"))
        }
        return id(item, ids: &ids).map { SpeakerTimer(id: $0, name: name, seconds: Int(seconds), status: status) }
    }

    static func alarm(_ item: JSONValue, ids: inout Set<Int>) -> Result<SpeakerAlarm, Reason> {
        guard item.objectValue != nil else { return .failure(Reason(text: "not an object")) }
        guard let name = item["name"]?.stringValue else { return .failure(Reason(text: "its name is not text")) }
        let minuteValue = item["minuteOfDay"] ?? .null
        guard let minute = minuteValue.int64Value, (0..<1440).contains(minute) else {
            return .failure(Reason(text: "its time of day (\(shown(minuteValue))) is not 0 to 1439 minutes"))
        }
        let dayValues = item["days"] ?? .array([])
        // Every day must be one: a repeating alarm that lost a day it did not understand would ring on others.
        guard let list = dayValues.arrayValue else { return .failure(Reason(text: "its days (\(shown(dayValues))) are not a list")) }
        let days = list.compactMap { $0.int64Value.flatMap { (1...7).contains($0) ? Weekday(rawValue: Int($0)) : nil } }
        guard days.count == list.count else {
            return .failure(Reason(text: "its days (\(shown(dayValues))) are not 1 (Monday) to 7 (Sunday)"))
        }
        let status: SpeakerAlarm.Status
        if let at = time(item, "at", "time") {
            guard case .success(let at) = at else { return .failure(at.reason) }
            status = .scheduled(at: at)
        } else if let since = time(item, "ringingSince", "ringing start") {
            guard case .success(let since) = since else { return .failure(since.reason) }
            status = .ringing(since: since)
        } else {
            return .failure(Reason(text: "it is neither scheduled nor ringing"))
        }
        return id(item, ids: &ids).map { SpeakerAlarm(id: $0, name: name, minuteOfDay: Int(minute), days: Set(days), status: status) }
    }
}

/// An entry of the timers file that was not kept, and why: "timer 3 \"pasta\": its end (1e+300) is not a time".
public struct TimerFileRejection: Sendable, Equatable, CustomStringConvertible {
    public var what: String
    public var reason: String
    public init(what: String, reason: String) {
        self.what = what
        self.reason = reason
    }
    public var description: String { "\(what): \(reason)" }
}

extension Result where Failure == TimerBook.Reason {
    var reason: TimerBook.Reason {
        if case .failure(let reason) = self { return reason }
        return TimerBook.Reason(text: "")
    }
}

public struct TimerFileError: Error, Equatable, CustomStringConvertible {
    public var problem: String
    public init(problem: String) { self.problem = problem }
    public var description: String { problem }
}
