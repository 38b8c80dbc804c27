// libFuzzer target: the timers file (`timers.json` in the state directory) through its reader
// (Sources/Timers/TimerBook.swift, `TimerBook.reading(json:at:)`), then through what a start does with it
// (`restarted`: what fell due while the speaker was off rings or is missed), a day of checks, and a save.
//
// Besides "no crash" (issue #34: a number in this file crashed the speaker at every start), it checks that every
// entry is kept within its limits or named with a reason, and that what the speaker saves reads back as it was.
import FoundationEssentials
import JSONKit
import TimerChecks
import Timers

private let calendar = FixedOffsetCalendar(offset: -5 * 3600)

/// Two starts: in the same boot as the seeds' `savedAt` ten minutes later (counted on by the monotonic clock), and
/// after a reboot (the time left as saved).
private let starts = [ClockReading(wall: 1_800_000_600, boot: 5_600, bootID: "fuzz"),
                      ClockReading(wall: 1_800_000_600, boot: 30, bootID: "next boot")]

func fuzzTimersFile(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    guard let json = try? JSONValue(parsing: Data(UnsafeBufferPointer(start: start, count: count))) else { return 0 }
    for now in starts { startWith(json, at: now) }
    return 0
}

func startWith(_ json: JSONValue, at now: ClockReading) {
    let read: (book: TimerBook, rejected: [TimerFileRejection])
    do throws(TimerFileError) { read = try TimerBook.reading(json: json, at: now) } catch {
        if error.problem.isEmpty { fatalError("a refused timers file with no problem named") }
        return
    }
    for rejection in read.rejected where rejection.what.isEmpty || rejection.reason.isEmpty {
        fatalError("an entry left out without its name or reason: \(rejection)")
    }
    var book = read.book
    _ = book.restarted(now: now, calendar: calendar)
    checkWithinLimits(book, at: now)
    if let deadline = book.nextTimerDeadline, !deadline.isFinite { fatalError("the next timer is due at \(deadline)") }
    checkSavedAndReadBack(book, at: now)

    // A day of checks every hour, then a week on: everything due rings or is missed, without a trap.
    for seconds in stride(from: 3_600.0, through: 86_400, by: 3_600) {
        _ = book.due(now: now.boot + seconds)
        _ = book.alarmsDue(now: now.wall + seconds, calendar: calendar, checkedAgo: 3_600)
    }
    _ = book.stopRingingAlarms(now: now.wall + 86_400, calendar: calendar)
    _ = book.alarmsDue(now: now.wall + 8 * 86_400, calendar: calendar, checkedAgo: 7 * 86_400)
}
