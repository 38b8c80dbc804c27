import AudioCore
import BoardCore
import Testing
@testable import SpeakerCore
import Timers

/// The core (`Speaker`) stepped by hand, with the clocks as the test sets them: timers, ringing, the screen and the
/// microphone as plain state tests, no loop, no polling (issue #38). The loop's wiring of the same is in
/// TimerLoopTests and ScreenLoopTests.
struct CoreRig {
    var speaker: Speaker
    /// The clocks start where ManualClock's do: 2027-01-15 08:00 UTC (a Friday), 5000 s after boot.
    var boot: BootTime = 5_000
    var wall: WallTime = 1_800_000_000

    init(settings: Speaker.Settings) { speaker = Speaker(settings: settings) }

    /// `dimAfter` in seconds; 0: never.
    init(keepsTimers: Bool = false, backlight: Bool = false, dimAfter: Double = 120) {
        var settings = Speaker.Settings()
        settings.keepsTimers = keepsTimers
        settings.canEnroll = true
        settings.backlight = backlight
        settings.screen.dimAfter = dimAfter
        settings.screen.dimLevel = 10
        speaker = Speaker(settings: settings)
    }

    var now: Speaker.Now {
        Speaker.Now(reading: ClockReading(wall: wall, boot: boot, bootID: "boot-1"), calendar: FixedOffsetCalendar(), clockSynchronized: true)
    }
    var state: SpeakerState { speaker.machine.state }

    @discardableResult mutating func step(_ input: Speaker.Input) -> [Speaker.Effect] { speaker.step(input, now: now) }
    @discardableResult mutating func step(_ event: SpeakerEvent) -> [Speaker.Effect] { speaker.step(event, now: now) }

    mutating func pass(_ seconds: Double) {
        boot += seconds
        wall += seconds
    }

    /// A core in `state`, got there the way the speaker gets there (ringing: a timer went off).
    static func inState(_ state: SpeakerState, keepsTimers: Bool = false) -> CoreRig {
        var rig = CoreRig(keepsTimers: keepsTimers)
        if state == .none { return rig }
        rig.step(.started)
        switch state {
        case .none, .ready: break
        case .recording: rig.step(.talk)
        case .searching: rig.step(.talk); rig.step(.endOfSpeech)
        case .speaking: rig.step(.talk); rig.step(.endOfSpeech); rig.step(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        case .ringing:
            rig.step(.carryOut(.timer(.set(seconds: 1, name: ""))))
            rig.pass(1)
            rig.step(.timersDue)
        case .enrolling:
            rig.step(.microphone(.opened(device: "default", rate: 16_000, channels: 1)))
            rig.step(.startEnrollment(phrase: nil, defaultPhrase: "OK Hound", unavailable: nil, fromButton: false))
        }
        #expect(rig.state == state)
        return rig
    }
}

/// The effects that come from the machine: all but the core's own (saves, activities, its timers, the screen).
func machineEffects(_ effects: [Speaker.Effect]) -> [Speaker.Effect] {
    effects.filter {
        switch $0 {
        case .saveTimers, .tell, .soundOn, .armTimerAlarm, .armTimerTick, .armTimersSaveRetry, .armScreenIdle, .armNetworkCheck,
             .setScreen, .final, .finalWithNextWords, .openAlwaysOnMicrophone: false
        default: true
        }
    }
}

func told(_ effects: [Speaker.Effect]) -> [SpeakerActivity] {
    effects.compactMap { if case .tell(let activity) = $0 { activity } else { nil } }
}

func timerEvents(_ effects: [Speaker.Effect]) -> [SpeakerActivity.TimerEvent] {
    told(effects).compactMap { if case .timer(let event, _, _) = $0 { event } else { nil } }
}

/// The inputs that come from the loop's own timers and ports, not from the machine's events.
let coreInputs: [Speaker.Input] = [
    .timersDue, .timerTick, .retryTimersSave, .timersSaved(nil, .init()),
    .timersSaved(DeviceProblem("timers: disk full"), .init(afterChange: true, caveat: Speaker.setButNotSaved)),
    .timersRestored(changes: [], alarms: [], ringing: false), .wakeScreen, .screenIdle, .screenLightFailed,
    .microphone(.opened(device: "default", rate: 16_000, channels: 1)), .microphone(.lost("unplugged")), .microphone(.overrun),
    .microphone(.recovered), .microphone(.stopped), .volumeChanged(.to(40), .success(VolumeLevel(percent: 40))),
    .volumeChanged(.step(up: true), .failure(DeviceProblem("mixer: card 1 is gone"))), .networkChecked(true), .networkChecked(false),
]

@Suite struct SpeakerStepTests {
    static func setTimer(_ seconds: Int, name: String = "", said: String = "") -> SpeakerAnswer {
        SpeakerAnswer(transcript: "set a timer", text: "", action: .timer(.set(seconds: seconds, name: name)),
                      responses: ActionResponses(succeeded: said, failed: "I couldn't set the timer."))
    }

    // MARK: Every state, every input of the core's own

    /// With no timer set, none of the core's own inputs changes the state; the screen's, a save's result, the
    /// light's failure and a volume change's report never ask anything of the machine: they say what a port did.
    @Test(arguments: SpeakerState.allCases)
    func everyCoreInputInEveryState(state: SpeakerState) {
        for input in coreInputs {
            var rig = CoreRig.inState(state)
            let book = rig.speaker.timers
            let effects = rig.step(input)
            // A microphone lost ends a spoken enrollment: no frames, no take.
            if state == .enrolling, case .microphone(.lost) = input {
                #expect(rig.state == .ready && rig.speaker.machine.enrollment == nil)
                continue
            }
            // A question being recorded fails (AudioInterrupted): said, nothing half-recorded sent.
            if state == .recording, case .microphone(.lost) = input {
                #expect(rig.state == .speaking && effects.contains(.cancelSearch))
                continue
            }
            #expect(rig.state == state, "\(state) + \(input)")
            switch input {
            case .wakeScreen, .screenIdle, .screenLightFailed, .timersSaved, .microphone, .volumeChanged:
                #expect(machineEffects(effects).isEmpty, "\(state) + \(input): \(effects)")
            default: break
            }
            #expect(rig.speaker.timers == book, "\(state) + \(input)")
        }
    }

    /// The screen dims only in ready, and its quiet time is counted only there.
    @Test(arguments: SpeakerState.allCases)
    func theScreenDimsOnlyWhenReady(state: SpeakerState) {
        var rig = CoreRig.inState(state)
        #expect(rig.step(.wakeScreen) == [.armScreenIdle(state == .ready ? .seconds(120) : nil)])
        let dim = rig.step(.screenIdle)
        #expect(dim == (state == .ready ? [.setScreen(percent: 10, backlight: false)] : []))
        #expect(rig.speaker.screen == .init(dimmed: state == .ready, percent: state == .ready ? 10 : 100, backlight: false))
        #expect(rig.step(.screenIdle).isEmpty, "already dimmed, or busy")
    }

    // MARK: Timers and ringing

    @Test func aTimerSetByVoiceTicksRingsAndAPressStopsIt() {
        var rig = CoreRig.inState(.ready, keepsTimers: true)
        rig.step(.talk)
        rig.step(.endOfSpeech)
        let set = rig.step(.answer(Self.setTimer(600, name: "pasta", said: "Pasta timer, ten minutes, starting now.")))
        let book = rig.speaker.timers
        #expect(book.timers.map(\.name) == ["pasta"])
        // Saved and armed first, told after; the sentence comes once the save's result is in (its caveat).
        let save = Speaker.Effect.saveTimers(book, .init(afterChange: true, caveat: Speaker.setButNotSaved))
        let speak = set.firstIndex(saying: .actionOutcome(Self.setTimer(600, said: "Pasta timer, ten minutes, starting now.").responses))
        #expect(set.firstIndex(of: save).map { $0 < speak! } == true)
        #expect(set.contains(.armTimerAlarm(.seconds(600))) && set.contains(.armTimerTick(.seconds(60))))
        #expect(timerEvents(set) == [.set])
        #expect(rig.speaker.lastActionOutcome?.result == .changed(1))
        #expect(machineEffects(rig.endSpeech(.finished)).contains(.leds(.timer)))  // ready, counting down
        for minute in 1...9 {  // a tick a minute, saved with the time left
            rig.pass(60)
            let tick = rig.step(.timerTick)
            #expect(tick.first == .saveTimers(rig.speaker.timers, .init()))
            #expect(told(tick).contains { if case .timer(.tick, _, remaining: 600 - 60 * minute) = $0 { true } else { false } })
        }
        rig.pass(60)
        let ring = rig.step(.timersDue)
        #expect(rig.state == .ringing)
        #expect(timerEvents(ring) == [.ringing])
        #expect(ring.contains(.soundOn))  // heard even with the sound switched off by voice
        #expect(machineEffects(ring).plays(.timer))
        let press = rig.step(.press)
        #expect(rig.state == .ready)
        #expect(timerEvents(press) == [.stopped])
        #expect(rig.speaker.timers.timers.isEmpty)
        #expect(!machineEffects(press).contains { if case .startSearch = $0 { true } else { false } })  // a press while ringing only stops it
        #expect(machineEffects(press).contains(.leds(.ready)))  // no timer left: plain ready again
    }

    @Test func ringingStopsByItselfAfterItsLimit() {
        var rig = CoreRig.inState(.ready)
        rig.step(.carryOut(.timer(.set(seconds: 60, name: ""))))
        rig.pass(60)
        let ring = rig.step(.timersDue)
        let generation = rig.speaker.machine.watchdogGeneration
        #expect(machineEffects(ring).contains(.armWatchdog(generation: generation, ms: 15 * 60_000)))
        let effects = rig.step(.watchdog(generation: rig.speaker.machine.watchdogGeneration))
        #expect(rig.state == .ready)
        #expect(timerEvents(effects) == [.stopped])
        #expect(rig.speaker.timers.timers.isEmpty)
    }

    /// The core alone says whether a watchdog expired: the one armed for the state the speaker is in is told (before
    /// what it leads to); one armed for a state already left (it fired just as the state changed) changes nothing.
    @Test func onlyTheCurrentWatchdogExpires() {
        var rig = CoreRig.inState(.recording)
        let stale = rig.speaker.machine.watchdogGeneration
        rig.step(.endOfSpeech)
        #expect(rig.state == .searching)
        #expect(rig.step(.watchdog(generation: stale)).isEmpty)
        #expect(rig.state == .searching)
        let effects = rig.step(.watchdog(generation: rig.speaker.machine.watchdogGeneration))
        #expect(told(effects).first == .watchdogExpired(.searching, limitMS: SpeakerMachine.Settings().searchingLimitMS))
        #expect(machineEffects(effects).first == .cancelSearch)
        #expect(rig.state == .speaking)  // the failure's sentence
    }

    /// Why a question was dropped is the core's to word, in the step that drops it: the expired watchdog says how
    /// long the answer was waited for; a stale one leaves the last step's reason; a press says the button.
    @Test func theCoreWordsWhyAQuestionWasDropped() {
        var rig = CoreRig.inState(.recording)
        let stale = rig.speaker.machine.watchdogGeneration
        rig.step(.endOfSpeech)
        #expect(rig.speaker.dropReason == "it was stopped before its answer came")
        rig.step(.watchdog(generation: stale))
        #expect(rig.speaker.dropReason == "it was stopped before its answer came")
        let limit = SpeakerMachine.Settings().searchingLimitMS / 1000
        rig.step(.watchdog(generation: rig.speaker.machine.watchdogGeneration))
        #expect(rig.speaker.dropReason == "no answer came within \(limit) s")
        var pressed = CoreRig.inState(.searching)
        #expect(machineEffects(pressed.step(.press)).contains(.cancelSearch))
        #expect(pressed.speaker.dropReason == "the button (or the listen command) started another question")
    }

    /// The LEDs show the time left: ticks while a timer counts down, quicker ticks in its last minute.
    @Test func theLastMinuteShowsOnTheLEDs() {
        var rig = CoreRig.inState(.ready)
        let set = rig.step(.carryOut(.timer(.set(seconds: 90, name: ""))))
        #expect(machineEffects(set).contains(.leds(.timer)))
        #expect(set.contains(.armTimerTick(.seconds(30))), "armed for the last minute's start")
        rig.pass(29)
        #expect(!machineEffects(rig.step(.timerTick)).contains(.leds(.timerEnding)))
        rig.pass(1)
        #expect(machineEffects(rig.step(.timerTick)).contains(.leds(.timerEnding)))
        #expect(machineEffects(rig.step(.timerTick)).isEmpty, "told once")
        rig.pass(60)
        rig.step(.timersDue)
        #expect(rig.state == .ringing)
    }

    @Test func aTimerDueDuringAQuestionRingsOnceItIsAnswered() {
        var rig = CoreRig.inState(.ready)
        rig.step(.carryOut(.timer(.set(seconds: 10, name: ""))))
        rig.step(.talk)
        rig.pass(10)
        #expect(timerEvents(rig.step(.timersDue)) == [.ringing])
        #expect(rig.state == .recording)  // the timer has gone off, and the question goes on
        rig.step(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        #expect(rig.state == .speaking)
        let ended = rig.endSpeech(.finished)
        #expect(rig.state == .ringing)
        #expect(machineEffects(ended).contains(.stateChanged(from: .ready, to: .ringing)))
    }

    /// The ringing timer cancelled from the screen: nothing is left to ring for, and the ring stops with the same
    /// event. Another timer cancelled meanwhile leaves it ringing.
    @Test func aRingWithNothingLeftToRingForStops() {
        var rig = CoreRig.inState(.ringing)
        rig.step(.carryOut(.timer(.set(seconds: 600, name: "tea"))))
        rig.step(.carryOut(.timer(.cancel(.named("tea")))))
        #expect(rig.state == .ringing)
        let cancel = rig.step(.carryOut(.timer(.cancel(.all))))
        #expect(rig.state == .ready)
        #expect(machineEffects(cancel).contains(.stopSpeaking))
        #expect(rig.speaker.timers.timers.isEmpty)
    }

    @Test func timeLeftIsTheBooksOwnCountAndAFailureSaysWhy() {
        var rig = CoreRig.inState(.ready)
        rig.step(.carryOut(.timer(.set(seconds: 600, name: ""))))
        rig.pass(190)
        rig.step(.carryOut(.timer(.timeLeft(.the))))
        #expect(rig.speaker.lastActionOutcome == ActionOutcome(.told, sentence: "6 minutes and 50 seconds left on the 10 minute timer."))
        rig.step(.carryOut(.timer(.cancel(.named("rice")))))
        #expect(rig.speaker.lastActionOutcome?.sentence == "There's no rice timer.")
    }

    @Test func anAlarmRingsAtItsTimeAndARepeatingOneWaitsForItsNextDay() {
        var rig = CoreRig.inState(.ready)
        let set = rig.step(.carryOut(.alarm(.set(minuteOfDay: 8 * 60 + 5, days: [.friday], name: ""))))
        #expect(set.contains(.armTimerAlarm(.seconds(60))), "the wall clock is looked at every minute")
        rig.pass(4 * 60)
        #expect(told(rig.step(.timersDue)).isEmpty)
        rig.pass(60)
        rig.step(.timersDue)
        #expect(rig.state == .ringing)
        let stopped = told(rig.step(.press)).compactMap { activity -> Double? in
            if case .alarm(.stopped, let alarm) = activity, case .scheduled(let at) = alarm.status { at } else { nil }
        }
        let nextFriday: WallTime = 1_800_000_000 + 7 * 86_400 + 5 * 60
        #expect(stopped == [nextFriday])  // 8:05 again, a week on
    }

    /// What fell due while the speaker was off rings at the start; what still counts down is told at once.
    @Test func whatTheRestartFoundIsToldAndRings() {
        var book = TimerBook()
        _ = book.apply(.set(seconds: 600, name: "roast"), now: 4_900)
        var rig = CoreRig()
        rig.speaker.restore(timers: book, checkedAt: rig.boot, muted: false)
        rig.step(.started)
        let started = rig.step(.timersRestored(changes: [], alarms: [], ringing: true))
        #expect(told(started) == [.timer(.tick, book.timers[0], remaining: 500)])
        #expect(started.contains(.soundOn))
        #expect(rig.state == .ringing)
    }

    // MARK: Saving

    /// Issue #34: a change that could not be saved is said after its confirmation, told once for a screen, and
    /// tried again every minute until a save works.
    @Test func aChangeThatCouldNotBeSavedIsSaidAndTriedAgain() {
        let full = DeviceProblem("timers: cannot write timers.json: No space left on device")
        var rig = CoreRig.inState(.ready, keepsTimers: true)
        let set = rig.step(.carryOut(.timer(.set(seconds: 600, name: "soup"))))
        let save = Speaker.TimersSave(afterChange: true, caveat: Speaker.setButNotSaved)
        #expect(set.first == .saveTimers(rig.speaker.timers, save))
        let failed = rig.step(.timersSaved(full, save))
        #expect(failed == [.armTimersSaveRetry(Speaker.timersSaveRetryInterval), .tell(.timersSaved(problem: full.message)),
                           .tell(.deviceProblem(DeviceProblem("\(full.message); a restart would lose the timers' last change")))])
        #expect(rig.speaker.lastActionOutcome?.caveat == Speaker.setButNotSaved)
        #expect(rig.speaker.timersSaveProblem == full)
        #expect(rig.step(.retryTimersSave) == [.saveTimers(rig.speaker.timers, .init())])
        #expect(rig.step(.timersSaved(full, .init())) == [.armTimersSaveRetry(Speaker.timersSaveRetryInterval)], "told once")
        #expect(rig.step(.timersSaved(nil, .init())) == [.armTimersSaveRetry(nil), .tell(.timersSaved(problem: nil))])
        #expect(rig.speaker.timersSaveProblem == nil)
        // A cancel that could not be saved would come back after a restart.
        let cancel = rig.step(.carryOut(.timer(.cancel(.named("soup")))))
        #expect(cancel.first == .saveTimers(rig.speaker.timers, .init(afterChange: true, caveat: Speaker.changedButNotSaved)))
    }

    @Test func withoutAStoreNothingIsSaved() {
        var rig = CoreRig.inState(.ready)
        let effects = rig.step(.carryOut(.timer(.set(seconds: 600, name: ""))))
        rig.pass(60)
        let all = effects + rig.step(.timerTick) + rig.step(.retryTimersSave)
        #expect(!all.contains { if case .saveTimers = $0 { true } else { false } })
    }

    // MARK: The screen and the microphone

    @Test func aTouchBrightensTheScreenAndStartsTheQuietTimeAgain() {
        var rig = CoreRig.inState(.ready)
        rig.step(.screenIdle)
        #expect(rig.speaker.screen.dimmed)
        #expect(rig.step(.wakeScreen) == [.setScreen(percent: 100, backlight: false), .armScreenIdle(.seconds(120))])
        #expect(rig.speaker.screen == .init(dimmed: false, percent: 100, backlight: false))
        #expect(rig.step(.wakeScreen) == [.armScreenIdle(.seconds(120))], "bright already: only the countdown again")
    }

    /// A backlight that fails once is not tried again: the page dims its own picture.
    @Test func aBacklightThatFailsIsNotTriedAgain() {
        var rig = CoreRig(backlight: true)
        rig.step(.started)
        #expect(rig.speaker.screen.backlight)
        #expect(rig.step(.screenIdle) == [.setScreen(percent: 10, backlight: true)])
        rig.step(.screenLightFailed)
        #expect(rig.step(.wakeScreen).first == .setScreen(percent: 100, backlight: false))
        #expect(rig.speaker.screen.backlight == false)
    }

    @Test func neverDimsWhenSwitchedOff() {
        var rig = CoreRig(dimAfter: 0)
        rig.step(.started)
        #expect(rig.step(.wakeScreen) == [.armScreenIdle(nil)])
    }

    @Test func theMicrophoneIsUpFromItsOwnEventsAndDownWhenMuted() {
        var rig = CoreRig.inState(.ready)
        #expect(!rig.speaker.microphoneUp)
        rig.step(.microphone(.opened(device: "default", rate: 16_000, channels: 1)))
        #expect(rig.speaker.microphoneUp)
        rig.step(.microphone(.lost("unplugged")))
        #expect(!rig.speaker.microphoneUp)
        rig.step(.microphone(.recovered))
        #expect(rig.speaker.microphoneUp)
        rig.step(.toggleMute)
        #expect(!rig.speaker.microphoneUp)
    }
}
