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
    /// Quiet time (ready, nothing ringing) before the screen dims; nil: it never dims.
    public var screenDimAfter: Duration? = .seconds(120)
    /// The brightness of a dimmed screen, 1-100 percent (never 0: dimmed, not off).
    public var screenDimPercent = 10
    public init() {}
}

/// The speaker: one loop consuming every input (button, endpointer, voice search, speech, timers) in order,
/// handing it to the state machine and carrying out the effects through the ports. Blocking work stays on the
/// threads the ports' drivers own; the loop only decides. Everything it does is told once, as a
/// `SpeakerActivity`, to the log and to the observers.
public final class SpeakerLoop: Sendable {
    let ports: SpeakerPorts
    private let settings: SpeakerLoopSettings
    let logger: Logger
    private let observers: [@Sendable (SpeakerActivity) -> Void]
    private let inputs: AsyncStream<LoopInput>
    let continuation: AsyncStream<LoopInput>.Continuation
    let router: CaptureRouter
    private let watchdog: any LoopTimer
    /// The generation the watchdog is armed for (-1: disarmed), read when it fires: a timer that fires just as
    /// the state changes carries the old generation, which the machine ignores.
    private let armedGeneration = Shared(-1)
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

    struct LoopState {
        var machine: SpeakerMachine
        var search: (any VoiceSearchSession)?
        var searchID = 0
        /// The microphone opened for one question (no hot phrase), or for good (listening for the hot phrase).
        var questionMicrophone: (any MicrophoneStream)?
        var alwaysOnMicrophone: (any MicrophoneStream)?
        /// Whether the always-on microphone is delivering audio, from its own events.
        var microphoneUp = false
        /// When the latest hot-phrase wake started its question (for `FalseWake.kept`).
        var lastWake: ContinuousClock.Instant?
        var timings: InteractionTimings?
        var timers = TimerBook()
        /// What the last client action (`.timer`, `.alarm`, `.volume`) did, for the sentence that follows it.
        var lastActionOutcome: ActionOutcome?
        /// The `final` of an answer whose words the speaker chooses itself (a client action's outcome, the volume,
        /// the IP address): told with those words, once they are known (`tellPendingFinal`).
        var pendingFinal: (transcript: String, done: String)?
        /// The typed question whose search is under way, when someone waits for it (its id is not 0).
        var question: (id: Int, query: String)?
        /// What stopped a question now, if the event being handled does (`dropReason`).
        var dropReason = ""
        /// What the machine was last told about running timers.
        var toldTimersRunning = false
        var toldLastMinute = false
        var screenDimmed = false
        /// The backlight failed once: the page dims its own picture from then on.
        var screenLightFailed = false
        /// What reading the saved state found, for the start to tell and carry out (nil once it has).
        var startup: Startup?
        /// Why the last save of the timers failed (nil: the last one worked, or none was needed).
        var timersSaveProblem: DeviceProblem?
        /// When the alarms were last checked (monotonic): an alarm found due since then was crossed while the
        /// speaker was on, by time or by a step of the wall clock (`TimerBook.alarmsDue`).
        var alarmsChecked: BootTime?
        /// The wait before the network check now armed or under way (nil: none is).
        var networkCheckDelay: Duration?
        /// The spoken enrollment under way (LoopEnrollment.swift), and the last one's progress for the status.
        var enrolling: Enrolling?
        var lastEnrollment: EnrollmentProgress?
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
        let armed = armedGeneration
        watchdog = ports.clock.makeTimer {
            let generation = armed.value.withLock { $0 }
            if generation >= 0 { continuation.yield(.event(.watchdog(generation: generation))) }
        }
        pulse = ports.clock.makeTimer { continuation.yield(.heartbeat) }
        timerAlarm = ports.clock.makeTimer { continuation.yield(.timersDue) }
        timerTick = ports.clock.makeTimer { continuation.yield(.timerTick) }
        screenIdle = ports.clock.makeTimer { continuation.yield(.screenIdle) }
        timersSaveRetry = ports.clock.makeTimer { continuation.yield(.retryTimersSave) }
        networkCheck = ports.clock.makeTimer { continuation.yield(.checkNetwork) }
        state = Mutex(LoopState(machine: SpeakerMachine(settings: settings.machine)))
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

    /// The current state.
    public var currentState: SpeakerState { state.withLock { $0.machine.state } }

    /// What the speaker is doing and holds now, for a screen or a script that has just connected.
    public var snapshot: SpeakerSnapshot {
        // One lock: the screen's brightness belongs to the same moment as the state beside it.
        let (machine, book, screen, saveProblem, enrollment) = state.withLock { s in
            (s.machine, s.timers,
             SpeakerActivity.Screen(dimmed: s.screenDimmed, percent: s.screenDimmed ? settings.screenDimPercent : 100,
                                    backlight: ports.screen != nil && !s.screenLightFailed),
             s.timersSaveProblem, s.lastEnrollment)
        }
        return SpeakerSnapshot(state: machine.state, muted: machine.muted, offline: machine.offline, volume: ports.volume.percent,
                               soundOff: ports.volume.soundOff, timers: book.timers, alarms: book.alarms, now: ports.clock.bootTime,
                               screen: screen, timersSaveProblem: saveProblem?.message, enrollment: enrollment,
                               hotPhraseFramesDropped: router.hotPhraseFramesDropped)
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
                guard let event = take(input) else { continue }
                announce(event)
                if enrollmentTakes(event, in: &group) { continue }
                let (effects, soundPlaying, watchdogExpired) = state.withLock { s in
                    let before = s.machine.state
                    let expired: Bool = if case .watchdog(let g) = event { g == s.machine.watchdogGeneration } else { false }
                    let effects = s.machine.handle(event)
                    return (effects, s.machine.soundPlaying, expired ? before : nil)
                }
                if let expired = watchdogExpired {
                    tell(.watchdogExpired(expired, limitMS: settings.machine.limitMS(in: expired)))
                }
                state.withLock { $0.dropReason = Self.dropReason(event, watchdogExpired: watchdogExpired, settings: settings.machine) }
                // The machine alone decides whether our own sound is playing; the router only follows it.
                router.setHotPhraseListening(!soundPlaying)
                for effect in effects {
                    if perform(effect, in: &group) { break loop }
                }
                watchNetwork()
                if event == .started {
                    beat()
                    started(startup)
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

    /// Turns an input into the machine's event (nil: nothing for the machine).
    private func take(_ input: LoopInput) -> SpeakerEvent? {
        switch input {
        case .event(let event):
            return event
        case .endpoint(let id, let decision):
            guard id == state.withLock({ $0.searchID }) else { return nil }
            switch decision {
            case .speechStarted: return nil
            case .endOfSpeech, .maxLength: return .endOfSpeech
            case .noSpeech: return .noSpeech
            }
        case .search(let id, let event):
            guard id == state.withLock({ $0.searchID }) else { return nil }
            return translate(event)
        case .played(let event, let problem):
            if let problem { tell(.deviceProblem(DeviceProblem(problem))) }
            return event
        case .microphone(let event):
            state.withLock { s in
                switch event {
                case .opened, .recovered: s.microphoneUp = true
                case .lost, .stopped: s.microphoneUp = false
                case .overrun: break
                }
            }
            tell(.microphone(event))
            return nil
        case .heartbeat:
            beat()
            return nil
        case .tell(let activity):
            tell(activity)
            return nil
        case .wakeScreen:
            brightenScreen()
            return nil
        case .screenIdle:
            dimScreen()
            return nil
        case .timersDue:
            checkTimers()
            return nil
        case .retryTimersSave:
            saveTimers()
            return nil
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
                return .networkBack
            }
            // Not yet: checked again, less often, for as long as the speaker is offline.
            let next = state.withLock { s -> Duration? in
                guard s.machine.offline, let delay = s.networkCheckDelay else {
                    s.networkCheckDelay = nil
                    return nil
                }
                s.networkCheckDelay = min(delay * 2, Self.networkCheckLongest)
                return s.networkCheckDelay
            }
            if let next { networkCheck.schedule(after: next) }
            return nil
        case .timerTick:
            let (timers, now) = state.withLock { ($0.timers.timers, ports.clock.bootTime) }
            // Saved each minute a timer runs: after a reboot (a power cut) a timer goes on with the time left in the
            // file, so the file must not hold the time left when it was set (a restart in the same boot counts from
            // any save exactly, on the monotonic clock).
            if timers.contains(where: \.isRunning) { saveTimers() }
            scheduleTimers()  // the next minute is armed before anyone hears of this one
            // Not a timer at its very end: it is about to ring (its alarm may be handled just after this).
            for timer in timers where timer.isRunning && timer.remaining(at: now) >= 1 {
                tell(.timer(.tick, timer, remaining: timer.remainingSeconds(at: now)))
            }
            return nil
        }
    }

    /// Offline (a search could not reach the service) with no check armed: the first is armed. The offline
    /// pattern and a screen's "No internet" then go when the service answers, not only after the next question.
    private func watchNetwork() {
        let arm = state.withLock { s -> Bool in
            guard s.machine.offline, s.networkCheckDelay == nil else { return false }
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

    /// Logs an activity and hands it to every observer.
    func tell(_ activity: SpeakerActivity) {
        if let entry = activity.logEntry {
            // Every field is metadata too: under systemd each becomes a journal field (HOUND_SPEAKER_EVENT=timings).
            // Built only when the level is logged (an autoclosure): partial transcripts come by the hundred.
            logger.log(level: entry.level, "\(entry.message)", metadata: activity.metadata)
        }
        for observer in observers { observer(activity) }
        if activity.wakesScreen { brightenScreen() }
    }

    /// Full brightness now (if dimmed), and the quiet time counted again from now if the speaker is ready.
    private func brightenScreen() {
        let (dimmed, ready) = state.withLock { s in
            defer { s.screenDimmed = false }
            return (s.screenDimmed, s.machine.state == .ready)
        }
        if dimmed { setScreen(percent: 100) }
        if ready, let after = settings.screenDimAfter { screenIdle.schedule(after: after) } else { screenIdle.disarm() }
    }

    /// Dims the screen, if the speaker is still quiet (the timer may fire just as something starts).
    private func dimScreen() {
        let dim = state.withLock { s -> Bool in
            guard s.machine.state == .ready, !s.screenDimmed else { return false }
            s.screenDimmed = true
            return true
        }
        if dim { setScreen(percent: settings.screenDimPercent) }
    }

    private func setScreen(percent: Int) {
        var backlight = false
        if let light = ports.screen, !state.withLock({ $0.screenLightFailed }) {
            do throws(DeviceProblem) {
                try light.set(percent: percent)
                backlight = true
            } catch {
                state.withLock { $0.screenLightFailed = true }
                tell(.deviceProblem(DeviceProblem("\(error.message); the screen's page dims its own picture instead")))
            }
        }
        tell(.screen(SpeakerActivity.Screen(dimmed: percent < 100, percent: percent, backlight: backlight)))
    }

    /// Carries out one effect; returns true when the loop must end.
    private func perform(_ effect: SpeakerEffect, in group: inout DiscardingTaskGroup) -> Bool {
        switch effect {
        case .startSearch(let preRoll):
            if preRoll { state.withLock { $0.lastWake = ports.clock.now } }
            startSearch(preRoll: preRoll, in: &group)
        case .startTextSearch(let query, let id):
            if id != 0 {
                state.withLock { $0.question = (id, query) }
                tell(.question(.init(id: id, query: query, .asked)))
            }
            startTextSearch(query, in: &group)
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
            let outcome = changeVolume(action)
            state.withLock { $0.lastActionOutcome = outcome }
        case .timer(let action):
            let outcome = state.withLock { s -> TimerOutcome in
                let outcome = s.timers.apply(action, now: ports.clock.bootTime)
                s.lastActionOutcome = ActionOutcome(outcome)
                return outcome
            }
            keep(outcome)
            stopRingingIfNothingRings()
        case .alarm(let action):
            let synchronized = ports.system.clockSynchronized()
            let outcome = state.withLock { s -> TimerOutcome in
                let outcome = s.timers.apply(action, now: ports.clock.wallTime, calendar: ports.clock.calendar, clockSynchronized: synchronized)
                s.lastActionOutcome = ActionOutcome(outcome)
                return outcome
            }
            keep(outcome)
            stopRingingIfNothingRings()
        case .stopRinging:
            let (timers, alarms) = state.withLock { s in
                (s.timers.stopRinging(), s.timers.stopRingingAlarms(now: ports.clock.wallTime, calendar: ports.clock.calendar))
            }
            timersChanged(timers, alarms: alarms)
        case .setMicrophoneMuted(let on):
            setMicrophoneMuted(on)
        case .armWatchdog(let generation, let ms):
            armedGeneration.value.withLock { $0 = generation }
            watchdog.schedule(after: .milliseconds(ms))
        case .disarmWatchdog:
            armedGeneration.value.withLock { $0 = -1 }
            watchdog.disarm()
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

    /// Starts a search (voice or text) as the one under way: its events come to the loop under a new id, so those
    /// of any earlier search are ignored. Nil: it could not start, and the machine has been told.
    private func begin(_ kind: String, in group: inout DiscardingTaskGroup,
                       _ start: () throws(SearchError) -> any VoiceSearchSession) -> (any VoiceSearchSession, Int)? {
        let search: any VoiceSearchSession
        do throws(SearchError) { search = try start() } catch {
            let failure = SearchError(error.failure, detail: "cannot start a \(kind) search: \(error.detail)")
            tell(.searchFailed(failure))
            questionFailed(failure)
            continuation.yield(.event(.searchFailed(error.failure)))
            return nil
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
        return (search, id)
    }

    private func startTextSearch(_ query: String, in group: inout DiscardingTaskGroup) {
        _ = begin("text", in: &group) { () throws(SearchError) in try ports.search.startTextSearch(query) }
    }

    private func startSearch(preRoll: Bool, in group: inout DiscardingTaskGroup) {
        guard let (search, id) = begin("voice", in: &group, { () throws(SearchError) in try ports.search.startVoiceSearch(afterHotPhrase: preRoll) })
        else { return }
        router.attach(search, id: id, endpointer: Endpointer(settings: settings.endpointer, frameMS: ports.microphone.frameMS),
                      preRoll: preRoll)
        if ports.hotPhrase != nil {
            // The always-on microphone feeds the router; if it is missing, say so now rather than record silence.
            if !state.withLock({ $0.microphoneUp }) {
                microphoneFailed(search, DeviceProblem("microphone \(ports.microphone.device) is not available: nothing to record"))
            }
            return
        }
        // Without a hot phrase to listen for, the microphone is open only while a question is recorded.
        do throws(DeviceProblem) {
            let microphone = try openMicrophone(waitForDevice: false)
            state.withLock { $0.questionMicrophone = microphone }
        } catch {
            microphoneFailed(search, error)
        }
    }

    private func microphoneFailed(_ search: any VoiceSearchSession, _ problem: DeviceProblem) {
        search.cancel()
        let error = SearchError(.microphone, detail: problem.message)
        tell(.searchFailed(error))
        continuation.yield(.event(.searchFailed(.microphone)))
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
        guard let outcome = state.withLock({ $0.lastActionOutcome }) else { return "Sorry, something went wrong." }
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
                defer { s.alwaysOnMicrophone = nil; s.microphoneUp = false }
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
        state.withLock { s in
            s.timers = book
            s.alarmsChecked = now.boot
            if startup.muted { _ = s.machine.handle(.setMuted(true)) }
            s.startup = startup
        }
    }

    /// The speaker is up: what reading the saved state found is told, saved and armed, and what fell due rings.
    private func started(_ startup: Startup) {
        if startup.muted { tell(.muted(true)) }
        for problem in startup.timerProblems { tell(.deviceProblem(problem)) }
        let now = ports.clock.bootTime
        let counting = state.withLock { $0.timers.timers.filter(\.isRunning) }
        // Whoever follows the speaker's events learns at once what it counts down after a restart.
        for timer in counting { tell(.timer(.tick, timer, remaining: timer.remainingSeconds(at: now))) }
        timersChanged(startup.changes, alarms: startup.alarms)
        if startup.ringing { ring() }
    }

    /// The ringing timers were cancelled (from the screen, not by a press): the ring has nothing left to ring for.
    private func stopRingingIfNothingRings() {
        let silent = state.withLock { s in
            s.machine.state == .ringing && !s.timers.timers.contains(where: \.isRinging)
                && !s.timers.alarms.contains(where: \.isRinging)
        }
        if silent { continuation.yield(.event(.cancel)) }
    }

    /// A timer or alarm is due: it must be heard, so a sound switched off by voice comes back on.
    private func ring() {
        if ports.volume.soundOff {
            do throws(DeviceProblem) {
                try ports.volume.setSoundOff(false)
                tell(.volume(ports.volume.percent, soundOff: false))
            } catch { tell(.deviceProblem(error)) }
        }
        continuation.yield(.event(.timerDue))
    }

    /// Timers due now start ringing; then the next one is waited for.
    private func checkTimers() {
        let now = ports.clock.reading
        let (changes, alarms) = state.withLock { s in
            defer { s.alarmsChecked = now.boot }
            return (s.timers.due(now: now.boot),
                    s.timers.alarmsDue(now: now.wall, calendar: ports.clock.calendar, checkedAgo: s.alarmsChecked.map { now.boot - $0 }))
        }
        timersChanged(changes, alarms: alarms)
        if changes.contains(where: { $0.kind == .ringing }) || alarms.contains(where: { $0.kind == .ringing }) { ring() }
    }

    /// Tells and saves what a timer or alarm command changed; a change the person asked for (not a ring) that could
    /// not be saved gets its caveat after the confirmation.
    private func keep(_ outcome: TimerOutcome) {
        let asked = outcome.changes.contains { $0.kind != .ringing } || outcome.alarmChanges.contains { $0.kind != .ringing }
        guard timersChanged(outcome.changes, alarms: outcome.alarmChanges) != nil, asked else { return }
        let lost = outcome.changes.contains { $0.kind == .set } || outcome.alarmChanges.contains { $0.kind == .set }
        state.withLock { $0.lastActionOutcome?.caveat = lost ? Self.setButNotSaved : Self.changedButNotSaved }
    }

    /// Said after the confirmation of a timer or alarm set that could not be saved: it rings in this run, but the
    /// person must not believe it would survive a restart (issue #34: "Your soup timer is set", then gone).
    public static let setButNotSaved = "I couldn't save it, though, so a restart would lose it."
    /// The same for any other change (a cancelled timer would come back).
    public static let changedButNotSaved = "I couldn't save that, though, so a restart would undo it."
    /// How long after a failed save of the timers it is tried again (besides at every change).
    static let timersSaveRetryInterval: Duration = .seconds(60)

    /// Saves the timers and alarms. A save that fails is kept as the snapshot's `timersSaveProblem` and tried
    /// again at every change and every minute, until one works (a full disk freed, a state directory fixed).
    /// The problem, or nil.
    @discardableResult
    private func saveTimers() -> DeviceProblem? {
        guard let store = ports.timerStore else { return nil }
        let problem: DeviceProblem?
        do throws(DeviceProblem) {
            try store.save(state.withLock { $0.timers }, at: ports.clock.reading)
            problem = nil
        } catch { problem = error }
        let before = state.withLock { s in defer { s.timersSaveProblem = problem }; return s.timersSaveProblem }
        if let problem {
            timersSaveRetry.schedule(after: Self.timersSaveRetryInterval)
            if before == nil { tell(.timersSaved(problem: problem.message)) } else {
                logger.debug("timers: still cannot be saved: \(problem.message)")
            }
        } else if before != nil {
            timersSaveRetry.disarm()
            tell(.timersSaved(problem: nil))
        }
        return problem
    }

    /// Tells and saves what changed, and sets the alarm for the next timer due. Returns the save's problem.
    /// Saved and armed first, told after: whoever hears of a change finds it already in effect.
    @discardableResult
    private func timersChanged(_ changes: [TimerChange], alarms: [AlarmChange] = []) -> DeviceProblem? {
        var problem: DeviceProblem? = nil
        if !changes.isEmpty || !alarms.isEmpty { problem = saveTimers() }
        scheduleTimers()
        let now = ports.clock.bootTime
        for change in changes {
            let remaining = change.timer.remainingSeconds(at: now)
            tell(.timer(SpeakerActivity.TimerEvent(rawValue: change.kind.rawValue) ?? .tick, change.timer, remaining: remaining))
        }
        for change in alarms { tell(.alarm(change.kind, change.alarm)) }
        if let problem { tell(.deviceProblem(DeviceProblem("\(problem.message); a restart would lose the timers' last change"))) }
        return problem
    }

    /// The longest the timer alarm is armed for, in seconds.
    static let longestWait: Double = 86_400
    /// The longest the timer alarm is armed for while an alarm is set: the wall clock is looked at this often, so
    /// that a step of it (time sync) brings an alarm's time nearer or further within a minute. (The alarm is armed
    /// on the monotonic clock, which a step does not move: armed once for 7:00 at 6:00, a +50 min step at 6:05 would
    /// have it ring at 7:50, missed.)
    static let longestAlarmWait: Double = 60

    private func scheduleTimers() {
        let now = ports.clock.reading
        let (timerDue, alarmDue, soonest, tellMachine) = state.withLock { s -> (BootTime?, WallTime?, Double?, Bool) in
            let soonest = s.timers.timers.filter(\.isRunning).map { $0.remaining(at: now.boot) }.min()
            let running = soonest != nil, lastMinute = soonest.map { $0 <= 60 } ?? false
            defer { s.toldTimersRunning = running; s.toldLastMinute = lastMinute }
            return (s.timers.nextTimerDeadline, s.timers.nextAlarm, soonest, running != s.toldTimersRunning || lastMinute != s.toldLastMinute)
        }
        let running = soonest != nil
        // Each on its own clock: a timer's end on the monotonic one, an alarm's time on the wall clock.
        let waits = [timerDue.map { $0 - now.boot }, alarmDue.map { min($0 - now.wall, Self.longestAlarmWait) }].compactMap { $0 }
        if let next = waits.min() {
            // At most a day ahead, and a day in milliseconds is far inside Int64 whatever the deadline (a NaN one
            // included: armed at once).
            let seconds = min(max(0, next), Self.longestWait)
            timerAlarm.schedule(after: .milliseconds(Saturating.int(seconds * 1000, .up, in: 0...Int(Self.longestWait) * 1000)))
        } else {
            timerAlarm.disarm()
        }
        if let soonest {
            // Every minute, and also when the soonest enters its last minute (the LEDs quicken then).
            let untilLastMinute = soonest - 60
            let wait = untilLastMinute > 0 ? min(60, untilLastMinute) : 60
            timerTick.schedule(after: .milliseconds(Saturating.int(wait * 1000, .up, in: 0...60_000)))
        } else {
            timerTick.disarm()
        }
        if tellMachine { continuation.yield(.event(.timersRunning(running, lastMinute: (soonest ?? 61) <= 60))) }
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
        armedGeneration.value.withLock { $0 = -1 }
        watchdog.disarm()
        pulse.disarm()
        timerAlarm.disarm()
        timerTick.disarm()
        // The time left as it is now, for a reboot (a clean stop: `reboot`, an upgrade): not the last minute's.
        if state.withLock({ $0.timers.anyRunning }) { saveTimers() }
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
