import AudioCore
import BoardCore
import Testing
@testable import SpeakerCore
@testable import SpeakerRuntime
import SpeakerTestKit
import Timers

/// A question answered with `answer`, and its speech played to the end (the timer and client-action suites).
func ask(_ rig: LoopRig, _ answer: SpeakerAnswer) async {
    let session = await rig.askQuestion()
    let mark = rig.recorder.count
    session?.send(.answer(answer))
    #expect(await rig.saw(.leds(.speaking), after: mark))
    await rig.endSpeech()
}

/// Timers through the whole loop on fakes and a manual clock: a 10-minute timer is set by voice, ticks, rings and
/// is stopped in milliseconds of test time. What the timers decide (the last minute, a ring during a question, a
/// ring that stops by itself) is tested on the core alone, in SpeakerStepTests; these prove the wiring.
@Suite struct TimerLoopTests {
    static func setTimer(_ seconds: Int, name: String = "", said: String = "") -> SpeakerAnswer {
        SpeakerAnswer(transcript: "set a timer", text: "", action: .timer(.set(seconds: seconds, name: name)),
                      responses: ActionResponses(succeeded: said, failed: "I couldn't set the timer."))
    }

    func timerEvents(_ rig: LoopRig) -> [SpeakerActivity.TimerEvent] {
        rig.recorder.all.compactMap { if case .timer(let event, _, _) = $0 { event } else { nil } }
    }

    @Test func aTimerSetByVoiceTicksRingsAndAPressStopsIt() async throws {
        let rig = await LoopRig()
        await ask(rig, Self.setTimer(600, name: "pasta", said: "Pasta timer, ten minutes, starting now."))
        #expect(rig.speech.spoken == ["Pasta timer, ten minutes, starting now."])  // Houndify's words for what was done
        #expect(await rig.saw(.leds(.timer)))  // ready, with a timer counting down
        #expect(rig.timerStore.book?.timers.map(\.name) == ["pasta"])  // saved at once
        for minute in 1...9 {  // a tick a minute, with the time left
            let mark = rig.recorder.count
            await rig.advance(by: .seconds(60))
            #expect(await rig.recorder.wait(after: mark) { if case .timer(.tick, _, remaining: 600 - 60 * minute) = $0 { true } else { false } })
        }
        await rig.advance(by: .seconds(59))
        #expect(rig.loop.currentState == .ready)
        let mark = rig.recorder.count
        await rig.advance(by: .seconds(1))
        #expect(await rig.saw(.stateChanged(from: .ready, to: .ringing), after: mark))
        #expect(await rig.saw(.leds(.ringing), after: mark))
        #expect(rig.speech.earcons.last == .timer)
        // The ring goes round until someone comes.
        let rings = rig.speech.earcons.filter { $0 == .timer }.count
        rig.speech.endEarcons()
        #expect(await rig.eventually { rig.speech.earcons.filter { $0 == .timer }.count == rings + 1 })
        let searches = rig.search.sessions.count
        #expect(await rig.send(.press, expecting: .ready))
        #expect(rig.speech.playingCount == 0)  // the ring stopped at once
        #expect(rig.timerStore.book?.timers.isEmpty == true)
        // A press while ringing only stops it: it starts no question.
        #expect(rig.search.sessions.count == searches)
        await rig.stop()
        #expect(timerEvents(rig) == [.set] + Array(repeating: .tick, count: 9) + [.ringing, .stopped])
        #expect(rig.states == [.ready, .recording, .speaking, .ready, .ringing, .ready, .none])
    }

    @Test func aTimerOutlivesARestart() async {
        let first = await LoopRig()
        await ask(first, Self.setTimer(600, name: "roast"))
        await first.advance(by: .seconds(120))
        await first.stop()
        // The same speaker, started again two minutes later in the same boot: the monotonic clock counted them.
        let rig = await LoopRig(clock: first.clock.restarted(after: .seconds(120)), timerStore: first.timerStore)
        #expect(await rig.saw(.leds(.timer)))
        await rig.advance(by: .seconds(359))
        #expect(!rig.recorder.all.contains(.leds(.ringing)))
        await rig.advance(by: .seconds(1))
        #expect(await rig.saw(.leds(.ringing)))
        await rig.stop()
        // Shut down while ringing: it is still ringing after the next start (within 15 minutes).
        let again = await LoopRig(clock: rig.clock.restarted(after: .seconds(30)), timerStore: first.timerStore)
        #expect(await again.saw(.stateChanged(from: .ready, to: .ringing)))
        await again.stop()
    }

    @Test func timeLeftIsTheSpeakersOwnCount() async {
        let rig = await LoopRig()
        await ask(rig, Self.setTimer(600))
        await rig.advance(by: .seconds(190))
        await ask(rig, SpeakerAnswer(transcript: "how much time is left", text: "", action: .timer(.timeLeft(.the)),
                                     responses: ActionResponses(succeeded: "Here is your timer.")))
        #expect(rig.speech.spoken.last == "6 minutes and 50 seconds left on the 10 minute timer.")
        // A command that fails says why, in the speaker's words.
        await ask(rig, SpeakerAnswer(transcript: "cancel the rice timer", text: "", action: .timer(.cancel(.named("rice"))),
                                     responses: ActionResponses(succeeded: "Timer cancelled.", failed: "I couldn't cancel it.")))
        #expect(rig.speech.spoken.last == "There's no rice timer.")
        await rig.stop()
    }
}

/// Mute (privacy) through the loop: the double press, the microphone released, a press answered, the setting kept.
@Suite struct MuteLoopTests {
    /// A mute switch on its own line: on mutes, off unmutes; its position decides at start, not the saved setting.
    @Test func aMuteSwitchMutesAndItsPositionWinsAtStart() async {
        let store = FakeFlagStore()
        try? store.save(true)  // muted when it last stopped
        let rig = await LoopRig(hotPhrase: true, muteStore: store, muteSwitch: true)
        #expect(!rig.recorder.all.contains(.muted(true)))  // the switch has not said so
        #expect(await rig.eventually { rig.microphone.openStreams == 1 })
        rig.board.press(.muteSwitch(on: true))
        #expect(await rig.saw(.muted(true)))
        #expect(await rig.eventually { rig.microphone.openStreams == 0 })
        rig.board.press(.muteSwitch(on: false))
        #expect(await rig.saw(.muted(false)))
        #expect(await rig.eventually { rig.microphone.openStreams == 1 })
        await rig.stop()
    }

    @Test func aDoublePressMutesAndReleasesTheMicrophoneAndAPressSaysSo() async {
        let store = FakeFlagStore()
        let rig = await LoopRig(hotPhrase: true, muteStore: store)
        #expect(await rig.eventually { rig.microphone.openStreams == 1 })  // listening for the hot phrase
        var mark = rig.recorder.count
        rig.board.press(.doublePress)
        #expect(await rig.saw(.leds(.muted), after: mark))
        #expect(await rig.saw(.muted(true), after: mark))
        #expect(rig.microphone.openStreams == 0 && store.value == true)
        #expect(rig.speech.earcons.last == .muteOn)
        // A press while muted is answered, and opens nothing.
        mark = rig.recorder.count
        rig.board.press(.press)
        #expect(await rig.saw(.leds(.speaking), after: mark))
        #expect(rig.speech.spoken.last == SpeakerMachine.mutedSentence)
        #expect(rig.search.sessions.isEmpty && rig.microphone.openStreams == 0)
        await rig.endSpeech()
        #expect(await rig.saw(.leds(.muted), after: mark))
        mark = rig.recorder.count
        rig.board.press(.doublePress)
        #expect(await rig.saw(.leds(.ready), after: mark))
        #expect(await rig.eventually { rig.microphone.openStreams == 1 } && store.value == false)
        #expect(rig.speech.earcons.last == .muteOff)
        await rig.stop()
    }

    @Test func muteOutlivesARestart() async {
        let store = FakeFlagStore()
        let first = await LoopRig(hotPhrase: true, muteStore: store)
        first.loop.send(.toggleMute)
        #expect(await first.saw(.leds(.muted)))
        await first.stop()
        let rig = await LoopRig(hotPhrase: true, muteStore: store)
        #expect(await rig.saw(.leds(.muted)))
        #expect(rig.microphone.openStreams == 0 && rig.microphone.opens == 0)  // never opened at all
        await rig.stop()
    }
}

/// Alarms through the loop: set by voice, ringing at their time of day, stopped by a press, a repeating one set
/// again for its next day. The manual clock starts at 2027-01-15 08:00 UTC (a Friday), on a UTC calendar.
@Suite struct AlarmLoopTests {
    @Test func anAlarmRingsAtItsTimeAndARepeatingOneWaitsForItsNextDay() async {
        let rig = await LoopRig()
        let session = await rig.askQuestion()
        var mark = rig.recorder.count
        session?.send(.answer(SpeakerAnswer(transcript: "wake me at 8:05 on fridays", text: "",
                                                      action: .alarm(.set(minuteOfDay: 8 * 60 + 5, days: [.friday], name: "")))))
        #expect(await rig.saw(.leds(.speaking), after: mark))
        #expect(rig.speech.spoken.last == "The alarm for 8:05 AM every Friday is set.")
        await rig.endSpeech()
        mark = rig.recorder.count
        await rig.advance(by: .seconds(5 * 60))
        #expect(await rig.saw(.stateChanged(from: .ready, to: .ringing), after: mark))
        #expect(rig.speech.earcons.last == .timer)
        #expect(await rig.send(.press, expecting: .ready))
        let next = rig.recorder.all.compactMap { activity -> Double? in
            if case .alarm(.stopped, let alarm) = activity, case .scheduled(let at) = alarm.status { at } else { nil }
        }
        // Stopped, and set again for next Friday at 8:05.
        let nextFriday: Double = 1_800_000_000 + 7 * 86_400 + 5 * 60
        #expect(next == [nextFriday])
        #expect(rig.timerStore.book?.alarms.count == 1)
        await rig.stop()
    }
}
