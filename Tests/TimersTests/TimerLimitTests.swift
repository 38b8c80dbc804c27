import Foundation
import JSONKit
import Testing
import Timers
import TestSupport


/// Numbers as they can arrive from outside (Houndify's JSON, a control client, a damaged file): the edges of Int
/// and Double, zero, negatives, and ordinary values.
enum AbsurdNumbers {
    static let integers: [Int] = [0, 1, -1, 59, 60, 600, 86_399, 86_400, 86_401, 9_999_999_999_999_999, Int(Int32.max), Int(Int32.min),
                                  Int.max, Int.min, Int.max - 1, Int.min + 1]
    static let doubles: [Double] = [0, -0.0, 1, -1, 0.5, 600, 86_400, 86_400.5, 1e15, 9.2e18, 1e19, 1e308, -1e308,
                                    .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .infinity, -.infinity, .nan,
                                    .leastNonzeroMagnitude, 1_800_000_000, -1_800_000_000]

    static func integer(_ g: inout SplitMix) -> Int {
        switch Int.random(in: 0..<3, using: &g) {
        case 0: integers.randomElement(using: &g)!
        case 1: Int.random(in: -100_000...100_000, using: &g)
        default: Int.random(in: Int.min...Int.max, using: &g)
        }
    }

    static func double(_ g: inout SplitMix) -> Double {
        switch Int.random(in: 0..<3, using: &g) {
        case 0: doubles.randomElement(using: &g)!
        case 1: Double.random(in: -100_000...100_000, using: &g)
        default: Double(bitPattern: g.next())  // any bit pattern: NaNs, infinities, subnormals
        }
    }

    /// A JSON number, or something that is not one (a string "nan", null, a bool).
    static func json(_ g: inout SplitMix) -> JSONValue {
        switch Int.random(in: 0..<5, using: &g) {
        case 0: .int(Int64(clamping: integer(&g)))
        case 1: .int([Int64.max, Int64.min, -1, 0].randomElement(using: &g)!)
        case 2: .double(double(&g))
        case 3: .string(["nan", "inf", "-inf", "1e308", "9999999999999999", ""].randomElement(using: &g)!)
        default: [JSONValue.null, .bool(true), .array([]), .object([:])].randomElement(using: &g)!
        }
    }
}

/// What every timer and alarm in a book must satisfy, whatever was asked of it: the limits the loop relies on to
/// schedule and to say the time left without overflowing. `longestLeft`: a day for what commands make; a timer read
/// from a file may be as far ahead as its plausible times allow (the wall clock may be behind after a boot).
func expectWithinLimits(_ book: TimerBook, now: WallTime, longestLeft: Double = Double(TimerBook.longestSeconds),
                        sourceLocation: SourceLocation = #_sourceLocation) {
    for timer in book.timers {
        #expect((1...TimerBook.longestSeconds).contains(timer.seconds), "\(timer)", sourceLocation: sourceLocation)
        let left = timer.remaining(at: now)
        #expect(left.isFinite && left >= 0 && left <= longestLeft, "\(timer)", sourceLocation: sourceLocation)
        if case .paused(let paused) = timer.status { #expect(paused <= Double(TimerBook.longestSeconds), sourceLocation: sourceLocation) }
        #expect(Double(timer.remainingSeconds(at: now)) <= longestLeft.rounded(.up), sourceLocation: sourceLocation)
    }
    for alarm in book.alarms {
        #expect((0..<1440).contains(alarm.minuteOfDay), "\(alarm)", sourceLocation: sourceLocation)
    }
}

/// Numbers from outside reach timer arithmetic only within limits (issue #34: "add 9999999999999999 seconds to the
/// pasta timer" trapped the loop, and a restart with the saved timer trapped again).
@Suite struct TimerLimitTests {
    let t0: WallTime = 1_800_000_000

    /// Both clocks at `t` (the same number on each keeps these tests' arithmetic simple), in one boot.
    func clocks(_ t: Double) -> ClockReading { ClockReading(wall: t, boot: t, bootID: "b") }

    @Test func addingAnAbsurdTimeIsRefusedAndTheTimerKeepsItsTime() {
        var book = TimerBook()
        _ = book.apply(.set(seconds: 600, name: "pasta"), now: t0)
        for seconds in [9_999_999_999_999_999, Int.max, 86_400] {
            let added = book.apply(.addTime(seconds: seconds, .named("pasta")), now: t0)
            #expect(!added.succeeded && added.changes.isEmpty)
            #expect(added.sentence == "Timers can run for up to 24 hours: I can add at most 23 hours and 50 minutes to the pasta timer.")
            #expect(book.timers[0].remaining(at: t0) == 600)
        }
        // Up to the limit is fine.
        let full = book.apply(.addTime(seconds: 86_400 - 600, .named("pasta")), now: t0)
        #expect(full.succeeded && full.sentence == "Added 23 hours and 50 minutes: 24 hours left.")
        #expect(!book.apply(.addTime(seconds: 1, .named("pasta")), now: t0).succeeded)
        // A paused one and a ringing one are held to the same limit.
        _ = book.apply(.set(seconds: 60, name: "tea"), now: t0)
        _ = book.apply(.pause(.named("tea")), now: t0)
        #expect(!book.apply(.addTime(seconds: Int.max, .named("tea")), now: t0).succeeded)
        _ = book.apply(.resume(.named("tea")), now: t0)
        _ = book.due(now: t0 + 60)
        #expect(!book.apply(.addTime(seconds: 86_401, .named("tea")), now: t0 + 60).succeeded)
        #expect(book.apply(.addTime(seconds: 86_400, .named("tea")), now: t0 + 60).succeeded)
        // Several at once: none is changed when one would pass the limit.
        let both = book.apply(.addTime(seconds: 3600, .all), now: t0 + 60)
        #expect(!both.succeeded && both.sentence == "Timers can run for up to 24 hours, so I didn't add that.")
        expectWithinLimits(book, now: t0 + 60)
    }

    @Test func negativeAndHugeSelectionsNeverTrap() {
        var book = TimerBook()
        _ = book.apply(.set(seconds: 600, name: ""), now: t0)
        for n in [Int.min, -1, 0, Int.max] {
            #expect(!book.apply(.cancel(.position(n)), now: t0).succeeded)
            #expect(!book.apply(.cancel(.length(seconds: n)), now: t0).succeeded)
            #expect(!book.apply(.cancel(.id(n)), now: t0).succeeded)
            #expect(!book.apply(.set(seconds: n, name: ""), now: t0).succeeded)
            #expect(!book.apply(.addTime(seconds: n, .the), now: t0).succeeded)
            _ = SpokenDuration.ordinal(n)
            _ = SpokenDuration.adjective(n)
            _ = SpokenDuration.words(n)
        }
        for minute in [Int.min, -1, 1440, Int.max] {
            #expect(!book.apply(.set(minuteOfDay: minute, days: [], name: ""), now: t0, calendar: FixedOffsetCalendar(), clockSynchronized: true).succeeded)
        }
        #expect(book.timers.count == 1 && book.alarms.isEmpty)
    }

    /// A file of version 1 holding every kind of bad number: the good entries are read, each bad one is named with
    /// its reason (so the speaker can log it and keep the file aside), and what is read is within limits.
    @Test func aTimersFileWithAbsurdNumbersIsReadWithoutTrappingAndTheBadEntriesAreNamed() throws {
        let good: JSONValue = ["id": 1, "name": "pasta", "seconds": 600, "endsAt": .double(t0 + 300)]
        let json: JSONValue = ["version": 1, "timers": [
            good,
            ["id": 2, "name": "huge", "seconds": 600, "endsAt": .double(1e300)],
            ["id": 3, "name": "nan", "seconds": 600, "pausedRemaining": .double(.nan)],
            ["id": 4, "name": "inf", "seconds": 600, "endsAt": .double(.infinity)],
            ["id": 5, "name": "negative", "seconds": -1, "endsAt": .double(t0)],
            ["id": 6, "name": "long", "seconds": .int(9_999_999_999_999_999), "endsAt": .double(t0)],
            ["id": .int(Int64.max), "name": "big id", "seconds": 60, "endsAt": .double(t0)],
            ["id": 8, "name": "paused for ever", "seconds": 60, "pausedRemaining": .double(1e19)],
            ["id": 9, "name": "no state", "seconds": 60],
            "not an object",
        ], "alarms": [
            ["id": 10, "name": "wake", "minuteOfDay": 420, "days": [1, 2], "at": .double(t0 + 3600)],
            ["id": 11, "name": "far", "minuteOfDay": 420, "days": [], "at": .double(-1e308)],
            ["id": 12, "name": "odd day", "minuteOfDay": 420, "days": [1, 99], "at": .double(t0)],
            ["id": .int(Int64.min), "name": "small id", "minuteOfDay": 420, "days": [], "at": .double(t0)],
        ]]
        let (book, rejected) = try TimerBook.reading(json: json, at: clocks(t0))
        #expect(book.timers.map(\.name) == ["pasta"])
        #expect(book.alarms.map(\.name) == ["wake"])
        #expect(rejected.count == 12)
        let said = rejected.map(\.description)
        #expect(said.contains("timer 2 \"huge\": its end (1e+300) is not a time"))
        #expect(said.contains("timer 3 \"nan\": its time left (nan) is not 0 to 24 hours"))
        #expect(said.contains("timer 5 \"negative\": its length (-1 s) is not 1 s to 24 hours"))
        #expect(said.contains("timer 6 \"long\": its length (9999999999999999 s) is not 1 s to 24 hours"))
        #expect(said.contains("timer 9223372036854775807 \"big id\": its id is not 1 to 2147483647"))
        #expect(said.contains("timer 9 \"no state\": it is neither running, paused nor ringing"))
        #expect(said.contains("timer entry 10: not an object"))
        #expect(said.contains("alarm 12 \"odd day\": its days ([1,99]) are not 1 (Monday) to 7 (Sunday)"))
        // New ids still count on from the good ones, and nothing read can trap what follows.
        var next = book
        #expect(next.apply(.set(seconds: 5, name: "x"), now: t0).changes[0].timer.id == 11)
        _ = next.restarted(now: clocks(t0), calendar: FixedOffsetCalendar())
        expectWithinLimits(next, now: t0, longestLeft: TimerBook.plausibleTimes.upperBound - t0)
        // The convenience reader keeps the good entries the same way.
        #expect(try TimerBook(json: json, at: clocks(t0)) == book)
    }

    /// A book made in code with numbers no command or file makes: a restart brings lengths and paused times within
    /// a day and removes what is not a number. A running timer far ahead is kept: after a boot the wall clock may be
    /// behind, and the timer is right again once the clock is set.
    @Test func aRestartBringsWhatNoCommandMakesWithinLimits() {
        var book = TimerBook(timers: [
            SpeakerTimer(id: 1, name: "far", seconds: Int.max, status: .running(endsAt: t0 + 1e9)),
            SpeakerTimer(id: 2, name: "paused", seconds: Int.min, status: .paused(remaining: 1e19)),
            SpeakerTimer(id: 3, name: "nan", seconds: 60, status: .running(endsAt: .nan)),
            SpeakerTimer(id: Int.max, name: "ringing", seconds: 60, status: .ringing(since: -.infinity)),
        ], alarms: [SpeakerAlarm(id: 5, name: "", minuteOfDay: 420, days: [], status: .scheduled(at: .nan)),
                    SpeakerAlarm(id: 6, name: "", minuteOfDay: Int.max, days: [], status: .scheduled(at: t0))])
        let (changes, alarmChanges, _) = book.restarted(now: clocks(t0), calendar: FixedOffsetCalendar())
        #expect(Set(changes.filter { $0.kind == .missed }.map(\.timer.name)) == ["nan", "ringing"])
        #expect(alarmChanges.map(\.kind) == [.missed] && alarmChanges[0].alarm.id == 6)
        #expect(book.timers.map(\.name) == ["far", "paused"])
        #expect(book.timers.map(\.seconds) == [TimerBook.longestSeconds, 1])
        #expect(book.timers[0].remaining(at: t0) == 1e9 && book.timers[1].remaining(at: t0) == Double(TimerBook.longestSeconds))
        #expect(book.alarms.map(\.id) == [5] && book.nextAlarm.map { $0 > t0 && $0 <= t0 + 86_400 } == true)
        #expect(book.apply(.set(seconds: 60, name: "next"), now: t0).changes.first?.timer.id == Int(Int32.max) + 1)
    }

    /// Random actions with numbers from every corner, applied one after another: nothing traps, and the book
    /// stays within its limits after each.
    @Test func randomActionsWithAbsurdNumbersStayWithinLimits() {
        var g = SplitMix(seed: 34)
        var book = TimerBook()
        var now = t0
        let calendar = FixedOffsetCalendar(offset: 3600)
        for _ in 0..<5000 {
            let n = AbsurdNumbers.integer(&g)
            let selection: TimerSelection = [.the, .all, .named(["", "pasta", "tea"].randomElement(using: &g)!), .length(seconds: n),
                                             .position(n), .id(n)].randomElement(using: &g)!
            switch Int.random(in: 0..<10, using: &g) {
            case 0: _ = book.apply(.set(seconds: n, name: ["", "pasta", "tea", "egg"].randomElement(using: &g)!), now: now)
            case 1: _ = book.apply(.addTime(seconds: n, selection), now: now)
            case 2: _ = book.apply(.timeLeft(selection), now: now)
            case 3: _ = book.apply([.pause(selection), .resume(selection), .reset(selection), .cancel(selection)].randomElement(using: &g)!, now: now)
            case 4: _ = book.apply(.set(minuteOfDay: n, days: [], name: ""), now: now, calendar: calendar, clockSynchronized: true)
            case 5: _ = book.apply(.cancel([.the, .all, .at(minuteOfDay: n), .id(n)].randomElement(using: &g)!), now: now, calendar: calendar, clockSynchronized: true)
            case 6: _ = book.due(now: now); _ = book.alarmsDue(now: now, calendar: calendar)
            case 7: _ = book.stopRinging(); _ = book.stopRingingAlarms(now: now, calendar: calendar)
            case 8: now += Double(Int.random(in: 0...7200, using: &g))
            default: _ = book.apply(.set(seconds: Int.random(in: 1...86_400, using: &g), name: ""), now: now)
            }
            expectWithinLimits(book, now: now)
            if book.timers.count > 20 { _ = book.apply(.cancel(.all), now: now) }
        }
    }

    /// Random timers files: entries of every shape with numbers from every corner. Reading never traps, and the
    /// book read (after a restart) is within limits; every entry is either kept or named.
    @Test func randomTimersFilesNeverTrap() throws {
        var g = SplitMix(seed: 3434)
        let keys = ["id", "name", "seconds", "endsAt", "pausedRemaining", "ringingSince", "remaining", "ringingFor"]
        let alarmKeys = ["id", "name", "minuteOfDay", "days", "at", "ringingSince"]
        for _ in 0..<2000 {
            func entry(_ keys: [String]) -> JSONValue {
                var object: [String: JSONValue] = [:]
                for key in keys where Bool.random(using: &g) || key == "id" {
                    switch key {
                    case "name": object[key] = Bool.random(using: &g) ? .string("t") : AbsurdNumbers.json(&g)
                    case "days": object[key] = .array((0..<Int.random(in: 0...3, using: &g)).map { _ in AbsurdNumbers.json(&g) })
                    default: object[key] = Bool.random(using: &g) ? .int(Int64.random(in: 1...1000, using: &g)) : AbsurdNumbers.json(&g)
                    }
                }
                return .object(object)
            }
            let timers = (0..<Int.random(in: 0...4, using: &g)).map { _ in entry(keys) }
            let alarms = (0..<Int.random(in: 0...3, using: &g)).map { _ in entry(alarmKeys) }
            var top: [String: JSONValue] = ["version": 1, "timers": .array(timers), "alarms": .array(alarms)]
            if Bool.random(using: &g) {  // the clocks of the save: of this boot, of another, or absurd
                top["savedAt"] = .object(["wall": AbsurdNumbers.json(&g), "boot": Bool.random(using: &g) ? .double(t0 - 100) : AbsurdNumbers.json(&g),
                                          "bootID": .string(Bool.random(using: &g) ? "b" : "other")])
            }
            let json = JSONValue.object(top)
            let now = t0 + Double(Int.random(in: 0...100_000, using: &g))
            var (book, rejected) = try TimerBook.reading(json: json, at: clocks(now))
            #expect(book.timers.count + book.alarms.count + rejected.count == timers.count + alarms.count)
            _ = book.restarted(now: clocks(now), calendar: FixedOffsetCalendar())
            expectWithinLimits(book, now: now, longestLeft: TimerBook.plausibleTimes.upperBound - now)
            _ = book.apply(.timeLeft(.all), now: now)
            _ = book.apply(.addTime(seconds: 60, .all), now: now)
            _ = book.apply(.set(seconds: 60, name: "new"), now: now)
            _ = book.nextTimerDeadline
            _ = book.nextAlarm
            _ = book.json(at: clocks(now)).asciiJSON()
        }
    }

    @Test func saturatingConversions() {
        #expect(Saturating.int(.nan, in: 0...10) == 0)
        #expect(Saturating.int(.infinity, in: 0...10) == 10)
        #expect(Saturating.int(-.infinity) == Int.min)
        #expect(Saturating.int(1e300) == Int.max)
        #expect(Saturating.int(9.3e18) == Int.max)
        #expect(Saturating.int(9.2e18) == 9_200_000_000_000_000_000)
        #expect(Saturating.int(2.5) == 3)
        #expect(Saturating.int(2.1, .up) == 3)
        #expect(Saturating.int(-2.5, in: -10...10) == -3)
    }
}
