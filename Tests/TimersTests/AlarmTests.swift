import Foundation
import JSONKit
import Testing
import Timers

/// A calendar with a daylight-saving change: UTC+1 until `switchAt`, UTC+2 after (as Paris in spring).
struct SpringForward: LocalCalendar {
    let switchAt: WallTime
    func utcOffset(at time: WallTime) -> Int { time < switchAt ? 3600 : 7200 }
}

@Suite struct AlarmTests {
    // 2026-11-23 was a Monday; 10:00 UTC.
    let monday10 = WallTime(CivilDate.days(year: 2026, month: 11, day: 23) * 86_400 + 10 * 3600)
    let utc = FixedOffsetCalendar()

    @Test func civilDatesAndWeekdays() {
        #expect(CivilDate.days(year: 1970, month: 1, day: 1) == 0)
        #expect(CivilDate.days(year: 2000, month: 3, day: 1) == 11_017)
        #expect(CivilDate.weekday(days: 0) == .thursday)
        #expect(CivilDate.weekday(days: CivilDate.days(year: 2026, month: 11, day: 23)) == .monday)
        #expect(Weekday(name: "saturdays") == .saturday && Weekday(name: "SUN") == .sunday && Weekday(name: "xx") == nil)
    }

    @Test func nextOccurrenceOnceAndOnDays() {
        let seven = SpeakerAlarm(id: 1, name: "", minuteOfDay: 7 * 60, days: [], status: .scheduled(at: 0))
        // 10:00 on Monday: 7 AM once is tomorrow.
        #expect(seven.next(after: monday10, utc) == monday10 + 21 * 3600)
        var weekend = seven
        weekend.days = [.saturday, .sunday]
        #expect(weekend.next(after: monday10, utc) == monday10 + (4 * 24 + 21) * 3600)
        // In Paris (UTC+1), 7 AM local is 6:00 UTC.
        #expect(seven.next(after: monday10, FixedOffsetCalendar(offset: 3600)) == monday10 + 20 * 3600)
        // A daylight-saving change overnight: 7 AM is still 7 AM on the wall.
        let spring = SpringForward(switchAt: monday10 + 14 * 3600)
        #expect(seven.next(after: monday10, spring) == monday10 + 19 * 3600)
    }

    @Test func anAlarmSetAHairBeforeAWholeMinuteIsNotAMinuteLater() {
        // 9:59:59.9999 on Monday: the 7:30 alarm is 21 hours 30 minutes and 0.1 ms away, said as 21 h 30 min.
        var book = TimerBook()
        let set = book.apply(.set(minuteOfDay: 7 * 60 + 30, days: [], name: ""), now: monday10 - 0.0001, calendar: utc, clockSynchronized: true)
        #expect(set.sentence == "The alarm for 7:30 AM is set, in 21 hours and 30 minutes.")
        #expect(TimerBook.whenFromNow(60.0000001) == "in 1 minute")
        #expect(TimerBook.whenFromNow(60.002) == "in 2 minutes")  // past the millisecond, a minute begun counts
        #expect(TimerBook.whenFromNow(0.0004) == "in less than a minute")
        // numbers no clock gives, without a trap
        #expect(TimerBook.whenFromNow(.nan) == "in less than a minute")
        #expect(TimerBook.whenFromNow(-5) == "in less than a minute")
        #expect(TimerBook.whenFromNow(.infinity).hasPrefix("in "))
    }

    @Test func setListCancelAndTheUnsyncedClockWarning() {
        var book = TimerBook()
        let set = book.apply(.set(minuteOfDay: 7 * 60 + 30, days: [], name: ""), now: monday10, calendar: utc, clockSynchronized: true)
        #expect(set.succeeded && set.sentence == "The alarm for 7:30 AM is set, in 21 hours and 30 minutes.")
        #expect(set.alarmChanges.map(\.kind) == [.set] && book.nextAlarm == monday10 + 21.5 * 3600)
        let weekdays: Set<Weekday> = [.monday, .tuesday, .wednesday, .thursday, .friday]
        let work = book.apply(.set(minuteOfDay: 6 * 60 + 45, days: weekdays, name: "work alarm"), now: monday10, calendar: utc, clockSynchronized: false)
        #expect(work.sentence == "The work alarm for 6:45 AM every weekday is set. But my clock isn't synchronized with the internet, so it may ring at the wrong time.")
        #expect(!book.apply(.set(minuteOfDay: 6 * 60 + 45, days: weekdays, name: ""), now: monday10, calendar: utc, clockSynchronized: true).succeeded)
        #expect(book.apply(.list, now: monday10, calendar: utc, clockSynchronized: true).sentence
                == "You have 2 alarms: the work alarm for 6:45 AM every weekday and the alarm for 7:30 AM.")
        #expect(book.apply(.cancel(.the), now: monday10, calendar: utc, clockSynchronized: true).sentence.hasSuffix("Which one?"))
        #expect(book.apply(.cancel(.named("work")), now: monday10, calendar: utc, clockSynchronized: true).sentence
                == "The work alarm for 6:45 AM every weekday is cancelled.")
        #expect(book.apply(.cancel(.at(minuteOfDay: 7 * 60 + 30)), now: monday10, calendar: utc, clockSynchronized: true).succeeded)
        #expect(book.alarms.isEmpty && book.nextAlarm == nil)
    }

    @Test func ringThenOnceIsGoneAndRepeatingWaitsForItsNextDay() throws {
        var book = TimerBook()
        _ = book.apply(.set(minuteOfDay: 11 * 60, days: [], name: "once"), now: monday10, calendar: utc, clockSynchronized: true)
        _ = book.apply(.set(minuteOfDay: 11 * 60, days: [.monday, .wednesday], name: "gym"), now: monday10, calendar: utc, clockSynchronized: true)
        #expect(book.alarmsDue(now: monday10 + 3599, calendar: utc).isEmpty)
        let rang = book.alarmsDue(now: monday10 + 3600, calendar: utc)
        #expect(rang.map(\.kind) == [.ringing, .ringing] && book.anyRinging)
        // Saved while ringing, read back the same.
        let clocks = ClockReading(wall: monday10 + 3600, boot: 500, bootID: "b")
        #expect(try TimerBook(json: try JSONValue(parsing: Data(book.json(at: clocks).asciiJSON().utf8)), at: clocks) == book)
        let stopped = book.stopRingingAlarms(now: monday10 + 3700, calendar: utc)
        #expect(stopped.map(\.kind) == [.stopped, .stopped])
        #expect(book.alarms.map(\.name) == ["gym"] && book.nextAlarm == monday10 + (2 * 24 + 1) * 3600)  // Wednesday 11:00
    }

    @Test func anAlarmLongMissedWhileOffIsNotRungButARepeatingOneStaysSet() {
        var book = TimerBook()
        _ = book.apply(.set(minuteOfDay: 11 * 60, days: [], name: "once"), now: monday10, calendar: utc, clockSynchronized: true)
        _ = book.apply(.set(minuteOfDay: 11 * 60, days: Set(Weekday.allCases), name: "daily"), now: monday10, calendar: utc, clockSynchronized: true)
        let back = book.restarted(now: ClockReading(wall: monday10 + 3 * 3600, boot: 500, bootID: "b"), calendar: utc)  // off from 10:00 to 13:00
        #expect(back.alarmChanges.map(\.kind) == [.missed, .missed] && !back.ringing)
        #expect(book.alarms.map(\.name) == ["daily"] && book.nextAlarm == monday10 + 25 * 3600)
    }
}
