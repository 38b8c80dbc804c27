// libFuzzer target: Houndify's answer as the speaker reads a timer or alarm command from it
// (Sources/HoundifyAnswers/ClientCommands.swift: TimerCommand, AlarmCommand and their NativeData), carried out on a book
// that holds a running, a paused and a ringing timer and two alarms (Sources/Timers), then saved and read back.
//
// Besides "no crash" (issue #34: "add 9999999999999999 seconds to the pasta timer" trapped the loop, and again at
// every start), it checks the limits every number from outside is held to: a timer runs 1 s to 24 hours, an alarm
// is at a minute of the day, every instant is a number, and what is saved reads back the same, with nothing left
// out.
import FoundationEssentials
import Houndify
import JSONKit
import HoundifyAnswers
import SpeakerCore
import TimerChecks
import Timers

private let clocks = ClockReading(wall: 1_800_000_000, boot: 5_000, bootID: "fuzz")
private let calendar = FixedOffsetCalendar(offset: 3600)

/// What the speaker holds when the command comes: one of each kind of timer and a daily and a one-off alarm.
private let before: TimerBook = {
    var book = TimerBook()
    _ = book.apply(.set(seconds: 600, name: "pasta"), now: clocks.boot - 100)
    _ = book.apply(.set(seconds: 900, name: "soup"), now: clocks.boot - 100)
    _ = book.apply(.pause(.named("soup")), now: clocks.boot - 50)
    _ = book.apply(.set(seconds: 60, name: "egg"), now: clocks.boot - 90)
    _ = book.due(now: clocks.boot - 20)
    _ = book.apply(.set(minuteOfDay: 420, days: Set(Weekday.allCases), name: "work"), now: clocks.wall, calendar: calendar, clockSynchronized: true)
    _ = book.apply(.set(minuteOfDay: 1439, days: [], name: ""), now: clocks.wall, calendar: calendar, clockSynchronized: true)
    return book
}()

func fuzzTimerCommands(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    guard let start else { return 0 }
    let raw = Data(UnsafeBufferPointer(start: start, count: count))
    guard let json = try? JSONValue(parsing: raw), let response = try? HoundServerResponse(json: withoutRecordings(json), raw: raw) else {
        return 0
    }
    var book = before
    let outcome: TimerOutcome
    switch ClientCommandReader().read(response).answer.action {
    case .timer(let action)?: outcome = book.apply(action, now: clocks.boot)
    case .alarm(let action)?: outcome = book.apply(action, now: clocks.wall, calendar: calendar, clockSynchronized: true)
    default: return 0
    }
    if outcome.sentence.isEmpty { fatalError("a timer or alarm command with nothing to say: \(outcome)") }
    if !outcome.succeeded && outcome.changedAnything { fatalError("a refused command changed the timers: \(outcome)") }
    checkWithinLimits(book, at: clocks)
    checkSavedAndReadBack(book, at: clocks)

    // A day and a week on, everything falls due without a trap.
    _ = book.due(now: clocks.boot + Double(TimerBook.longestSeconds) + 1)
    _ = book.alarmsDue(now: clocks.wall + 8 * 86_400, calendar: calendar, checkedAgo: 8 * 86_400)
    _ = book.restarted(now: ClockReading(wall: clocks.wall + 86_400, boot: 10, bootID: "next boot"), calendar: calendar)
    return 0
}

/// The answer without Houndify's recordings of it: the reader hands those to libsndfile (a file per answer), which
/// is not what this fuzzes.
private func withoutRecordings(_ json: JSONValue) -> JSONValue {
    guard case .object(var object) = json, case .array(let results)? = object["AllResults"] else { return json }
    object["AllResults"] = .array(results.map { result in
        guard case .object(var fields) = result else { return result }
        fields["ResponseAudioBytes"] = nil
        return .object(fields)
    })
    return .object(object)
}
