import Foundation
import JSONKit
import Testing
import Timers

/// The timer list on its own: what each command does, what is said, when timers fall due, what survives a save.
@Suite struct TimerBookTests {
    let t0: WallTime = 1_800_000_000

    @Test func setCountDownAndRing() {
        var book = TimerBook()
        let set = book.apply(.set(seconds: 600, name: ""), now: t0)
        #expect(set.succeeded && set.sentence == "Timer set for 10 minutes.")
        #expect(set.changes.map(\.kind) == [.set])
        #expect(book.nextTimerDeadline == t0 + 600)
        #expect(book.apply(.timeLeft(.the), now: t0 + 200).sentence == "6 minutes and 40 seconds left on the 10 minute timer.")
        #expect(book.due(now: t0 + 599).isEmpty)
        let rang = book.due(now: t0 + 600)
        #expect(rang.map(\.kind) == [.ringing] && book.ringing.count == 1 && book.nextTimerDeadline == nil)
        #expect(book.due(now: t0 + 601).isEmpty)  // each timer rings once
        #expect(book.stopRinging().map(\.kind) == [.stopped])
        #expect(book.timers.isEmpty)
    }

    /// A timer just set has its whole length left, whatever the clock reads: (now + 600) - now comes out a hair over
    /// 600 for about one reading in 700, and rounded up that was "10 minutes and 1 second" (the kiosk showed 10:01).
    @Test func aTimerJustSetHasItsWholeLengthLeft() {
        var over = 0
        for i in 0..<5_000 {
            let now: BootTime = 1000 + Double(i) * 0.0137
            if (now + 600) - now > 600 { over += 1 }
            var book = TimerBook()
            _ = book.apply(.set(seconds: 600, name: ""), now: now)
            #expect(book.timers.map { $0.remainingSeconds(at: now) } == [600], "at \(now)")
            #expect(book.apply(.timeLeft(.the), now: now).sentence == "10 minutes left on the 10 minute timer.")
            #expect(book.timers.map { $0.remainingSeconds(at: now + 0.0005) } == [600])  // half a millisecond later
            #expect(book.timers.map { $0.remainingSeconds(at: now + 0.002) } == [600])
            #expect(book.timers.map { $0.remainingSeconds(at: now + 1.002) } == [599])
        }
        #expect(over > 0)  // the readings do include ones that come out over
    }

    @Test func severalNamedTimersAreChosenByNameOrLength() {
        var book = TimerBook()
        #expect(book.apply(.set(seconds: 540, name: "pasta timer"), now: t0).sentence == "Pasta timer set for 9 minutes.")
        _ = book.apply(.set(seconds: 180, name: "eggs"), now: t0)
        #expect(!book.apply(.set(seconds: 60, name: "Pasta"), now: t0).succeeded)  // names are unique
        let which = book.apply(.cancel(.the), now: t0 + 10)
        #expect(!which.succeeded && which.sentence == "You have 2 timers: the pasta timer and the eggs timer. Which one?")
        #expect(book.apply(.timeLeft(.the), now: t0 + 60).sentence
                == "You have 2 timers: 8 minutes left on the pasta timer and 2 minutes left on the eggs timer.")
        #expect(book.apply(.cancel(.named("the eggs timer")), now: t0 + 60).sentence == "The eggs timer is cancelled.")
        #expect(book.apply(.cancel(.named("rice")), now: t0 + 60).sentence == "There's no rice timer.")
        #expect(book.apply(.cancel(.length(seconds: 540)), now: t0 + 60).succeeded)
        #expect(book.apply(.cancel(.the), now: t0).sentence == "There's no timer to cancel.")
    }

    @Test func pauseResumeAddAndReset() {
        var book = TimerBook()
        _ = book.apply(.set(seconds: 300, name: ""), now: t0)
        #expect(book.apply(.pause(.the), now: t0 + 100).sentence == "The 5 minute timer is paused.")
        #expect(book.nextTimerDeadline == nil)
        #expect(book.apply(.pause(.the), now: t0 + 150).sentence == "The 5 minute timer isn't running.")
        #expect(book.apply(.timeLeft(.the), now: t0 + 1000).sentence == "The 5 minute timer is paused with 3 minutes and 20 seconds left.")
        #expect(book.apply(.resume(.the), now: t0 + 1000).succeeded)
        #expect(book.nextTimerDeadline == t0 + 1200)
        #expect(book.apply(.addTime(seconds: 60, .the), now: t0 + 1100).sentence == "Added 1 minute: 2 minutes and 40 seconds left.")
        #expect(book.nextTimerDeadline == t0 + 1260)
        #expect(book.apply(.reset(.the), now: t0 + 1200).succeeded && book.nextTimerDeadline == t0 + 1500)
        #expect(!book.apply(.set(seconds: 0, name: ""), now: t0).succeeded)
        #expect(!book.apply(.set(seconds: 25 * 3600, name: ""), now: t0).succeeded)
    }

    @Test func aTimerDueWhileTheSpeakerWasOffRingsUnlessItIsLongPast() {
        var book = TimerBook()
        _ = book.apply(.set(seconds: 60, name: "tea"), now: t0)
        _ = book.apply(.set(seconds: 3600, name: "roast"), now: t0)
        let after = book.due(now: t0 + 60 + 16 * 60)  // tea fell due 16 minutes ago: missed, not rung
        #expect(after.map(\.kind) == [.missed] && after[0].timer.name == "tea")
        #expect(book.timers.map(\.name) == ["roast"])
        #expect(book.due(now: t0 + 3600 + 30).map(\.kind) == [.ringing])
    }

    @Test func savedAndReadBack() throws {
        var book = TimerBook()
        _ = book.apply(.set(seconds: 600, name: "pasta"), now: t0)
        _ = book.apply(.set(seconds: 60, name: ""), now: t0)
        _ = book.apply(.pause(.named("pasta")), now: t0 + 30)
        _ = book.due(now: t0 + 60)
        // Here t0 is on the monotonic clock; the wall clock reads something else altogether.
        let clocks = ClockReading(wall: 1_900_000_000, boot: t0 + 60, bootID: "b")
        let text = book.json(at: clocks).asciiJSON()
        var read = try TimerBook(json: try JSONValue(parsing: Data(text.utf8)), at: clocks)
        #expect(read == book)
        // New ids continue after the saved ones.
        #expect(read.apply(.set(seconds: 5, name: "x"), now: t0).changes[0].timer.id == 3)
        #expect(throws: TimerFileError.self) { try TimerBook(json: ["version": 2], at: clocks) }
        let odd = try TimerBook(json: ["version": 1, "timers": [["id": 1, "name": "a", "seconds": 5], ["id": 2, "name": "b", "seconds": 5, "endsAt": 9.0]]], at: clocks)
        #expect(odd.timers.map(\.name) == ["b"])  // a timer without a state is left out, the rest is kept
    }

    @Test func durationsInWords() {
        #expect(SpokenDuration.words(3930) == "1 hour, 5 minutes and 30 seconds")
        #expect(SpokenDuration.words(1) == "1 second")
        #expect(SpokenDuration.adjective(5400) == "1 hour 30 minute")
    }
}
