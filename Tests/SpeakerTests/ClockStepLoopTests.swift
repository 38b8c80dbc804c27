import AudioCore
import BoardCore
import JSONKit
import Testing
@testable import SpeakerCore
@testable import SpeakerRuntime
import SpeakerTestKit
import Timers

/// Issue #34: timers counted in wall-clock time. A Pi has no battery clock, so time sync steps its clock after a
/// boot or a power cut, just when people set timers: a 10-minute timer and a +1 h step was deleted as missed,
/// -1 h rang after 70 minutes, +60 s a minute early. Timers now count on the monotonic clock; alarms (times of day)
/// follow the wall clock, and one crossed by a step forward rings once. The manual clock steps its wall clock
/// alone (`stepWallClock`), as time sync does.
@Suite struct ClockStepLoopTests {
    func timerEvents(_ rig: LoopRig) -> [SpeakerActivity.TimerEvent] {
        rig.recorder.all.compactMap { if case .timer(let event, _, _) = $0 { event } else { nil } }
    }

    func alarmEvents(_ rig: LoopRig) -> [AlarmChange.Kind] {
        rig.recorder.all.compactMap { if case .alarm(let kind, _) = $0 { kind } else { nil } }
    }

    /// Waits for the minute's tick that tells `left` seconds.
    func tick(_ rig: LoopRig, left: Int, after mark: Int) async -> Bool {
        await rig.recorder.wait(after: mark) { if case .timer(.tick, _, remaining: left) = $0 { true } else { false } }
    }

    /// Moves the clock on `count` minutes, one at a time (the loop arms the next minute's tick once it has handled
    /// this one), each minute's tick seen with the time left, counted down from `left`.
    func minutes(_ rig: LoopRig, _ count: Int, from left: Int) async -> Bool {
        for minute in 1...count {
            let mark = rig.recorder.count
            await rig.advance(by: .seconds(60))
            guard await tick(rig, left: left - 60 * minute, after: mark) else { return false }
        }
        return true
    }

    @Test(arguments: [3600.0, -3600.0, 60.0])
    func aTenMinuteTimerRingsAfterTenMinutesWhateverTheWallClockDoes(step: Double) async {
        let rig = await LoopRig()
        await ask(rig, TimerLoopTests.setTimer(600, name: "pasta"))
        #expect(await minutes(rig, 1, from: 600))
        rig.clock.stepWallClock(by: step)
        // The next minute's tick counts on as if nothing happened (it once found the timer an hour late: missed).
        #expect(await minutes(rig, 1, from: 540))
        rig.clock.stepWallClock(by: step)  // and again, in the last minutes
        #expect(await minutes(rig, 7, from: 480))
        await rig.advance(by: .seconds(59))
        // One second before its ten minutes of monotonic time it is still running, with a second left.
        let snapshot = rig.loop.snapshot
        #expect(snapshot.timers.map { $0.isRunning } == [true] && snapshot.timers.first?.remainingSeconds(at: snapshot.now) == 1)
        #expect(!rig.states.contains(.ringing))
        let mark = rig.recorder.count
        await rig.advance(by: .seconds(1))
        #expect(await rig.saw(.stateChanged(from: .ready, to: .ringing), after: mark))
        #expect(await rig.send(.press, expecting: .ready))
        await rig.stop()
        #expect(timerEvents(rig) == [.set] + Array(repeating: .tick, count: 9) + [.ringing, .stopped])
    }

    /// "Wake me at 8:10" at 8:00 (the manual clock starts at 8:00 UTC), then steps of the wall clock.
    func setAlarm(_ rig: LoopRig, minuteOfDay: Int = 8 * 60 + 10) async {
        await ask(rig, SpeakerAnswer(transcript: "set an alarm", text: "", action: .alarm(.set(minuteOfDay: minuteOfDay, days: [], name: "")),
                                     responses: ActionResponses(succeeded: "", failed: "")))
        #expect(rig.timerStore.book?.alarms.count == 1)
    }

    /// Time sync steps the clock an hour forward across the alarm's time: it rings, once, within the minute (the
    /// wall clock is looked at every minute while an alarm is set), and is gone when stopped.
    @Test func anAlarmCrossedByAStepForwardRingsOnce() async {
        let rig = await LoopRig()
        await setAlarm(rig)
        let mark = rig.recorder.count
        await rig.advance(by: .seconds(60))
        rig.clock.stepWallClock(by: 3600)  // 8:01 becomes 9:01: 8:10 was crossed
        await rig.advance(by: .seconds(60))
        // Two minutes in by the monotonic clock: not ten minutes in, when 8:10 was once armed for (and then found
        // 50 minutes late, missed).
        #expect(await rig.saw(.stateChanged(from: .ready, to: .ringing), after: mark))
        #expect(await rig.send(.press, expecting: .ready))
        // A one-off: gone once stopped, so no later check or step can ring it again.
        #expect(rig.timerStore.book?.alarms.isEmpty == true)
        await rig.advance(by: .seconds(3600))
        rig.clock.stepWallClock(by: 3600)
        await rig.advance(by: .seconds(60))
        await rig.stop()  // what the advances set off is handled before the shutdown
        #expect(alarmEvents(rig) == [.set, .ringing, .stopped])
        #expect(rig.timerStore.book?.alarms.isEmpty == true)
    }

    /// An hour back: the alarm rings when the wall clock reads its time, not ten minutes of monotonic time after
    /// it was set; a minute forward: a minute sooner by the monotonic clock, as the clock on the wall says.
    @Test(arguments: [-3600.0, 60.0])
    func anAlarmFollowsTheWallClock(step: Double) async {
        let rig = await LoopRig()
        await setAlarm(rig)
        let mark = rig.recorder.count
        await rig.advance(by: .seconds(60))
        rig.clock.stepWallClock(by: step)
        let due = 9 * 60 - step  // seconds of monotonic time from here until the wall clock reads 8:10
        await rig.advance(by: .seconds(due - 1))
        let alarm = rig.loop.snapshot.alarms.first
        #expect(alarm.map { !$0.isRinging } == true)
        #expect(!rig.states.contains(.ringing))
        await rig.advance(by: .seconds(1))
        // Looked at within the minute: it rings by then, late by at most that minute.
        await rig.advance(by: .seconds(60))
        #expect(await rig.saw(.stateChanged(from: .ready, to: .ringing), after: mark))
        #expect(await rig.send(.press, expecting: .ready))
        await rig.stop()
        #expect(alarmEvents(rig) == [.set, .ringing, .stopped])
    }

    /// A restart in the same boot counts the time the speaker was off on the monotonic clock, whatever the wall
    /// clock did meanwhile; after a reboot the timer goes on with the time it had left when it was saved.
    @Test(arguments: [false, true])
    func aTimerOutlivesARestartByItsTimeLeft(newBoot: Bool) async {
        let first = await LoopRig()
        await ask(first, TimerLoopTests.setTimer(600, name: "roast"))
        await first.advance(by: .seconds(120))
        await first.stop()
        #expect(first.timerStore.file?["timers"]?[0]?["remaining"]?.doubleValue == 480)
        // Off for a minute, and the wall clock stepped an hour back meanwhile (that would once have added the hour).
        let rig = await LoopRig(clock: first.clock.restarted(after: .seconds(60), wallStep: -3600, newBoot: newBoot),
                                timerStore: first.timerStore)
        let left = newBoot ? 480 : 420
        #expect(await rig.recorder.wait { if case .timer(.tick, _, remaining: left) = $0 { true } else { false } })
        await rig.advance(by: .seconds(Double(left - 1)))
        #expect(rig.loop.snapshot.timers.first?.isRunning == true)
        let mark = rig.recorder.count
        await rig.advance(by: .seconds(1))
        #expect(await rig.saw(.stateChanged(from: .ready, to: .ringing), after: mark))
        await rig.stop()
        #expect(!rig.recorder.all.contains { if case .timer(.missed, _, _) = $0 { true } else { false } })
    }
}
