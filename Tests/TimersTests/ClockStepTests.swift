import Foundation
import JSONKit
import Testing
import Timers

/// Issue #34: timers run on the monotonic clock and outlive a restart by their time left; alarms follow the wall
/// clock. The times here are far apart on purpose: monotonic seconds since boot, wall seconds since 1970.
@Suite struct ClockStepTests {
    let boot: BootTime = 4_000
    let wall: WallTime = 1_800_000_000

    /// A 600 s "pasta" timer set at `boot`, a paused one, and one ringing since 10 s before the save, saved 100 s on.
    func saved() -> (book: TimerBook, file: JSONValue, at: ClockReading) {
        var book = TimerBook()
        _ = book.apply(.set(seconds: 600, name: "pasta"), now: boot)
        _ = book.apply(.set(seconds: 300, name: "rice"), now: boot)
        _ = book.apply(.pause(.named("rice")), now: boot + 50)
        _ = book.apply(.set(seconds: 90, name: "tea"), now: boot)
        _ = book.due(now: boot + 90)
        let at = ClockReading(wall: wall + 100, boot: boot + 100, bootID: "one")
        return (book, book.json(at: at), at)
    }

    func left(_ book: TimerBook, _ name: String, at now: BootTime) -> Double? {
        book.timers.first { $0.name == name }?.remaining(at: now)
    }

    @Test func theFileKeepsTimeLeftAndTheClocksOfTheSave() throws {
        let (_, file, at) = saved()
        #expect(file["savedAt"]?["boot"]?.doubleValue == at.boot && file["savedAt"]?["bootID"]?.stringValue == "one")
        let pasta = file["timers"]?[0]
        #expect(pasta?["remaining"]?.doubleValue == 500)
        // What an older speaker reads (apt rolls back): the wall-clock end, in a file of version 1 as before.
        #expect(pasta?["endsAt"]?.doubleValue == wall + 600 && file["version"]?.int64Value == 1)
        #expect(file["timers"]?[2]?["ringingFor"]?.doubleValue == 10 && file["timers"]?[2]?["ringingSince"]?.doubleValue == wall + 90)
    }

    /// Restarted in the same boot, 120 s later by the monotonic clock, with the wall clock stepped either way or
    /// not at all: the time the speaker was off is counted on the monotonic clock, exactly.
    @Test(arguments: [-3600.0, 0.0, 60.0, 3600.0, -1_000_000_000.0])
    func aRestartInTheSameBootCountsOnTheMonotonicClock(wallStep: Double) throws {
        let (_, file, at) = saved()
        let now = ClockReading(wall: at.wall + 120 + wallStep, boot: at.boot + 120, bootID: "one")
        var book = try TimerBook(json: file, at: now)
        #expect(left(book, "pasta", at: now.boot) == 380)
        #expect(left(book, "rice", at: now.boot) == 250)  // paused: as it was
        let back = book.restarted(now: now, calendar: FixedOffsetCalendar())
        #expect(back.ringing && back.changes.isEmpty)  // tea rang 10 + 120 s ago: still worth ringing
        #expect(book.nextTimerDeadline == now.boot + 380)
    }

    /// After a reboot the monotonic clock started again, and the wall clock may be anything until time sync sets
    /// it: the timers go on with the time they had left when they were saved.
    @Test(arguments: [-3600.0, 0.0, 7200.0, 259_200.0])
    func afterARebootTheTimeLeftIsAsSaved(wallStep: Double) throws {
        let (_, file, at) = saved()
        let now = ClockReading(wall: at.wall + wallStep, boot: 25, bootID: "two")
        var book = try TimerBook(json: file, at: now)
        #expect(left(book, "pasta", at: now.boot) == 500)
        #expect(left(book, "rice", at: now.boot) == 250)
        let back = book.restarted(now: now, calendar: FixedOffsetCalendar())
        #expect(back.ringing && back.changes.isEmpty)
        #expect(book.nextTimerDeadline == now.boot + 500)
    }

    /// The same boot id but a monotonic clock behind the save cannot be the same boot (nor can an unknown id):
    /// taken as a reboot, never as time running backwards.
    @Test func aMonotonicClockBehindTheSaveOrAnUnknownBootIsAReboot() throws {
        let (_, file, at) = saved()
        let behind = ClockReading(wall: at.wall, boot: at.boot - 1000, bootID: "one")
        #expect(left(try TimerBook(json: file, at: behind), "pasta", at: behind.boot) == 500)
        var unknown = TimerBook()
        _ = unknown.apply(.set(seconds: 600, name: "pasta"), now: 10)
        let saved = unknown.json(at: ClockReading(wall: wall, boot: 110, bootID: ""))
        let now = ClockReading(wall: wall + 60, boot: 170, bootID: "")
        #expect(left(try TimerBook(json: saved, at: now), "pasta", at: now.boot) == 500)
    }

    /// A file from before (only wall-clock instants) is still read, by the wall clock, as it always was.
    @Test func aFileFromBeforeIsReadByTheWallClock() throws {
        let old: JSONValue = ["version": 1, "timers": [
            ["id": 1, "name": "pasta", "seconds": 600, "endsAt": .double(wall + 300)],
            ["id": 2, "name": "tea", "seconds": 60, "ringingSince": .double(wall - 20)],
            ["id": 3, "name": "far", "seconds": 600, "endsAt": .double(wall + 1e6)],  // a clock far behind
        ], "alarms": [["id": 4, "name": "", "minuteOfDay": 420, "days": [], "at": .double(wall + 3600)]]]
        let now = ClockReading(wall: wall, boot: 50, bootID: "x")
        let (book, rejected) = try TimerBook.reading(json: old, at: now)
        #expect(rejected.isEmpty)
        #expect(left(book, "pasta", at: 50) == 300)
        #expect(book.timers[1].status == .ringing(since: 30))
        #expect(left(book, "far", at: 50) == Double(TimerBook.longestSeconds))  // no more than a timer can have
        #expect(book.nextAlarm == wall + 3600)
    }

    /// The time left and time rung in a file are outside input: out of their limits, the entry is named.
    @Test func badTimesLeftAreNamed() throws {
        let file: JSONValue = ["version": 1, "savedAt": ["wall": .double(wall), "boot": 100, "bootID": "one"], "timers": [
            ["id": 1, "name": "a", "seconds": 600, "remaining": .double(-5)],
            ["id": 2, "name": "b", "seconds": 600, "remaining": .double(.nan)],
            ["id": 3, "name": "c", "seconds": 600, "remaining": .double(1e9)],
            ["id": 4, "name": "d", "seconds": 600, "ringingFor": .double(-1)],
        ]]
        let (book, rejected) = try TimerBook.reading(json: file, at: ClockReading(wall: wall, boot: 200, bootID: "one"))
        #expect(book.timers.isEmpty)
        #expect(rejected.map(\.description) == [
            "timer 1 \"a\": its time left (-5.0) is not 0 to 24 hours", "timer 2 \"b\": its time left (nan) is not 0 to 24 hours",
            "timer 3 \"c\": its time left (1000000000.0) is not 0 to 24 hours", "timer 4 \"d\": its time ringing (-1.0) is not a time",
        ])
    }

    /// An alarm crossed by a step forward of the wall clock while the speaker checked it a minute before rings,
    /// however far the step; at a start (not checked in this run) one long past is missed, as before.
    @Test func anAlarmCrossedByAStepRingsOnceAndOneMissedWhileOffIsMissed() {
        let utc = FixedOffsetCalendar()
        var book = TimerBook()
        _ = book.apply(.set(minuteOfDay: 8 * 60 + 10, days: [], name: ""), now: wall, calendar: utc, clockSynchronized: true)  // 8:00 now
        var crossed = book
        let rang = crossed.alarmsDue(now: wall + 3600, calendar: utc, checkedAgo: 60)
        #expect(rang.map(\.kind) == [.ringing] && crossed.alarms.first?.status == .ringing(since: wall + 3600))
        #expect(crossed.alarmsDue(now: wall + 3660, calendar: utc, checkedAgo: 60).isEmpty)  // once
        var off = book
        #expect(off.alarmsDue(now: wall + 3600, calendar: utc).map(\.kind) == [.missed] && off.alarms.isEmpty)
        var longAgo = book
        #expect(longAgo.alarmsDue(now: wall + 3600, calendar: utc, checkedAgo: 3000).map(\.kind) == [.missed])
    }
}
