/// A day of the week, as alarms repeat on them (ISO numbering: Monday 1 ... Sunday 7).
public enum Weekday: Int, Sendable, CaseIterable, Comparable {
    case monday = 1, tuesday, wednesday, thursday, friday, saturday, sunday

    public static func < (a: Weekday, b: Weekday) -> Bool { a.rawValue < b.rawValue }

    public var name: String {
        switch self {
        case .monday: "Monday"
        case .tuesday: "Tuesday"
        case .wednesday: "Wednesday"
        case .thursday: "Thursday"
        case .friday: "Friday"
        case .saturday: "Saturday"
        case .sunday: "Sunday"
        }
    }

    /// "Monday", "MON", "mondays": nil when it is not a day.
    public init?(name: String) {
        let key = name.lowercased().prefix(3)
        guard let day = Weekday.allCases.first(where: { $0.name.lowercased().hasPrefix(key) }), key.count == 3 else { return nil }
        self = day
    }
}

/// Local time from wall time: the one thing alarms need from the system (its time zone and daylight saving).
/// `utcOffset(at:)` is the offset east of UTC, in seconds, in force at that instant (tm_gmtoff).
public protocol LocalCalendar: Sendable {
    func utcOffset(at time: WallTime) -> Int
}

/// A calendar with one fixed offset (tests; a speaker on UTC).
public struct FixedOffsetCalendar: LocalCalendar {
    public let offset: Int
    public init(offset: Int = 0) { self.offset = offset }
    public func utcOffset(at time: WallTime) -> Int { offset }
}

/// Civil dates on the proleptic Gregorian calendar, counted in days since 1970-01-01 (Howard Hinnant's
/// days-from-civil algorithm, which needs no tables and no time zone database).
public enum CivilDate {
    public static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The weekday of a day number (1970-01-01 was a Thursday).
    public static func weekday(days: Int) -> Weekday {
        let index = ((days % 7) + 7 + 3) % 7  // 0 = Monday
        return Weekday(rawValue: index + 1)!
    }

    /// The year, month (1-12) and day of day number `days` (the inverse of `days(year:month:day:)`).
    public static func civil(days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// The local day number and minute of the day at `time`.
    public static func local(_ time: WallTime, _ calendar: any LocalCalendar) -> (days: Int, minute: Int) {
        let local = Int((time + Double(calendar.utcOffset(at: time))).rounded(.down))
        let days = Int((Double(local) / 86_400).rounded(.down))
        return (days, (local - days * 86_400) / 60)
    }

    /// The instant at which local time reads `minute` of day `days`. Across a daylight-saving change the offset
    /// is looked up again at the answer (twice is enough); a local time skipped by the change gives the instant
    /// an hour later, as clocks do.
    public static func instant(days: Int, minute: Int, _ calendar: any LocalCalendar) -> WallTime {
        let local = Double(days * 86_400 + minute * 60)
        var guess = local - Double(calendar.utcOffset(at: local))
        guess = local - Double(calendar.utcOffset(at: guess))
        return local - Double(calendar.utcOffset(at: guess))
    }
}

/// An alarm: a time of day, once or on some days of the week.
public struct SpeakerAlarm: Sendable, Equatable {
    public enum Status: Sendable, Equatable {
        case scheduled(at: WallTime)
        case ringing(since: WallTime)
    }

    public var id: Int
    public var name: String
    /// Local time of day, minutes after midnight.
    public var minuteOfDay: Int
    /// Empty: once.
    public var days: Set<Weekday>
    public var status: Status

    public init(id: Int, name: String, minuteOfDay: Int, days: Set<Weekday>, status: Status) {
        self.id = id
        self.name = name
        self.minuteOfDay = minuteOfDay
        self.days = days
        self.status = status
    }

    public var isRinging: Bool { if case .ringing = status { true } else { false } }

    /// "7:30 AM", "every weekday at 6:45 AM", "on Saturday and Sunday at 9 AM".
    public var spokenTime: String { SpeakerAlarm.clock(minuteOfDay) }

    public var spokenRepeat: String {
        if days.isEmpty { return "" }
        if days.count == 7 { return "every day" }
        let weekdays: Set<Weekday> = [.monday, .tuesday, .wednesday, .thursday, .friday]
        if days == weekdays { return "every weekday" }
        if days == [.saturday, .sunday] { return "every weekend" }
        return "every " + TimerBook.list(days.sorted().map(\.name))
    }

    public var spokenName: String {
        let what = name.isEmpty ? "the alarm" : "the \(name) alarm"
        let repeatText = spokenRepeat
        return "\(what) for \(spokenTime)" + (repeatText.isEmpty ? "" : " \(repeatText)")
    }

    static func clock(_ minuteOfDay: Int) -> String {
        let hour = minuteOfDay / 60, minute = minuteOfDay % 60
        let h12 = hour % 12 == 0 ? 12 : hour % 12
        let half = hour < 12 ? "AM" : "PM"
        return minute == 0 ? "\(h12) \(half)" : "\(h12):\(minute < 10 ? "0" : "")\(minute) \(half)"
    }

    /// The next time it rings strictly after `after`.
    public func next(after: WallTime, _ calendar: any LocalCalendar) -> WallTime {
        let today = CivilDate.local(after, calendar).days
        for offset in 0...8 {
            let day = today + offset
            guard days.isEmpty || days.contains(CivilDate.weekday(days: day)) else { continue }
            let at = CivilDate.instant(days: day, minute: minuteOfDay, calendar)
            if at > after { return at }
        }
        return CivilDate.instant(days: today + 7, minute: minuteOfDay, calendar)  // unreachable with a day in the set
    }
}

/// Which alarms a command means.
public enum AlarmSelection: Sendable, Equatable {
    case the
    case named(String)
    /// By the time it is set for (minutes after midnight).
    case at(minuteOfDay: Int)
    /// By its id (the control API).
    case id(Int)
    case all
}

/// What a person can ask of the alarms (Houndify's AlarmCommand kinds, as the speaker carries them out).
public enum AlarmAction: Sendable, Equatable {
    case set(minuteOfDay: Int, days: Set<Weekday>, name: String)
    case cancel(AlarmSelection)
    /// "what alarms do I have"
    case list
}

/// What happened to one alarm, for the activity stream and the log.
public struct AlarmChange: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case set, cancelled, ringing, stopped, missed
    }
    public var kind: Kind
    public var alarm: SpeakerAlarm

    public init(_ kind: Kind, _ alarm: SpeakerAlarm) {
        self.kind = kind
        self.alarm = alarm
    }
}

extension TimerBook {
    /// Carries out an alarm command at `now`. `clockSynchronized`: an alarm set on a clock that was never set
    /// (a Pi has no battery clock) would ring at the wrong time, so the person is told.
    public mutating func apply(_ action: AlarmAction, now: WallTime, calendar: any LocalCalendar, clockSynchronized: Bool) -> TimerOutcome {
        switch action {
        case .set(let minute, let days, let name):
            guard (0..<1440).contains(minute) else { return TimerOutcome(succeeded: false, sentence: "What time should the alarm be for?") }
            let label = Self.cleanName(name, suffix: "alarm")
            if let same = alarms.first(where: { $0.minuteOfDay == minute && $0.days == days }) {
                return TimerOutcome(succeeded: false, sentence: "You already have \(same.spokenName).")
            }
            var alarm = SpeakerAlarm(id: takeID(), name: label, minuteOfDay: minute, days: days, status: .scheduled(at: 0))
            let at = alarm.next(after: now, calendar)
            alarm.status = .scheduled(at: at)
            alarms.append(alarm)
            var sentence = "\(Self.capitalised(alarm.spokenName)) is set."
            if days.isEmpty { sentence = "\(Self.capitalised(alarm.spokenName)) is set, \(Self.whenFromNow(at - now))." }
            if !clockSynchronized {
                sentence += " But my clock isn't synchronized with the internet, so it may ring at the wrong time."
            }
            return TimerOutcome(succeeded: true, sentence: sentence, alarmChanges: [AlarmChange(.set, alarm)])

        case .cancel(let selection):
            let found: [SpeakerAlarm]
            switch selection {
            case .all: found = alarms
            case .named(let name): found = alarms.filter { $0.name == Self.cleanName(name, suffix: "alarm") }
            case .at(let minute): found = alarms.filter { $0.minuteOfDay == minute }
            case .id(let id): found = alarms.filter { $0.id == id }
            case .the: found = alarms.count == 1 ? alarms : alarms.filter(\.isRinging)
            }
            guard !alarms.isEmpty else { return TimerOutcome(succeeded: false, sentence: "There's no alarm to cancel.", matchedNothing: true) }
            guard !found.isEmpty else {
                if selection == .the {
                    return TimerOutcome(succeeded: false, sentence: "You have \(alarms.count) alarms: \(Self.list(alarms.map(\.spokenName))). Which one?")
                }
                return TimerOutcome(succeeded: false, sentence: "There's no such alarm.", matchedNothing: true)
            }
            alarms.removeAll { a in found.contains { $0.id == a.id } }
            let sentence = found.count == 1 ? "\(Self.capitalised(found[0].spokenName)) is cancelled." : "All \(found.count) alarms are cancelled."
            return TimerOutcome(succeeded: true, sentence: sentence, alarmChanges: found.map { AlarmChange(.cancelled, $0) })

        case .list:
            guard !alarms.isEmpty else { return TimerOutcome(succeeded: true, sentence: "You have no alarms.") }
            let sorted = alarms.sorted { $0.minuteOfDay < $1.minuteOfDay }
            return TimerOutcome(succeeded: true, sentence: "You have \(alarms.count == 1 ? "one alarm" : "\(alarms.count) alarms"): "
                                + Self.list(sorted.map(\.spokenName)) + ".")
        }
    }

    /// Alarms due by `now` (wall clock) start ringing; one due long before (the speaker was off) is missed. A
    /// repeating alarm that is missed waits for its next day; a one-off is removed.
    ///
    /// `checkedAgo`: the monotonic seconds since the alarms were last checked in this run (nil at a start). Each
    /// alarm still scheduled was not due then, so one due now fell due within those seconds, however far the wall
    /// clock went meanwhile: one crossed by a step of the clock forward (time sync) while the speaker was on rings,
    /// once, rather than being taken for one that fell due while it was off.
    public mutating func alarmsDue(now: WallTime, calendar: any LocalCalendar, checkedAgo: Double? = nil) -> [AlarmChange] {
        var changes: [AlarmChange] = []
        var removed: Set<Int> = []
        let justChecked = checkedAgo.map { $0 <= Self.stillWorthRinging } ?? false
        for index in alarms.indices {
            guard case .scheduled(let at) = alarms[index].status, at <= now else { continue }
            if now - at > Self.stillWorthRinging && !justChecked {
                changes.append(AlarmChange(.missed, alarms[index]))
                if alarms[index].days.isEmpty { removed.insert(alarms[index].id) } else {
                    alarms[index].status = .scheduled(at: alarms[index].next(after: now, calendar))
                }
            } else {
                // One crossed by a step rang from now, not from its time long ago by the stepped clock (a restart
                // would take it for one that has rung too long).
                alarms[index].status = .ringing(since: now - at > Self.stillWorthRinging ? now : at)
                changes.append(AlarmChange(.ringing, alarms[index]))
            }
        }
        alarms.removeAll { removed.contains($0.id) }
        return changes
    }

    /// The ringing alarms are done: a repeating one waits for its next day, a one-off is removed.
    public mutating func stopRingingAlarms(now: WallTime, calendar: any LocalCalendar) -> [AlarmChange] {
        var changes: [AlarmChange] = []
        for index in alarms.indices where alarms[index].isRinging {
            // A repeating alarm is told with its next time; a one-off as it was, and then removed.
            if !alarms[index].days.isEmpty { alarms[index].status = .scheduled(at: alarms[index].next(after: now, calendar)) }
            changes.append(AlarmChange(.stopped, alarms[index]))
        }
        alarms.removeAll { alarm in alarm.days.isEmpty && changes.contains { $0.alarm.id == alarm.id } }
        return changes
    }

    /// "in 8 hours and 5 minutes": the minutes until the alarm, rounded up as SpeakerTimer.remainingSeconds rounds
    /// its seconds, to the millisecond first, so that a clock read a hair before a whole minute does not add one
    /// ("in 21 hours and 31 minutes" of a 7:30 alarm set at 9:59:59.9999). Saturating, and kept where minutes * 60
    /// still fits an Int, so that no number traps here.
    public static func whenFromNow(_ seconds: Double) -> String {
        let minutes = Saturating.int((seconds * 1000).rounded() / 1000 / 60, .up, in: 0...(Int.max / 60))
        return minutes < 1 ? "in less than a minute" : "in " + SpokenDuration.words(minutes * 60)
    }
}
