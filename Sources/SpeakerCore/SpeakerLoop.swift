public import AudioCore
import BoardCore
public import Logging
import Synchronization
import Timers

/// What the loop drives, each behind its port.
public struct SpeakerPorts: Sendable {
    public var search: any VoiceSearchService
    public var speech: any SpeechOutputPort
    public var volume: any VolumeControl
    public var microphone: any MicrophonePort
    public var board: (any BoardPort)?
    public var hotPhrase: (any HotPhraseDetecting)?
    public var clock: any LoopClock
    public var system: any SystemInfo
    /// Where timers are saved; nil keeps them in memory only.
    public var timerStore: (any TimerStore)?
    /// Where mute is remembered; nil: every start is unmuted.
    public var muteStore: (any FlagStore)?
    /// Runs the owner's commands; nil: none can run.
    public var commands: (any CommandPort)?
    /// The screen's backlight; nil: the kiosk page dims its own picture instead.
    public var screen: (any ScreenLight)?
    /// Checks and keeps the takes of a spoken enrollment; nil: the speaker cannot learn voices.
    public var enrollment: (any EnrollmentPort)?

    public init(search: any VoiceSearchService, speech: any SpeechOutputPort, volume: any VolumeControl,
                microphone: any MicrophonePort, board: (any BoardPort)? = nil, hotPhrase: (any HotPhraseDetecting)? = nil,
                clock: any LoopClock, system: any SystemInfo, timerStore: (any TimerStore)? = nil,
                muteStore: (any FlagStore)? = nil, commands: (any CommandPort)? = nil, screen: (any ScreenLight)? = nil,
                enrollment: (any EnrollmentPort)? = nil) {
        self.enrollment = enrollment
        self.commands = commands
        self.screen = screen
        self.timerStore = timerStore
        self.muteStore = muteStore
        self.search = search
        self.speech = speech
        self.volume = volume
        self.microphone = microphone
        self.board = board
        self.hotPhrase = hotPhrase
        self.clock = clock
        self.system = system
    }
}

/// Liveness for a service manager (systemd's `WatchdogSec=`). The beat runs on the loop, taken from the loop's
/// own queue, so the beats stop when the loop is stuck (a blocked effect, a deadlock), not only when the process
/// dies, and systemd restarts a speaker that no longer answers.
public struct LoopHeartbeat: Sendable {
    /// Time between beats; nil: one beat only, when the loop starts.
    public var interval: Duration?
    /// Runs on the loop. The first call comes right after the loop has handled `started`: the speaker is ready.
    public var beat: @Sendable () -> Void

    public init(interval: Duration?, beat: @escaping @Sendable () -> Void) {
        self.interval = interval
        self.beat = beat
    }
}

public struct SpeakerLoopSettings: Sendable {
    public var machine = SpeakerMachine.Settings()
    public var endpointer = Endpointer.Settings()
    /// Audio kept from before a hot phrase, for the query.
    public var preRollMS = 300
    public var heartbeat: LoopHeartbeat?
    /// When the screen dims and how far (`[screen]`).
    public var screen = ScreenSettings()
    public init() {}
}

/// The speaker: one loop consuming every input (button, endpointer, voice search, speech, timers) in order,
/// handing it to the core (`Speaker`: the state machine, the timers, the screen), which decides, and carrying out
/// the effects through the ports. Blocking work stays on the threads the ports' drivers own. Everything it does is
/// told once, as a `SpeakerActivity`, to the log and to the observers.
public final class SpeakerLoop: Sendable {
    let ports: SpeakerPorts
    private let settings: SpeakerLoopSettings
    let logger: Logger
    private let observers: [@Sendable (SpeakerActivity) -> Void]
    private let inputs: AsyncStream<LoopInput>
    let continuation: AsyncStream<LoopInput>.Continuation
    let router: CaptureRouter
    private let pulse: any LoopTimer
    /// Set for the moment the next timer is due.
    private let timerAlarm: any LoopTimer
    /// Every minute while a timer counts down: the `tick` activity.
    private let timerTick: any LoopTimer
    /// When the screen dims, armed whenever the speaker becomes ready.
    private let screenIdle: any LoopTimer
    /// Set while the timers could not be saved: the save is tried again.
    private let timersSaveRetry: any LoopTimer
    /// Set while the speaker is offline: the next light check of the service (`reachable`).
    private let networkCheck: any LoopTimer
    let state: Mutex<LoopState>
    /// What the speaker holds, published by the loop after each step of the core (`publish`), for other threads
    /// (`snapshot`): they read this, never the loop's state.
    let published: Mutex<SpeakerSnapshot>
    private let history = Mutex<[InteractionTimings]>([])
    private let stateLog = Mutex<[SpeakerState]>([])

    /// How many interactions and states are remembered.
    public static let historyLimit = 1000
    /// Offline, the service is checked this long after the failure, then at twice the last wait, up to the longest:
    /// back within seconds after a blink, and no more than a request a minute through a long outage.
    public static let networkCheckFirst = Duration.seconds(5)
    public static let networkCheckLongest = Duration.seconds(60)

    /// The last completed interactions' timings, oldest first (for the benchmark and tests).
    public var interactions: [InteractionTimings] { history.withLock { $0 } }
    /// Every state entered, in order (for tests and `demo`).
    public var statesEntered: [SpeakerState] { stateLog.withLock { $0 } }

    /// The loop's own state. Other threads read only `published`; besides the loop, only the speech thread's
    /// first-sample callback (`timings`) and the making of the loop (`readSavedState`, before `run`) touch this.
    struct LoopState {
        /// The speaker's decisions (Speaker.swift): the state machine, the timers, the screen, the microphone's
        /// state, the last action's outcome. The loop only carries out what `step` returns.
        var speaker: Speaker
        var search: (any VoiceSearchSession)?
        /// The watchdog now armed (`armWatchdog`): made for its arming, it brings the generation it was armed with.
        var watchdog: (any LoopTimer)?
        var searchID = 0
        /// The microphone opened for one question (no hot phrase), or for good (listening for the hot phrase).
        var questionMicrophone: (any MicrophoneStream)?
        var alwaysOnMicrophone: (any MicrophoneStream)?
        /// When the latest hot-phrase wake started its question (for `FalseWake.kept`).
        var lastWake: ContinuousClock.Instant?
        var timings: InteractionTimings?
        /// The `final` of an answer whose words the speaker chooses itself (a client action's outcome, the volume,
        /// the IP address): told with those words, once they are known (`tellPendingFinal`).
        var pendingFinal: (transcript: String, done: String)?
        /// The typed question whose search is under way, when someone waits for it (its id is not 0).
        var question: (id: Int, query: String)?
        /// What stopped a question now, if the event being handled does (`dropReason`).
        var dropReason = ""
        /// What reading the saved state found, for the start to tell and carry out (nil once it has).
        var startup: Startup?
        /// The wait before the network check now armed or under way (nil: none is).
        var networkCheckDelay: Duration?
        /// The spoken enrollment under way (LoopEnrollment.swift), and the last one's progress for the status.
        var enrolling: Enrolling?
        var enrollmentCount = 0
    }

    /// The saved state as read when the loop is made (readSavedState), and what it leads to at the start.
    struct Startup {
        var muted = false
        var muteProblem: DeviceProblem?
        var timerProblems: [DeviceProblem] = []
        /// What the restart did to the timers and alarms (missed, ringing), told and saved at the start.
        var changes: [TimerChange] = []
        var alarms: [AlarmChange] = []
        var ringing = false
    }

    public init(ports: SpeakerPorts, settings: SpeakerLoopSettings = .init(), logger: Logger,
                observers: [@Sendable (SpeakerActivity) -> Void] = []) {
        self.ports = ports
        self.settings = settings
        self.logger = logger
        self.observers = observers
        (inputs, continuation) = AsyncStream.makeStream(of: LoopInput.self, bufferingPolicy: .unbounded)
        let continuation = self.continuation
        let clock = ports.clock
        router = CaptureRouter(preRollMS: settings.preRollMS, detector: ports.hotPhrase, bargeIn: settings.machine.bargeIn,
                               logger: logger, now: { clock.now }, post: { continuation.yield($0) })
        pulse = ports.clock.makeTimer { continuation.yield(.heartbeat) }
        timerAlarm = ports.clock.makeTimer { continuation.yield(.timersDue) }
        timerTick = ports.clock.makeTimer { continuation.yield(.timerTick) }
        screenIdle = ports.clock.makeTimer { continuation.yield(.screenIdle) }
        timersSaveRetry = ports.clock.makeTimer { continuation.yield(.retryTimersSave) }
        networkCheck = ports.clock.makeTimer { continuation.yield(.checkNetwork) }
        var core = Speaker.Settings()
        core.machine = settings.machine
        core.screen = settings.screen
        core.backlight = ports.screen != nil
        core.keepsTimers = ports.timerStore != nil
        state = Mutex(LoopState(speaker: Speaker(settings: core)))
        published = Mutex(SpeakerSnapshot(state: .none, muted: false, offline: false, volume: 0, soundOff: false, timers: [],
                                          alarms: [], now: 0))
        // The saved timers and mute are read now, before anything can ask: the control API and the screen are
        // started once the loop exists, before it runs (issue #34: right after a restart `ctl timers` listed
        // none, the API answering before the file was read). What they lead to waits for the start.
        readSavedState()
        // First in the queue, whatever is sent before run() starts: a press that early must find the speaker ready,
        // not be dropped in state none.
        continuation.yield(.event(.started))
    }

    /// Feeds an event from outside (a test, the demo's script, a signal handler's shutdown).
    public func send(_ event: SpeakerEvent) { continuation.yield(.event(event)) }

    /// Returns once the loop has handled everything sent to it before this call, each event to the end of the
    /// effects it causes (a search started, the microphone opened, the LEDs shown): for a caller that must see
    /// what it sent take effect before it looks (the demo's script, the tests). Returns at once once the loop
    /// has ended.
    public func settled() async {
        // The frames captured so far are heard first: a wake in them is sent before the barrier.
        await router.detectorIdle()
        await withCheckedContinuation { (barrier: CheckedContinuation<Void, Never>) in
            if case .terminated = continuation.yield(.barrier(barrier)) { barrier.resume() }
        }
    }

    /// Someone touched the screen: it comes back to full brightness, and the quiet time starts again.
    public func wakeScreen() { continuation.yield(.wakeScreen) }

    /// The current state, as published after the core's last step (`snapshot`).
    public var currentState: SpeakerState { published.withLock { $0.state } }

    /// What the speaker is doing and holds now, for a screen or a script that has just connected: the snapshot the
    /// loop published after its last step, with what moves without a step read as it is now (the time the timers'
    /// time left counts from, the device's volume, the frames the detector's thread dropped).
    public var snapshot: SpeakerSnapshot {
        var snapshot = published.withLock { $0 }
        snapshot.now = ports.clock.bootTime
        snapshot.volume = ports.volume.percent
        snapshot.soundOff = ports.volume.soundOff
        snapshot.hotPhraseFramesDropped = router.hotPhraseFramesDropped
        return snapshot
    }

    /// Steps the core and publishes what it holds after the step, read in the same lock (the screen's brightness
    /// belongs to the same moment as the state beside it). Published before any effect is carried out: whoever
    /// reads the snapshot while they are finds the state they tell of.
    private func step(core input: Speaker.Input) -> [Speaker.Effect] {
        let now = speakerNow()
        let (effects, speaker) = state.withLock { s in (s.speaker.step(input, now: now), s.speaker) }
        publish(speaker)
        return effects
    }

    /// The core's facts into the published snapshot (only the loop publishes: one writer, in order).
    private func publish(_ speaker: Speaker) {
        published.withLock { p in
            p.state = speaker.machine.state
            p.muted = speaker.machine.muted
            p.offline = speaker.machine.offline
            p.timers = speaker.timers.timers
            p.alarms = speaker.timers.alarms
            p.screen = speaker.screen
            p.timersSaveProblem = speaker.timersSaveProblem?.message
        }
    }

    /// Runs until `.shutdown` has been handled: LEDs off, devices closed. Every task it starts (the board's
    /// intents, each search's events, each sound's end) is a child of this call and has ended when it returns.
    public func run() async {
        await withDiscardingTaskGroup { group in
            if let board = ports.board {
                group.addTask { [continuation] in
                    for await intent in board.intents {
                        switch intent {
                        case .talk: continuation.yield(.event(.hold))  // hold-to-talk: TalkIntent.talk
                        case .press: continuation.yield(.event(.press))
                        case .tapEnded: continuation.yield(.event(.tapEnded))
                        case .endTalk: continuation.yield(.event(.endTalk))
                        case .cancel: continuation.yield(.event(.cancel))
                        case .doublePress: continuation.yield(.event(.toggleMute))
                        case .teachVoice: continuation.yield(.enrollFromButton)
                        case .muteSwitch(let on): continuation.yield(.event(.setMuted(on)))
                        }
                    }
                }
            }
            let startup = state.withLock { s in defer { s.startup = nil }; return s.startup } ?? Startup()
            if let problem = startup.muteProblem { tell(.deviceProblem(problem)) }
            // Before any frame can come: the detector's thread, until the loop ends (below).
            router.startDetector()
            // Muted (readSavedState): the microphone is not opened at all.
            if ports.hotPhrase != nil && !startup.muted { openAlwaysOnMicrophone() }
            var iterator = inputs.makeAsyncIterator()
            loop: while let input = await iterator.next() {
                if case .checkNetwork = input {
                    // On a thread of the service's own (EndpointProbe), a child of the loop like a search.
                    group.addTask { [continuation, search = ports.search] in continuation.yield(.networkChecked(await search.reachable())) }
                    continue
                }
                if enrollmentInput(input, in: &group) { continue }
                guard let core = take(input) else { continue }
                guard case .event(let event) = core else {
                    // Not for the machine (a timer due, the screen's quiet time): the core decides, the loop does.
                    if step(core, in: &group) { break loop }
                    continue
                }
                announce(event)
                if enrollmentTakes(event, in: &group) { continue }
                if handle(event, in: &group) { break loop }
                if event == .started {
                    beat()
                    if started(startup, in: &group) { break loop }
                }
            }
            // The microphones are stopped (shutDown): what the detector has not heard yet leads nowhere.
            await router.stopDetector()
            // Whoever waits for the loop to settle is let go: it has ended, nothing it sent will be handled now.
            continuation.finish()
            while let input = await iterator.next() {
                if case .barrier(let waiting) = input { waiting.resume() }
            }
            group.cancelAll()
        }
    }

    /// The machine alone decides whether our own sound is playing; the router only follows it, after every input
    /// that reaches the machine.
    private func followSound() {
        router.setHotPhraseListening(!state.withLock { $0.speaker.machine.soundPlaying })
    }

    /// The clocks as the core reads them for one step.
    private func speakerNow() -> Speaker.Now {
        Speaker.Now(reading: ports.clock.reading, calendar: ports.clock.calendar, clockSynchronized: ports.system.clockSynchronized())
    }

    /// Hands an event to the core and carries out what it decides. True when the loop must end.
    private func handle(_ event: SpeakerEvent, in group: inout DiscardingTaskGroup) -> Bool {
        let effects = step(core: .event(event))
        // Whether the watchdog expired (not a stale one) is the core's to say: it tells it, first.
        let watchdogExpired = effects.lazy.compactMap { effect -> SpeakerState? in
            if case .tell(.watchdogExpired(let expired, _)) = effect { expired } else { nil }
        }.first
        state.withLock { $0.dropReason = Self.dropReason(event, watchdogExpired: watchdogExpired, settings: settings.machine) }
        followSound()
        if perform(effects, in: &group) { return true }
        watchNetwork()
        return false
    }

    /// Hands an input to the core and carries out what it decides. True when the loop must end.
    private func step(_ input: Speaker.Input, in group: inout DiscardingTaskGroup) -> Bool {
        let effects = step(core: input)
        followSound()
        return perform(effects, in: &group)
    }

    /// Carries out the core's effects in order. What the ports answered that the machine must hear of (a search or
    /// the microphone that could not start: `.searchFailed`) goes to the core in the same step, once the effects
    /// that came with it are done, not posted to the back of the queue behind other inputs. True when the loop
    /// must end.
    private func perform(_ effects: [Speaker.Effect], in group: inout DiscardingTaskGroup) -> Bool {
        var reports: [SpeakerEvent] = []
        for effect in effects {
            if perform(effect, reports: &reports, in: &group) { return true }
        }
        for event in reports {
            if handle(event, in: &group) { return true }
        }
        return false
    }

    /// Turns an input into the core's (nil: nothing for the core).
    private func take(_ input: LoopInput) -> Speaker.Input? {
        switch input {
        case .event(let event):
            return .event(event)
        case .endpoint(let id, let decision):
            guard id == state.withLock({ $0.searchID }) else { return nil }
            switch decision {
            case .speechStarted: return nil
            case .endOfSpeech, .maxLength: return .event(.endOfSpeech)
            case .noSpeech: return .event(.noSpeech)
            }
        case .search(let id, let event):
            guard id == state.withLock({ $0.searchID }) else { return nil }
            return translate(event).map { .event($0) }
        case .played(let event, let problem):
            if let problem { tell(.deviceProblem(DeviceProblem(problem))) }
            return .event(event)
        case .microphone(let event):
            _ = step(core: .microphone(event))  // nothing to carry out
            tell(.microphone(event))
            return nil
        case .heartbeat:
            beat()
            return nil
        case .tell(let activity):
            tell(activity)
            return nil
        case .wakeScreen:
            return .wakeScreen
        case .screenIdle:
            return .screenIdle
        case .timersDue:
            return .timersDue
        case .retryTimersSave:
            return .retryTimersSave
        case .startEnrollment, .enrollFromButton, .enrollment, .takeRecorded:
            return nil  // enrollmentInput's
        case .barrier(let waiting):
            waiting.resume()
            return nil
        case .checkNetwork:
            return nil  // run() starts the check
        case .networkChecked(let answers):
            if answers {
                state.withLock { $0.networkCheckDelay = nil }
                logger.notice("Houndify answers again: no longer offline")
                return .event(.networkBack)
            }
            // Not yet: checked again, less often, for as long as the speaker is offline.
            let next = state.withLock { s -> Duration? in
                guard s.speaker.machine.offline, let delay = s.networkCheckDelay else {
                    s.networkCheckDelay = nil
                    return nil
                }
                s.networkCheckDelay = min(delay * 2, Self.networkCheckLongest)
                return s.networkCheckDelay
            }
            if let next { networkCheck.schedule(after: next) }
            return nil
        case .timerTick:
            return .timerTick
        }
    }

    /// Offline (a search could not reach the service) with no check armed: the first is armed. The offline
    /// pattern and a screen's "No internet" then go when the service answers, not only after the next question.
    private func watchNetwork() {
        let arm = state.withLock { s -> Bool in
            guard s.speaker.machine.offline, s.networkCheckDelay == nil else { return false }
            s.networkCheckDelay = Self.networkCheckFirst
            return true
        }
        if arm { networkCheck.schedule(after: Self.networkCheckFirst) }
    }

    /// One heartbeat, and the next one armed (only after this one was taken: at most one waits in the queue).
    private func beat() {
        guard let heartbeat = settings.heartbeat else { return }
        heartbeat.beat()
        if let interval = heartbeat.interval { pulse.schedule(after: interval) }
    }

    private func translate(_ event: SearchEvent) -> SpeakerEvent? {
        switch event {
        case .partialTranscript(let text):
            state.withLock { s in if s.timings?.firstPartial == nil { s.timings?.firstPartial = ports.clock.now } }
            return .partialTranscript(text)
        case .safeToStopAudio:
            return .endOfSpeech
        case .answer(let answer):
            state.withLock { $0.timings?.finalResult = ports.clock.now }
            return .answer(answer)
        case .failed(let error):
            tell(.searchFailed(error))
            questionFailed(error)
            return .searchFailed(error.failure)
        }
    }

    /// The activities an event itself stands for (a press, a transcript); state changes and the rest come from
    /// the effects.
    private func announce(_ event: SpeakerEvent) {
        switch event {
        case .partialTranscript(let text): tell(.partialTranscript(text))
        case .answer(let answer):
            // What the speaker does itself is told as it does it: what a client action or a local command makes it
            // say is known once it is done (`tellPendingFinal`), not Houndify's words for it.
            let transcript = answer.transcript
            func later(_ done: String) { state.withLock { $0.pendingFinal = (transcript, done) } }
            switch (answer.action, LocalCommand.match(transcript)) {
            case (nil, nil):
                if let display = answer.display { tell(.display(display)) }
                tellFinal(transcript: transcript, answer: answer.text, houndifyVoice: answer.voice != nil)
            case (.run(let command)?, _): tellFinal(transcript: transcript, answer: answer.text, done: "ran \"\(command)\"")
            case (.muteMicrophone?, _): tellFinal(transcript: transcript, answer: answer.text, done: "muted the microphone")
            case (nil, .stop?): tellFinal(transcript: transcript, answer: "", done: "stopped")
            case (nil, .volumeUp?): later("turned the volume up")
            case (nil, .volumeDown?): later("turned the volume down")
            case (nil, .ipAddress?), (.timer?, _), (.alarm?, _), (.volume?, _): later("")
            }
        case .talk, .hold, .press: tell(.button(.talk))
        case .endTalk: tell(.button(.endTalk))
        case .cancel: tell(.button(.cancel))
        case .tapEnded: tell(.button(.release))
        case .hotPhrase: tell(.hotPhrase)
        case .stopPhrase: tell(.stopPhrase)
        default: break
        }
    }

    /// The question's recording ends: no more audio goes to its search (which `.endAudio` then finishes, and a press
    /// that may yet be a long press leaves open), and its own microphone, if it has one, is closed.
    private func stopRecording() {
        router.detach()
        let microphone = state.withLock { s -> (any MicrophoneStream)? in
            if s.timings?.endOfSpeech == nil { s.timings?.endOfSpeech = ports.clock.now }
            defer { s.questionMicrophone = nil }
            return s.questionMicrophone
        }
        microphone?.stop()
    }

    /// An answer's `final`, and, for a typed question someone waits for, its report.
    private func tellFinal(transcript: String, answer: String, houndifyVoice: Bool = false, done: String = "") {
        tell(.finalTranscript(transcript: transcript, answer: answer, houndifyVoice: houndifyVoice, done: done))
        if let question = state.withLock({ s in defer { s.question = nil }; return s.question }) {
            tell(.question(.init(id: question.id, query: question.query, .answered(transcript: transcript, answer: answer, done: done))))
        }
    }

    /// The `final` of an answer whose words the speaker chose itself, with those words (said or shown now).
    private func tellPendingFinal(_ words: String) {
        guard let pending = state.withLock({ s in defer { s.pendingFinal = nil }; return s.pendingFinal }) else { return }
        tellFinal(transcript: pending.transcript, answer: words, done: pending.done)
    }

    private func questionFailed(_ error: SearchError) {
        if let question = state.withLock({ s in defer { s.question = nil }; return s.question }) {
            tell(.question(.init(id: question.id, query: question.query, .failed(error))))
        }
    }

    /// What stops a question under way when `event` does, in words for whoever typed it.
    static func dropReason(_ event: SpeakerEvent, watchdogExpired: SpeakerState?, settings: SpeakerMachine.Settings) -> String {
        if watchdogExpired == .searching { return "no answer came within \(settings.searchingLimitMS / 1000) s" }
        switch event {
        case .cancel: return "it was stopped (a long press, or the stop command)"
        case .talk, .press, .hold, .listen: return "the button (or the listen command) started another question"
        case .hotPhrase: return "the hot phrase started another question"
        case .toggleMute, .setMuted, .carryOut(.muteMicrophone): return "the microphone was muted"
        case .shutdown: return "the speaker is shutting down"
        default: return "it was stopped before its answer came"
        }
    }

    /// Logs an activity, records it in the published snapshot (the conversation's last words, the LEDs: whoever
    /// reads the snapshot after hearing of it finds it there), and hands it to every observer.
    func tell(_ activity: SpeakerActivity) {
        if let entry = activity.logEntry {
            // Every field is metadata too: under systemd each becomes a journal field (HOUND_SPEAKER_EVENT=timings).
            // Built only when the level is logged (an autoclosure): partial transcripts come by the hundred.
            logger.log(level: entry.level, "\(entry.message)", metadata: activity.metadata)
        }
        published.withLock { $0.record(activity) }
        for observer in observers { observer(activity) }
        if activity.wakesScreen { carryOut(step(core: .wakeScreen)) }
    }

    private func setScreen(percent: Int, backlight: Bool) {
        var lit = false
        if backlight, let light = ports.screen {
            do throws(DeviceProblem) {
                try light.set(percent: percent)
                lit = true
            } catch {
                carryOut(step(core: .screenLightFailed))
                tell(.deviceProblem(DeviceProblem("\(error.message); the screen's page dims its own picture instead")))
            }
        }
        tell(.screen(SpeakerActivity.Screen(dimmed: percent < 100, percent: percent, backlight: lit)))
    }

    /// Carries out one of the core's effects; returns true when the loop must end.
    private func perform(_ effect: Speaker.Effect, reports: inout [SpeakerEvent], in group: inout DiscardingTaskGroup) -> Bool {
        guard case .machine(let effect) = effect else {
            carryOut([effect])
            return false
        }
        return perform(effect, reports: &reports, in: &group)
    }

    /// Carries out the core's own effects (all but the machine's, `perform`).
    private func carryOut(_ effects: [Speaker.Effect]) {
        for effect in effects {
            switch effect {
            case .machine:
                // Speaker.step gives none for the inputs `step(_:)` takes (SpeakerStepTests.everyCoreInputInEveryState).
                assertionFailure("a machine effect outside the loop's task group")
                logger.error("internal error: an effect of the state machine came where only the core's own were expected; ignored")
            case .saveTimers(let book, let save):
                carryOut(saveTimers(book, save))
            case .tell(let activity):
                tell(activity)
            case .soundOn:
                // A timer or alarm is due: it must be heard, so a sound switched off by voice comes back on.
                guard ports.volume.soundOff else { break }
                do throws(DeviceProblem) {
                    try ports.volume.setSoundOff(false)
                    tell(.volume(ports.volume.percent, soundOff: false))
                } catch { tell(.deviceProblem(error)) }
            case .armTimerAlarm(let after): arm(timerAlarm, after)
            case .armTimerTick(let after): arm(timerTick, after)
            case .armTimersSaveRetry(let after): arm(timersSaveRetry, after)
            case .armScreenIdle(let after): arm(screenIdle, after)
            case .setScreen(let percent, let backlight):
                setScreen(percent: percent, backlight: backlight)
            }
        }
    }

    private func arm(_ timer: any LoopTimer, _ after: Duration?) {
        if let after { timer.schedule(after: after) } else { timer.disarm() }
    }

    /// Carries out one of the machine's effects, adding to `reports` what the machine must hear of it; returns true
    /// when the loop must end.
    private func perform(_ effect: SpeakerEffect, reports: inout [SpeakerEvent], in group: inout DiscardingTaskGroup) -> Bool {
        switch effect {
        case .startSearch(let preRoll):
            if preRoll { state.withLock { $0.lastWake = ports.clock.now } }
            if let failure = startSearch(preRoll: preRoll, in: &group) { reports.append(.searchFailed(failure)) }
        case .startTextSearch(let query, let id):
            if id != 0 {
                state.withLock { $0.question = (id, query) }
                tell(.question(.init(id: id, query: query, .asked)))
            }
            if let failure = startTextSearch(query, in: &group) { reports.append(.searchFailed(failure)) }
        case .refuseQuestion(let id, let query, let reason):
            tell(.question(.init(id: id, query: query, .refused(reason))))
        case .stopRecording:
            stopRecording()
        case .clearConversation:
            ports.search.clearConversation()
            logger.info("conversation cleared: the next question starts anew")
        case .endAudio:
            stopRecording()
            state.withLock { $0.search }?.finish()
        case .cancelSearch:
            router.detach()
            let (search, microphone, question, reason) = state.withLock { s in
                defer { s.questionMicrophone = nil; s.searchID += 1; s.question = nil }
                return (s.search, s.questionMicrophone, s.question, s.dropReason)
            }
            search?.cancel()
            microphone?.stop()
            if let question { tell(.question(.init(id: question.id, query: question.query, .dropped(reason)))) }
            finishInteraction()
        case .speak(let utterance):
            let firstSample: @Sendable () -> Void = { [weak self] in
                guard let self else { return }
                state.withLock { s in if s.timings?.firstTTSSample == nil { s.timings?.firstTTSSample = ports.clock.now } }
            }
            // Rendered once: a client action's words are chosen (and its final transcript told) as they are.
            let text = render(utterance)
            tellPendingFinal(text)
            tell(.speech(text))
            let playback: any Playback
            if case .recorded(let audio, _) = utterance {
                playback = ports.speech.playRecording(audio, onFirstSample: firstSample)
            } else {
                playback = ports.speech.speak(text, onFirstSample: firstSample)
            }
            group.addTask { [continuation] in
                let (end, problem) = await playback.ended()
                continuation.yield(.played(.speechEnded(end), problem: problem))
            }
        case .stopSpeaking:
            ports.speech.stopSpeaking()
        case .playEarcon(let earcon):
            let playback = ports.speech.play(earcon)
            group.addTask { [continuation] in
                let (end, problem) = await playback.ended()
                continuation.yield(.played(.soundEnded(end), problem: problem))
            }
        case .leds(let leds):
            ports.board?.show(leds)
            tell(.leds(leds))
        case .changeVolume(let up):
            do throws(DeviceProblem) { tell(.volume(try ports.volume.step(up: up))) } catch { tell(.deviceProblem(error)) }
        case .runCommand(let command):
            guard let commands = ports.commands else {
                tell(.deviceProblem(DeviceProblem("command \"\(command)\": this speaker runs no commands")))
                break
            }
            let logger = logger
            commands.run(command) { [continuation] ended in
                switch ended {
                case .success(0): logger.info("command \"\(command)\" done")
                case .success(let status):
                    continuation.yield(.tell(.deviceProblem(DeviceProblem("command \"\(command)\" failed with exit status \(status)"))))
                case .failure(let problem): continuation.yield(.tell(.deviceProblem(problem)))
                }
            }
        case .volume(let action):
            carryOut(step(core: .volumeChanged(changeVolume(action))))
        case .timer, .alarm, .stopRinging:
            break  // carried out on the book by the core (Speaker), which never passes them on
        case .setMicrophoneMuted(let on):
            setMicrophoneMuted(on)
        case .armWatchdog(let generation, let ms):
            // A timer for this arming, carrying its generation: one that fires just as the state changes brings the
            // old generation, which the core finds stale (the machine owns the generation; the loop keeps no copy).
            let timer = ports.clock.makeTimer { [continuation] in continuation.yield(.event(.watchdog(generation: generation))) }
            timer.schedule(after: .milliseconds(ms))
            replaceWatchdog(with: timer)
        case .disarmWatchdog:
            replaceWatchdog(with: nil)
        case .stateChanged(let from, let to):
            stateChanged(from: from, to: to)
        case .show(let utterance):
            let words = render(utterance)
            tellPendingFinal(words)
            tell(.answerShown(words))
        case .stopped:
            shutDown()
            return true
        case .falseWake(let wake):
            let now = ports.clock.now
            guard let woke = state.withLock({ $0.lastWake }), FalseWake.kept(wake, sinceWake: now - woke) else { break }
            ports.hotPhrase?.keepFalseWake()
        case .answeredWake:
            ports.hotPhrase?.keepAnsweredWake()
        }
        return false
    }

    /// The watchdog armed now becomes `timer` (nil: none); the one before will not fire.
    private func replaceWatchdog(with timer: (any LoopTimer)?) {
        let old = state.withLock { s in defer { s.watchdog = timer }; return s.watchdog }
        old?.disarm()
    }

    /// Starts a search (voice or text) as the one under way: its events come to the loop under a new id, so those
    /// of any earlier search are ignored. Failure: it could not start (told), for the machine to hear.
    private func begin(_ kind: String, in group: inout DiscardingTaskGroup,
                       _ start: () throws(SearchError) -> any VoiceSearchSession) -> Result<(any VoiceSearchSession, Int), SearchError> {
        let search: any VoiceSearchSession
        do throws(SearchError) { search = try start() } catch {
            let failure = SearchError(error.failure, detail: "cannot start a \(kind) search: \(error.detail)")
            tell(.searchFailed(failure))
            questionFailed(failure)
            return .failure(error)
        }
        let id = state.withLock { s -> Int in
            s.searchID += 1
            s.search = search
            s.timings = InteractionTimings(trigger: ports.clock.now)
            return s.searchID
        }
        group.addTask { [continuation] in
            for await event in search.events { continuation.yield(.search(id: id, event)) }
        }
        return .success((search, id))
    }

    /// Nil: started; else why not, for the machine (`.searchFailed`).
    private func startTextSearch(_ query: String, in group: inout DiscardingTaskGroup) -> SearchFailure? {
        if case .failure(let error) = begin("text", in: &group, { () throws(SearchError) in try ports.search.startTextSearch(query) }) {
            return error.failure
        }
        return nil
    }

    /// Nil: started, its audio on the way; else why not, for the machine (`.searchFailed`).
    private func startSearch(preRoll: Bool, in group: inout DiscardingTaskGroup) -> SearchFailure? {
        let search: any VoiceSearchSession, id: Int
        switch begin("voice", in: &group, { () throws(SearchError) in try ports.search.startVoiceSearch(afterHotPhrase: preRoll) }) {
        case .success(let started): (search, id) = started
        case .failure(let error): return error.failure
        }
        router.attach(search, id: id, endpointer: Endpointer(settings: settings.endpointer, frameMS: ports.microphone.frameMS),
                      preRoll: preRoll)
        if ports.hotPhrase != nil {
            // The always-on microphone feeds the router; if it is missing, say so now rather than record silence.
            if !state.withLock({ $0.speaker.microphoneUp }) {
                return microphoneFailed(search, DeviceProblem("microphone \(ports.microphone.device) is not available: nothing to record"))
            }
            return nil
        }
        // Without a hot phrase to listen for, the microphone is open only while a question is recorded.
        do throws(DeviceProblem) {
            let microphone = try openMicrophone(waitForDevice: false)
            state.withLock { $0.questionMicrophone = microphone }
            return nil
        } catch {
            return microphoneFailed(search, error)
        }
    }

    /// The search started has nothing to record: it is cancelled, and the failure told, for the machine to hear.
    private func microphoneFailed(_ search: any VoiceSearchSession, _ problem: DeviceProblem) -> SearchFailure {
        search.cancel()
        let error = SearchError(.microphone, detail: problem.message)
        tell(.searchFailed(error))
        return .microphone
    }

    /// The hot phrase's microphone stays open for good; one that is missing at start is looked for every second
    /// (as a lost one is), so a microphone plugged in after boot is heard without a restart.
    private func openAlwaysOnMicrophone() {
        do throws(DeviceProblem) {
            let microphone = try openMicrophone(waitForDevice: true)
            state.withLock { $0.alwaysOnMicrophone = microphone }
        } catch {
            tell(.deviceProblem(DeviceProblem("\(error.message); the hot phrase cannot be heard")))
        }
    }

    /// Opens and starts the microphone, every frame going to the router and its events to the loop.
    private func openMicrophone(waitForDevice: Bool) throws(DeviceProblem) -> any MicrophoneStream {
        let router = self.router
        return try ports.microphone.open(waitForDevice: waitForDevice,
                                         onEvent: { [continuation] event in continuation.yield(.microphone(event)) },
                                         onFrame: { frame in router.frame(frame) })
    }

    private func render(_ utterance: Utterance) -> String {
        switch utterance {
        case .text(let text): text
        case .recorded(_, let text): text
        case .volume: "Volume \(ports.volume.percent)."
        case .ipAddress: Self.ipAddressSentence(ports.system.ipAddresses())
        case .actionOutcome(let responses):
            actionSentence(responses)
        }
    }

    /// The words for the last client action, and the conversation state of the branch it took (kept here, as the
    /// words are chosen: Houndify's next answer depends on what the speaker really did).
    private func actionSentence(_ responses: ActionResponses?) -> String {
        guard let outcome = state.withLock({ $0.speaker.lastActionOutcome }) else { return "Sorry, something went wrong." }
        let (text, branch) = outcome.reply(from: responses)
        if let kept = branch?.conversationState ?? responses?.conversationState { ports.search.keepConversation(kept) }
        return text
    }

    /// Carries out a volume command; the sentence says the new level (said at that level).
    private func changeVolume(_ action: VolumeAction) -> ActionOutcome {
        let volume = ports.volume
        do throws(DeviceProblem) {
            switch action {
            case .step(let up): _ = try volume.step(up: up)
            // Clamped before adding: the step comes from outside, and Int.max points would overflow the sum.
            case .by(let points): _ = try volume.set(volume.percent + min(max(points, -100), 100))
            case .to(let percent): _ = try volume.set(percent)
            case .mute(let off): try volume.setSoundOff(off)
            }
        } catch {
            tell(.deviceProblem(error))
            return ActionOutcome(.failed, sentence: "Sorry, I couldn't change the volume.")
        }
        tell(.volume(volume.percent, soundOff: volume.soundOff))
        if case .mute(true) = action { return ActionOutcome(.changed(1), sentence: "Sound off.") }
        return ActionOutcome(.changed(1), sentence: "Volume \(volume.percent).")
    }

    /// Mute releases the always-on microphone (the device is closed, not just ignored); unmute opens it again.
    private func setMicrophoneMuted(_ on: Bool) {
        tell(.muted(on))
        if on {
            let microphone = state.withLock { s -> (any MicrophoneStream)? in
                defer { s.alwaysOnMicrophone = nil }  // and the core has the microphone down
                return s.alwaysOnMicrophone
            }
            microphone?.stop()
        } else if ports.hotPhrase != nil, state.withLock({ $0.alwaysOnMicrophone == nil }) {
            openAlwaysOnMicrophone()
        }
        if let store = ports.muteStore {
            // The state here stays as asked either way; the store's problem says what a restart would do.
            do throws(DeviceProblem) { try store.save(on) } catch { tell(.deviceProblem(error)) }
        }
    }

    // MARK: Timers

    /// Reads the saved mute and timers into the machine and the book, so that the snapshot holds them from the
    /// moment the loop exists. A speaker muted when it stopped starts muted. Mute is privacy, so it fails closed:
    /// a setting that cannot be read for certain starts muted, and says so (the muted LEDs, the log); unmuting is
    /// one double press or `ctl unmute`. With a mute switch, its position decides, not the saved setting.
    private func readSavedState() {
        var startup = Startup()
        if let store = ports.muteStore, ports.board?.hasMuteSwitch != true {
            do throws(DeviceProblem) { startup.muted = try store.load() } catch {
                startup.muted = true
                startup.muteProblem = DeviceProblem("\(error.message); starting muted, since mute is unknown")
            }
        }
        var book = TimerBook()
        let now = ports.clock.reading
        if let store = ports.timerStore {
            do throws(DeviceProblem) {
                let (loaded, problems) = try store.load(at: now)
                book = loaded
                startup.timerProblems = problems
            } catch {
                startup.timerProblems = [DeviceProblem("\(error.message); timers start empty")]
            }
        }
        // Those that fell due while the speaker was off ring at the start (or are missed, if long past).
        (startup.changes, startup.alarms, startup.ringing) = book.restarted(now: now, calendar: ports.clock.calendar)
        let speaker = state.withLock { s in
            s.speaker.restore(timers: book, checkedAt: now.boot, muted: startup.muted)
            s.startup = startup
            return s.speaker
        }
        publish(speaker)
    }

    /// The speaker is up: what reading the saved state found is told, saved and armed, and what fell due rings.
    /// True when the loop must end.
    private func started(_ startup: Startup, in group: inout DiscardingTaskGroup) -> Bool {
        if startup.muted { tell(.muted(true)) }
        for problem in startup.timerProblems { tell(.deviceProblem(problem)) }
        return step(.timersRestored(changes: startup.changes, alarms: startup.alarms, ringing: startup.ringing), in: &group)
    }

    /// Said after the confirmation of a timer or alarm set that could not be saved (Speaker.setButNotSaved).
    public static let setButNotSaved = Speaker.setButNotSaved
    /// The same for any other change (Speaker.changedButNotSaved).
    public static let changedButNotSaved = Speaker.changedButNotSaved

    /// Saves the timers and alarms as the core asked (`.saveTimers`), and hands it the result: what the core
    /// makes of it (the problem told once, the retry armed, the caveat) comes back to be carried out.
    private func saveTimers(_ book: TimerBook, _ save: Speaker.TimersSave) -> [Speaker.Effect] {
        guard let store = ports.timerStore else { return [] }
        let problem: DeviceProblem?
        do throws(DeviceProblem) {
            try store.save(book, at: ports.clock.reading)
            problem = nil
        } catch { problem = error }
        if let problem, state.withLock({ $0.speaker.timersSaveProblem != nil }) {
            logger.debug("timers: still cannot be saved: \(problem.message)")
        }
        return step(core: .timersSaved(problem, save))
    }

    /// "What's your IP address": the first two, read out digit group by digit group.
    static func ipAddressSentence(_ addresses: [String]) -> String {
        guard !addresses.isEmpty else { return "I don't have a network address." }
        let spoken = addresses.prefix(2).map { $0.split(separator: ".").joined(separator: " dot ") }
        return "My IP address is \(spoken.joined(separator: ", and "))."
    }

    private func stateChanged(from: SpeakerState, to: SpeakerState) {
        stateLog.withLock { log in
            log.append(to)
            if log.count > Self.historyLimit { log.removeFirst(log.count - Self.historyLimit) }
        }
        tell(.stateChanged(from: from, to: to))
        if to == .ready || to == .none {
            if from == .speaking { state.withLock { s in if s.timings?.speechEnd == nil { s.timings?.speechEnd = ports.clock.now } } }
            finishInteraction()
        }
        if to == .recording {
            // A follow-up (AutoListen) starts its own interaction.
            state.withLock { s in if s.timings?.finalResult != nil { s.timings = InteractionTimings(trigger: ports.clock.now) } }
        }
    }

    private func finishInteraction() {
        let finished = state.withLock { s -> InteractionTimings? in
            // An answer's words that never came (a long press over it) are not told with the next one's.
            s.pendingFinal = nil
            guard var t = s.timings else { return nil }
            t.firstAudioSent = s.search?.firstAudioSent
            s.timings = nil
            s.search = nil
            return t
        }
        guard let finished else { return }
        // Only the recent past is kept: a speaker runs for months.
        history.withLock { h in
            h.append(finished)
            if h.count > Self.historyLimit { h.removeFirst(h.count - Self.historyLimit) }
        }
        tell(.timings(finished))
    }

    private func shutDown() {
        router.detach()
        let (question, alwaysOn, search) = state.withLock { s -> ((any MicrophoneStream)?, (any MicrophoneStream)?, (any VoiceSearchSession)?) in
            defer { s.questionMicrophone = nil; s.alwaysOnMicrophone = nil; s.search = nil }
            return (s.questionMicrophone, s.alwaysOnMicrophone, s.search)
        }
        replaceWatchdog(with: nil)
        pulse.disarm()
        timerAlarm.disarm()
        timerTick.disarm()
        // The time left as it is now, for a reboot (a clean stop: `reboot`, an upgrade): not the last minute's.
        let book = state.withLock { $0.speaker.timers }
        if book.anyRunning { carryOut(saveTimers(book, Speaker.TimersSave())) }
        timersSaveRetry.disarm()
        search?.cancel()
        question?.stop()
        alwaysOn?.stop()
        ports.speech.stopSpeaking()
        ports.board?.stop()
        continuation.finish()
    }
}

/// A Mutex that closures can share (a Mutex itself cannot be copied into one).
final class Shared<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ initial: Value) { value = Mutex(initial) }
}

extension ActionOutcome {
    /// A timer or alarm command's outcome, in the terms of Houndify's branches.
    init(_ outcome: TimerOutcome) {
        if outcome.succeeded {
            let count = outcome.changes.count + outcome.alarmChanges.count
            self.init(count > 0 ? .changed(count) : .told, sentence: outcome.sentence)
        } else {
            self.init(outcome.matchedNothing ? .noMatch : .failed, sentence: outcome.sentence)
        }
    }
}
