// What FuzzTimerCommands and FuzzTimersFile check of the timers they end with: the limits every number from outside
// is held to (issue #34), and that what is saved reads back the same.
public import Timers

/// Stops the fuzzer (the input saved) unless every number the book holds is within its limits: a timer runs 1 s to
/// 24 hours and has at most that left, an alarm is at a minute of the day, every instant is a number, ids are
/// 1 to `TimerBook.largestID` and no two are the same.
public func checkWithinLimits(_ book: TimerBook, at now: ClockReading) {
    let day = TimerBook.longestSeconds
    for timer in book.timers {
        if !(1...day).contains(timer.seconds) { fatalError("a timer of \(timer.seconds) s: \(timer)") }
        if !(0...day).contains(timer.remainingSeconds(at: now.boot)) {
            fatalError("a timer with \(timer.remainingSeconds(at: now.boot)) s left: \(timer)")
        }
        switch timer.status {
        case .running(let end): if !end.isFinite { fatalError("a timer due at \(end)") }
        case .paused(let left): if !left.isFinite { fatalError("a timer paused with \(left) left") }
        case .ringing(let since): if !since.isFinite { fatalError("a timer ringing since \(since)") }
        }
    }
    for alarm in book.alarms {
        if !(0..<1440).contains(alarm.minuteOfDay) { fatalError("an alarm at minute \(alarm.minuteOfDay)") }
        switch alarm.status {
        case .scheduled(let at): if !TimerBook.plausibleTimes.contains(at) { fatalError("an alarm at \(at)") }
        case .ringing(let since): if !TimerBook.plausibleTimes.contains(since) { fatalError("an alarm ringing since \(since)") }
        }
    }
    let ids = book.timers.map(\.id) + book.alarms.map(\.id)
    if !ids.allSatisfy((1...TimerBook.largestID).contains) || Set(ids).count != ids.count {
        fatalError("ids out of range or shared: \(ids)")
    }
}

/// Stops the fuzzer unless `book`, saved at `now` and read back at the same moment (a restart in the same boot),
/// is the same: every entry kept, each timer with its time left to the millisecond (the file keeps time left, not
/// the instant, so a sum may differ in its last bit), the alarms exactly.
public func checkSavedAndReadBack(_ book: TimerBook, at now: ClockReading) {
    let saved = book.json(at: now)
    let read: (book: TimerBook, rejected: [TimerFileRejection])
    do throws(TimerFileError) { read = try TimerBook.reading(json: saved, at: now) } catch {
        fatalError("what was saved does not read (\(error)): \(saved.asciiJSON())")
    }
    if !read.rejected.isEmpty { fatalError("what was saved is left out when read: \(read.rejected)") }
    let same = read.book.alarms == book.alarms && read.book.timers.count == book.timers.count
        && zip(read.book.timers, book.timers).allSatisfy { x, y in
            x.id == y.id && x.name == y.name && x.seconds == y.seconds && x.isRunning == y.isRunning && x.isRinging == y.isRinging
                && abs(x.remaining(at: now.boot) - y.remaining(at: now.boot)) < 0.001
        }
    if !same { fatalError("saved and read back, the timers changed: \(saved.asciiJSON())") }
}
