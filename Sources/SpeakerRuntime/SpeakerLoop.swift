public import SpeakerCore
public import AudioCore
public import BoardCore
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
    let settings: SpeakerLoopSettings
    let logger: Logger
    let observers: [@Sendable (SpeakerActivity) -> Void]
    let inputs: AsyncStream<LoopInput>
    let continuation: AsyncStream<LoopInput>.Continuation
    let router: CaptureRouter
    /// The core as the saved state left it, and what that leads to at the start: `run` takes both as its own.
    let start: (core: Speaker, startup: Startup)
    /// What the speaker holds, published by the loop after each step of the core (`publish`), for other threads
    /// (`snapshot`): they read this, never the loop's state, which is local to `run` (LoopRun).
    let published: Mutex<SpeakerSnapshot>
    /// The LED ring's setting as last asked (`setRing`); nil without a ring.
    let ringRequested: Mutex<RingSetting?>
    let history = Mutex<[InteractionTimings]>([])
    let stateLog = Mutex<[SpeakerState]>([])

    /// How many interactions and states are remembered.
    public static let historyLimit = 1000

    /// The last completed interactions' timings, oldest first (for the benchmark and tests).
    public var interactions: [InteractionTimings] { history.withLock { $0 } }
    /// Every state entered, in order (for tests and `demo`).
    public var statesEntered: [SpeakerState] { stateLog.withLock { $0 } }

    /// The saved state as read when the loop is made (readSavedState), and what it leads to at the start.
    struct Startup: Sendable {
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
        var core = Speaker.Settings()
        core.machine = settings.machine
        core.screen = settings.screen
        core.backlight = ports.screen != nil
        core.keepsTimers = ports.timerStore != nil
        core.canEnroll = ports.enrollment != nil && ports.hotPhrase != nil
        core.microphoneDevice = ports.microphone.device
        core.alwaysOnMicrophone = ports.hotPhrase != nil
        // The saved timers and mute are read now, before anything can ask: the control API and the screen are
        // started once the loop exists, before it runs (issue #34: right after a restart `ctl timers` listed
        // none, the API answering before the file was read). What they lead to waits for the start.
        start = Self.readSavedState(ports: ports, into: Speaker(settings: core))
        var first = SpeakerSnapshot(state: .none, muted: false, offline: false, volume: 0, soundOff: false, timers: [], alarms: [], now: 0)
        first.ring = ports.board?.ring
        published = Mutex(first)
        ringRequested = Mutex(first.ring)
        publish(start.core)
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

    /// The LED ring on or off and how bright (nil: as last asked), merged here so that two quick requests (Home
    /// Assistant's brightness, then its state) each build on the one before; the loop shows it and tells it.
    public func setRing(on: Bool?, percent: Int?) -> Result<RingSetting, DeviceProblem> {
        let setting = ringRequested.withLock { current -> RingSetting? in
            guard let old = current else { return nil }
            current = RingSetting(on: on ?? old.on, percent: percent ?? old.percent)
            return current
        }
        guard let setting else { return .failure(DeviceProblem("this speaker has no LED ring ([board] ring_pixels is 0)")) }
        continuation.yield(.ring(setting))
        return .success(setting)
    }

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

    /// The core's facts into the published snapshot (only the loop publishes: one writer, in order).
    func publish(_ speaker: Speaker) {
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
    /// The loop's own state (LoopRun) lives in this call alone: other threads read the published snapshot.
    public func run() async {
        await withDiscardingTaskGroup { group in
            var run = LoopRun(loop: self)
            await run.run(in: &group)
        }
    }

    /// Reads the saved mute and timers into the machine and the book, so that the snapshot holds them from the
    /// moment the loop exists. A speaker muted when it stopped starts muted. Mute is privacy, so it fails closed:
    /// a setting that cannot be read for certain starts muted, and says so (the muted LEDs, the log); unmuting is
    /// one double press or `ctl unmute`. With a mute switch, its position decides, not the saved setting.
    static func readSavedState(ports: SpeakerPorts, into core: Speaker) -> (core: Speaker, startup: Startup) {
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
        var core = core
        core.restore(timers: book, checkedAt: now.boot, muted: startup.muted)
        return (core, startup)
    }

    /// Said after the confirmation of a timer or alarm set that could not be saved (Speaker.setButNotSaved).
    public static let setButNotSaved = Speaker.setButNotSaved
    /// The same for any other change (Speaker.changedButNotSaved).
    public static let changedButNotSaved = Speaker.changedButNotSaved
}

/// A Mutex that closures can share (a Mutex itself cannot be copied into one).
final class Shared<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ initial: Value) { value = Mutex(initial) }
}

extension SpeakerLoop: ControlledSpeaker {}
