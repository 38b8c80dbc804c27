public import BoardCore
import Logging
public import SpeakerCore
public import SpeakerRuntime

/// A speaker loop on fakes: the test drives it (presses, answers, speech ends, time) and reads what it did.
public final class LoopRig: Sendable {
    public let clock: ManualClock
    public let timerStore: FakeTimerStore
    public let search: FakeVoiceSearch
    public let speech: FakeSpeech
    public let volume = FakeVolume()
    public let microphone: FakeMicrophone
    public let board: FakeBoard
    public let hotPhrase: FakeHotPhrase?
    public let recorder = ActivityRecorder()
    public let commands = FakeCommands()
    public let enrollment: FakeEnrollment?
    public let loop: SpeakerLoop
    private let task: Task<Void, Never>

    /// `clock` and `timerStore` from an earlier rig (stopped) make this one the same speaker restarted.
    public init(settings: SpeakerLoopSettings = .init(), hotPhrase: Bool = false, microphoneMissing: Bool = false,
                holdEarcons: Bool = false, clock: ManualClock = ManualClock(), timerStore: FakeTimerStore = FakeTimerStore(),
                muteStore: FakeFlagStore? = nil, muteSwitch: Bool = false, screen: (any ScreenLight)? = nil,
                enrollment: FakeEnrollment? = nil, ring: RingSetting? = nil, observers: [@Sendable (SpeakerActivity) -> Void] = []) async {
        self.enrollment = enrollment
        board = FakeBoard(hasMuteSwitch: muteSwitch, ring: ring)
        self.clock = clock
        self.timerStore = timerStore
        search = FakeVoiceSearch(clock: clock)
        speech = FakeSpeech(holdEarcons: holdEarcons)
        microphone = FakeMicrophone(missing: microphoneMissing)
        self.hotPhrase = hotPhrase ? FakeHotPhrase() : nil
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let ports = SpeakerPorts(search: search, speech: speech, volume: volume, microphone: microphone, board: board,
                                 hotPhrase: self.hotPhrase, clock: clock, system: FakeSystem(), timerStore: timerStore,
                                 muteStore: muteStore, commands: commands, screen: screen, enrollment: enrollment)
        let loop = SpeakerLoop(ports: ports, settings: settings, logger: logger, observers: [recorder.observer] + observers)
        self.loop = loop
        task = Task { await loop.run() }
        // The start ends with the LEDs (ready, or muted when it starts muted) that follow the machine leaving none:
        // LEDs told before that (the saved state read when the loop is made) do not mean the loop takes events yet,
        // and an event sent while it is still in none is dropped.
        let leftNone: @Sendable (SpeakerActivity) -> Bool = { if case .stateChanged(from: .none, to: _) = $0 { true } else { false } }
        _ = await recorder.wait(for: leftNone)
        let started = recorder.all.firstIndex(where: leftNone) ?? 0
        _ = await recorder.wait(after: started) { if case .leds = $0 { true } else { false } }
        await loop.settled()
    }

    /// Shuts the loop down and waits for run() to return.
    public func stop() async {
        loop.send(.shutdown)
        await task.value
    }

    /// Waits for an activity after `mark` (a `recorder.count` taken earlier), and for the loop to finish what it
    /// was doing when it told it: the activity is told part way through an event's effects (the LEDs before the
    /// search starts), and a test that looks at the fakes at once would race the rest of them.
    public func saw(_ activity: SpeakerActivity, after mark: Int = 0) async -> Bool {
        let seen = await recorder.wait(for: activity, after: mark)
        await loop.settled()
        return seen
    }

    /// `recorder.wait` for a matching activity, then the loop settled (as `saw`).
    public func saw(after mark: Int = 0, _ match: @escaping @Sendable (SpeakerActivity) -> Bool) async -> Bool {
        let seen = await recorder.wait(after: mark, for: match)
        await loop.settled()
        return seen
    }

    /// Sends `event` and waits until the loop has handled it to the end of the state change it causes, which ends
    /// with the LEDs of the new state.
    @discardableResult
    public func send(_ event: SpeakerEvent, expecting leds: LEDState) async -> Bool {
        let mark = recorder.count
        loop.send(event)
        return await saw(.leds(leds), after: mark)
    }

    /// Moves the clock on by `duration` as the loop would live it: at each timer's deadline the loop handles what
    /// fell due (and arms what comes next) before time goes on. (`clock.advance` alone moves to the end at once,
    /// and a timer the loop arms while handling the first one would count from the end instead.)
    /// The loop first finishes the events sent before: a timer it arms while handling one (a timer set) would
    /// otherwise be armed after the clock had moved, and count from there.
    public func advance(by duration: Duration) async {
        await loop.settled()
        var left = duration
        while let next = clock.untilNextTimer, next <= left {
            clock.advance(by: next)
            left -= next
            await loop.settled()
        }
        clock.advance(by: left)
        await loop.settled()
    }

    /// Ends the utterance playing and waits until the loop has left speaking.
    public func endSpeech(_ end: SoundEnd = .finished) async {
        // The loop tells the speaking state before it hands the words to the speech port: a test that saw the state
        // could end nothing (PendingCommandTests once waited 20 s for a speaker still speaking).
        _ = await eventually { speech.isSpeaking }
        let mark = recorder.count
        speech.endSpeech(end)
        _ = await saw(after: mark) { if case .stateChanged(.speaking, _) = $0 { true } else { false } }
    }

    /// Waits (up to 10 s, yielding) until `condition` holds: for what the loop does without telling an activity.
    /// A question asked (the button): the search it starts, once the loop has started it (the listening LEDs come
    /// just before the search does).
    public func askQuestion() async -> FakeSearchSession? {
        let before = search.sessions.count
        guard await send(.talk, expecting: .listening), await eventually({ search.sessions.count > before }) else { return nil }
        return search.latest
    }

    public func eventually(_ condition: @Sendable () -> Bool) async -> Bool {
        for _ in 0..<10_000 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return condition()
    }

    /// The states entered, in order.
    public var states: [SpeakerState] {
        recorder.all.compactMap { if case .stateChanged(_, let to) = $0 { to } else { nil } }
    }
}
