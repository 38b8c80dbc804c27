public import AudioCore
public import BoardCore
public import SpeakerCore
public import Timers
import Glibc
import Platform
import Synchronization
public import JSONKit

// Fakes of the speaker core's ports and a manual clock: the loop's behaviour tested deterministically and fast,
// with no ALSA, curl or espeak-ng. Each fake records what the loop asked of it, and the test decides what
// happens next (an answer arrives, speech ends, time passes).

/// Time that moves only when the test says so. Timers fire, in deadline order, inside `advance`. The wall clock
/// moves with it, and can also be stepped on its own (`stepWallClock`), as time sync steps a real one.
public final class ManualClock: LoopClock {
    private struct Armed {
        var deadline: Duration
        var fire: @Sendable () -> Void
    }

    private let base = ContinuousClock.now
    private let state = Mutex<(elapsed: Duration, timers: [Int: Armed], nextID: Int, wallSteps: Double)>((.zero, [:], 0, 0))

    /// The wall-clock time when the clock was made.
    private let wallStart: WallTime
    /// The monotonic time (seconds since boot) when the clock was made: far from any wall time, so that a test
    /// that mixes the two clocks up fails.
    private let bootStart: BootTime
    public let bootID: String

    public init(wallStart: WallTime = 1_800_000_000, bootStart: BootTime = 5_000, bootID: String = "boot-1") {
        self.wallStart = wallStart
        self.bootStart = bootStart
        self.bootID = bootID
    }

    /// The clock of the same machine when the speaker starts again `after` later (a restart): in the same boot
    /// unless `newBoot` (the monotonic clock then starts again, a minute after the boot), with the wall clock moved
    /// on by `after` and stepped by `wallStep` seconds.
    public func restarted(after: Duration = .zero, wallStep: Double = 0, newBoot: Bool = false) -> ManualClock {
        let seconds = Double(after / .milliseconds(1)) / 1000
        return ManualClock(wallStart: wallTime + seconds + wallStep, bootStart: newBoot ? 60 : bootTime + seconds,
                           bootID: newBoot ? bootID + "-next" : bootID)
    }

    public var now: ContinuousClock.Instant { base + state.withLock { $0.elapsed } }

    public var wallTime: WallTime {
        state.withLock { s in wallStart + s.wallSteps + Double(s.elapsed / .milliseconds(1)) / 1000 }
    }
    public var bootTime: BootTime { bootStart + Double(state.withLock { $0.elapsed } / .milliseconds(1)) / 1000 }
    public let calendar: any LocalCalendar = FixedOffsetCalendar()

    /// Steps the wall clock by `seconds` (either way), as time sync does: the monotonic clock and the armed timers
    /// (which count on it) stay where they are.
    public func stepWallClock(by seconds: Double) {
        state.withLock { $0.wallSteps += seconds }
    }

    /// Milliseconds since the clock was made.
    public var elapsedMS: Int { Int(state.withLock { $0.elapsed } / .milliseconds(1)) }

    /// How many timers are armed.
    public var armedTimers: Int { state.withLock { $0.timers.count } }

    final class Timer: LoopTimer {
        let clock: ManualClock
        let id: Int
        let fire: @Sendable () -> Void
        init(clock: ManualClock, id: Int, fire: @escaping @Sendable () -> Void) {
            self.clock = clock
            self.id = id
            self.fire = fire
        }
        func schedule(after delay: Duration) {
            clock.state.withLock { s in s.timers[id] = Armed(deadline: s.elapsed + delay, fire: fire) }
        }
        func disarm() { _ = clock.state.withLock { $0.timers.removeValue(forKey: id) } }
    }

    public func makeTimer(_ fire: @escaping @Sendable () -> Void) -> any LoopTimer {
        Timer(clock: self, id: state.withLock { s -> Int in s.nextID += 1; return s.nextID }, fire: fire)
    }

    /// How long until the soonest armed timer falls due (nil: none armed).
    public var untilNextTimer: Duration? {
        state.withLock { s in s.timers.values.map(\.deadline).min().map { max(.zero, $0 - s.elapsed) } }
    }

    /// Moves time on by `duration`, firing every timer that falls due, each at its own deadline.
    public func advance(by duration: Duration) {
        let end = state.withLock { $0.elapsed } + duration
        while true {
            let due = state.withLock { s -> (@Sendable () -> Void)? in
                guard let (id, timer) = s.timers.filter({ $0.value.deadline <= end }).min(by: { $0.value.deadline < $1.value.deadline }) else {
                    s.elapsed = end
                    return nil
                }
                s.timers[id] = nil
                s.elapsed = max(s.elapsed, timer.deadline)
                return timer.fire
            }
            guard let due else { return }
            due()
        }
    }
}

/// One voice search: the test sends its events; what the loop wrote and asked is recorded.
public final class FakeSearchSession: VoiceSearchSession {
    public let events: AsyncStream<SearchEvent>
    private let continuation: AsyncStream<SearchEvent>.Continuation
    private let state = Mutex<(samples: [Int16], finished: Bool, cancelled: Bool, accepting: Bool, firstAudio: ContinuousClock.Instant?, refused: Int)>(([], false, false, true, nil, 0))
    private let clock: ManualClock
    public let afterHotPhrase: Bool
    /// The typed question of a text search (nil: a voice search).
    public let query: String?
    /// Whether the service's SafeToStopAudio was to end the upload (false: hold-to-talk).
    public let endsAtSafeToStop: Bool

    init(afterHotPhrase: Bool, clock: ManualClock, query: String? = nil, endsAtSafeToStop: Bool = true) {
        self.afterHotPhrase = afterHotPhrase
        self.endsAtSafeToStop = endsAtSafeToStop
        self.query = query
        self.clock = clock
        (events, continuation) = AsyncStream.makeStream()
    }

    public func send(_ event: SearchEvent) { continuation.yield(event) }

    public func write(_ samples: UnsafeBufferPointer<Int16>) -> Bool {
        state.withLock { s in
            guard s.accepting else {
                s.refused += 1
                return false
            }
            if s.firstAudio == nil { s.firstAudio = clock.now }
            s.samples += samples
            return true
        }
    }

    public func finish() { state.withLock { $0.finished = true; $0.accepting = false } }

    public func cancel() {
        state.withLock { $0.cancelled = true; $0.accepting = false }
        continuation.finish()
    }

    /// The upload ends from the service's side (SafeToStopAudio): writes are refused from now on.
    public func stopAccepting() { state.withLock { $0.accepting = false } }

    public var firstAudioSent: ContinuousClock.Instant? { state.withLock { $0.firstAudio } }
    public var uploaded: [Int16] { state.withLock { $0.samples } }
    public var isFinished: Bool { state.withLock { $0.finished } }
    /// Frames offered after the upload ended (and not taken).
    public var refusedWrites: Int { state.withLock { $0.refused } }
    public var isCancelled: Bool { state.withLock { $0.cancelled } }
}

public final class FakeVoiceSearch: VoiceSearchService {
    private let state = Mutex<(sessions: [FakeSearchSession], refusals: [SearchError], kept: [JSONValue], cleared: Int)>(([], [], [], 0))
    private let clock: ManualClock

    public init(clock: ManualClock) { self.clock = clock }

    /// The next start fails with `error` (the service unreachable before anything was sent).
    public func refuseNextStart(_ error: SearchError) { state.withLock { $0.refusals.append(error) } }

    public func startVoiceSearch(afterHotPhrase: Bool, endsAtSafeToStop: Bool) throws(SearchError) -> any VoiceSearchSession {
        let refusal = state.withLock { s in s.refusals.isEmpty ? nil : s.refusals.removeFirst() }
        if let refusal { throw refusal }
        let session = FakeSearchSession(afterHotPhrase: afterHotPhrase, clock: clock, endsAtSafeToStop: endsAtSafeToStop)
        state.withLock { $0.sessions.append(session) }
        return session
    }

    public var sessions: [FakeSearchSession] { state.withLock { $0.sessions } }
    public var latest: FakeSearchSession? { sessions.last }

    /// A typed question: a session like a voice search's (the test answers it), its query kept.
    public func startTextSearch(_ query: String) throws(SearchError) -> any VoiceSearchSession {
        let refusal = state.withLock { s in s.refusals.isEmpty ? nil : s.refusals.removeFirst() }
        if let refusal { throw refusal }
        let session = FakeSearchSession(afterHotPhrase: false, clock: clock, query: query)
        state.withLock { $0.sessions.append(session) }
        return session
    }

    public func clearConversation() { state.withLock { $0.cleared += 1 } }
    /// How many times the loop cleared the conversation.
    public var conversationsCleared: Int { state.withLock { $0.cleared } }

    public func keepConversation(_ state: JSONValue) { self.state.withLock { $0.kept.append(state) } }
    /// The conversation states the loop chose to keep, in order.
    public var keptConversations: [JSONValue] { state.withLock { $0.kept } }

    private let reachability = Mutex<(answers: Bool, checks: Int)>((false, 0))
    /// Whether the service answers the loop's light check from now on.
    public func setReachable(_ answers: Bool) { reachability.withLock { $0.answers = answers } }
    /// How many times the loop checked.
    public var reachabilityChecks: Int { reachability.withLock { $0.checks } }
    public func reachable() async -> Bool {
        reachability.withLock { r in
            r.checks += 1
            return r.answers
        }
    }
}

/// Speech and earcons that play until the test ends them (or the loop stops them). Earcons end by themselves,
/// `.finished`, unless `holdEarcons` is set.
public final class FakeSpeech: SpeechOutputPort {
    public enum Sound: Sendable, Equatable {
        case speech(String)
        case earcon(Earcon)
        /// A recording played as speech (Houndify's voice), by its length in samples.
        case recording(samples: Int)
    }

    final class Playing: Playback, Sendable {
        let sound: Sound
        private let state = Mutex<(end: (SoundEnd, String?)?, waiter: CheckedContinuation<(end: SoundEnd, problem: String?), Never>?)>((nil, nil))
        init(_ sound: Sound) { self.sound = sound }

        func end(_ end: SoundEnd, problem: String? = nil) {
            let waiter = state.withLock { s -> CheckedContinuation<(end: SoundEnd, problem: String?), Never>? in
                guard s.end == nil else { return nil }
                s.end = (end, problem)
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume(returning: (end, problem))
        }

        var hasEnded: Bool { state.withLock { $0.end != nil } }

        func ended() async -> (end: SoundEnd, problem: String?) {
            await withCheckedContinuation { waiter in
                let ready = state.withLock { s -> (SoundEnd, String?)? in
                    if let end = s.end { return end }
                    s.waiter = waiter
                    return nil
                }
                if let ready { waiter.resume(returning: (ready.0, ready.1)) }
            }
        }
    }

    private let state = Mutex<(playing: [Playing], log: [Sound], onFirstSample: [@Sendable () -> Void])>(([], [], []))
    /// When set, every sound ends with this (a speaker that is unplugged: `.outputFailed`).
    private let failure = Mutex<SoundEnd?>(nil)
    /// From now on every sound ends with `end` at once (`.outputFailed`: a speaker that is unplugged); nil: normal.
    public func failEverything(_ end: SoundEnd?) { failure.withLock { $0 = end } }
    public let holdEarcons: Bool

    public init(holdEarcons: Bool = false) { self.holdEarcons = holdEarcons }

    private func start(_ sound: Sound) -> Playing {
        let playing = Playing(sound)
        state.withLock { s in
            s.playing.append(playing)
            s.log.append(sound)
        }
        if let failure = failure.withLock({ $0 }) {
            playing.end(failure, problem: failure == .outputFailed ? "ALSA device \"test\": no such device" : nil)
        } else if case .earcon(let earcon) = sound, !holdEarcons, earcon != .timer {
            // The timer's ring is held like a real one (it takes a second and more): ended by `endEarcons`.
            playing.end(.finished)
        }
        return playing
    }

    public func speak(_ text: String, onFirstSample: @escaping @Sendable () -> Void) -> any Playback {
        state.withLock { $0.onFirstSample.append(onFirstSample) }
        return start(.speech(text))
    }

    public func play(_ earcon: Earcon) -> any Playback { start(.earcon(earcon)) }

    public func playRecording(_ audio: MonoAudio, onFirstSample: @escaping @Sendable () -> Void) -> any Playback {
        state.withLock { $0.onFirstSample.append(onFirstSample) }
        return start(.recording(samples: audio.samples.count))
    }

    public func stopSpeaking() {
        for playing in state.withLock({ $0.playing }) { playing.end(.interrupted) }
    }

    /// Everything asked to play, in order.
    public var log: [Sound] { state.withLock { $0.log } }
    public var spoken: [String] { log.compactMap { if case .speech(let text) = $0 { text } else { nil } } }
    public var earcons: [Earcon] { log.compactMap { if case .earcon(let e) = $0 { e } else { nil } } }

    /// The first sample of the latest utterance reaches the output.
    public func firstSampleOfLatest() {
        let callback = state.withLock { $0.onFirstSample.last }
        callback?()
    }

    /// Whether an utterance (speech or a recording) is playing, not ended.
    public var isSpeaking: Bool {
        state.withLock { s in
            s.playing.contains { playing in
                switch playing.sound {
                case .speech, .recording: !playing.hasEnded
                case .earcon: false
                }
            }
        }
    }

    /// Ends the latest utterance that is still playing.
    public func endSpeech(_ end: SoundEnd = .finished, problem: String? = nil) {
        let playing = state.withLock { s in
            s.playing.last { playing in
                switch playing.sound {
                case .speech, .recording: !playing.hasEnded
                case .earcon: false
                }
            }
        }
        playing?.end(end, problem: problem)
    }

    /// Ends every earcon still playing.
    public func endEarcons(_ end: SoundEnd = .finished) {
        for playing in state.withLock({ $0.playing }) {
            if case .earcon = playing.sound { playing.end(end) }
        }
    }

    /// How many sounds are still playing.
    public var playingCount: Int { state.withLock { $0.playing.filter { !$0.hasEnded }.count } }
}

public final class FakeVolume: VolumeControl {
    private let state = Mutex<(percent: Int, off: Bool, broken: Bool)>((50, false, false))
    public init() {}
    public var percent: Int { state.withLock { $0.percent } }
    public var soundOff: Bool { state.withLock { $0.off } }
    public func breakControl() { state.withLock { $0.broken = true } }
    public func step(up: Bool) throws(DeviceProblem) -> Int { try set(percent + (up ? 10 : -10)) }
    public func set(_ percent: Int) throws(DeviceProblem) -> Int {
        let result = state.withLock { s -> Int? in
            guard !s.broken else { return nil }
            s.percent = max(0, min(100, percent))
            s.off = false
            return s.percent
        }
        guard let result else { throw DeviceProblem("volume: mixer control \"Test\" is gone") }
        return result
    }
    public func setSoundOff(_ off: Bool) throws(DeviceProblem) {
        let done = state.withLock { s -> Bool in
            guard !s.broken else { return false }
            s.off = off
            return true
        }
        guard done else { throw DeviceProblem("volume: mixer control \"Test\" is gone") }
    }
}

/// A microphone the test speaks into: `feed` hands frames to whoever opened it.
public final class FakeMicrophone: MicrophonePort {
    public let device = "fake_mic"
    public let frameMS = 20

    final class Stream: MicrophoneStream {
        let microphone: FakeMicrophone
        let id: Int
        init(_ microphone: FakeMicrophone, id: Int) {
            self.microphone = microphone
            self.id = id
        }
        func stop() {
            let onEvent = microphone.state.withLock { s -> (@Sendable (MicrophoneEvent) -> Void)? in
                s.open.removeValue(forKey: id)?.onEvent
            }
            onEvent?(.stopped)
        }
    }

    private struct Opened {
        var onEvent: @Sendable (MicrophoneEvent) -> Void
        var onFrame: @Sendable (UnsafeBufferPointer<Int16>) -> Void
    }

    private let state = Mutex<(open: [Int: Opened], nextID: Int, opens: Int, missing: Bool)>(([:], 0, 0, false))

    public init(missing: Bool = false) { state.withLock { $0.missing = missing } }

    public func open(waitForDevice: Bool, onEvent: @escaping @Sendable (MicrophoneEvent) -> Void,
                     onFrame: @escaping @Sendable (UnsafeBufferPointer<Int16>) -> Void) throws(DeviceProblem) -> any MicrophoneStream {
        let (id, missing) = state.withLock { s -> (Int, Bool) in
            s.nextID += 1
            s.opens += 1
            if !s.missing || waitForDevice { s.open[s.nextID] = Opened(onEvent: onEvent, onFrame: onFrame) }
            return (s.nextID, s.missing)
        }
        if missing && !waitForDevice { throw DeviceProblem("microphone: ALSA device \"\(device)\": No such file or directory") }
        if !missing { onEvent(.opened(device: device, rate: 16_000, channels: 1)) }
        return Stream(self, id: id)
    }

    /// A microphone that was missing is plugged in: the waiting capture opens it.
    public func plugIn() {
        let waiting = state.withLock { s -> [Opened] in
            s.missing = false
            return Array(s.open.values)
        }
        for opened in waiting { opened.onEvent(.opened(device: device, rate: 16_000, channels: 1)) }
    }

    /// Hands `frames` frames of `value` (20 ms each) to every open stream, on the caller's thread (the capture
    /// thread's place).
    public func feed(frames: Int, value: Int16) {
        let samples = [Int16](repeating: value, count: frameMS * 16)
        for _ in 0..<frames {
            let receivers = state.withLock { s in s.missing ? [] : s.open.values.map(\.onFrame) }
            samples.withUnsafeBufferPointer { buffer in receivers.forEach { $0(buffer) } }
        }
    }

    /// Speech-like frames: a loud tone the endpointer takes for a voice.
    public func speak(frames: Int) {
        let samples = (0..<frameMS * 16).map { (i: Int) -> Int16 in Int16(8000 * sin(Double(i) * 2 * Double.pi * 440 / 16_000)) }
        for _ in 0..<frames {
            let receivers = state.withLock { s in s.missing ? [] : s.open.values.map(\.onFrame) }
            samples.withUnsafeBufferPointer { buffer in receivers.forEach { $0(buffer) } }
        }
    }

    public var openStreams: Int { state.withLock { $0.open.count } }
    public var opens: Int { state.withLock { $0.opens } }
}

public final class FakeBoard: BoardPort {
    public let intents: AsyncStream<TalkIntent>
    private let continuation: AsyncStream<TalkIntent>.Continuation
    private let state = Mutex<(shown: [LEDState], stopped: Bool, rings: [RingSetting])>(([], false, []))

    public let hasMuteSwitch: Bool
    /// The ring's setting at the start; nil: no ring.
    public let ring: RingSetting?
    public init(hasMuteSwitch: Bool = false, ring: RingSetting? = nil) {
        self.hasMuteSwitch = hasMuteSwitch
        self.ring = ring
        (intents, continuation) = AsyncStream.makeStream()
    }

    public func setRing(_ setting: RingSetting) { state.withLock { $0.rings.append(setting) } }
    /// Every setting the loop gave the ring, in order.
    public var ringSettings: [RingSetting] { state.withLock { $0.rings } }

    public func press(_ intent: TalkIntent) { continuation.yield(intent) }
    public func show(_ state: LEDState) { self.state.withLock { $0.shown.append(state) } }
    public func stop() {
        state.withLock { $0.stopped = true }
        continuation.finish()
    }

    public var shown: [LEDState] { state.withLock { $0.shown } }
    public var isStopped: Bool { state.withLock { $0.stopped } }
}

/// Fires on a frame whose first sample is `marker` (a wake) or `stopMarker` (the stop phrase, over the speaker's
/// own sound only, as the real one); counts resets, and the frames heard over the speaker's own sound (barge-in).
/// `hold()` makes it a detector that has fallen behind: each frame waits in `process` until `release()`.
public final class FakeHotPhrase: HotPhraseDetecting {
    public static let marker: Int16 = 12_345
    public static let stopMarker: Int16 = 23_456
    private let state = Mutex<(resetsAfter: [Int], frames: Int, overOwnSound: Int, overRing: Int, firstSamples: [Int16])>(([], 0, 0, 0, []))
    /// Whether frames are held, and how many wait in `process`: changed only with `gate` locked too, so that a
    /// wait on it misses no change.
    private let gate = Condition()
    private let gateState = Mutex<(held: Bool, waiting: Int)>((false, 0))
    public init() {}
    public func process(_ frame: UnsafeBufferPointer<Int16>, over: OwnSound, echoing: Bool) -> HotPhraseHit? {
        gate.lock()
        gateState.withLock { $0.waiting += 1 }
        gate.broadcast()
        while gateState.withLock({ $0.held }) { gate.wait() }
        gateState.withLock { $0.waiting -= 1 }
        gate.unlock()
        state.withLock { s in
            s.frames += 1
            if over != .none { s.overOwnSound += 1 }
            if over == .ring { s.overRing += 1 }
            s.firstSamples.append(frame.first ?? 0)
        }
        if frame.first == Self.marker { return .wake }
        if frame.first == Self.stopMarker && over != .none { return .stop }
        return nil
    }
    public func reset() { state.withLock { $0.resetsAfter.append($0.frames) } }
    public func keepFalseWake() { kept.withLock { $0 += 1 } }
    public func holdAnsweredWake() { answered.withLock { $0.held += 1 } }
    public func keepAnsweredWake() { answered.withLock { $0.kept += 1 } }
    private let kept = Mutex(0)
    private let answered = Mutex((held: 0, kept: 0))
    /// How many wakes the loop told it to keep as the household's false wakes.
    public var falseWakesKept: Int { kept.withLock { $0 } }
    /// How many wakes the loop told it were answered (for the household to learn from).
    public var answeredWakesKept: Int { answered.withLock { $0.kept } }
    /// How many wakes the loop told it to set aside as answered (to learn once their answers are heard out).
    public var answeredWakesHeld: Int { answered.withLock { $0.held } }
    public var resets: Int { state.withLock { $0.resetsAfter.count } }
    /// For each reset, how many frames had been heard before it.
    public var resetsAfter: [Int] { state.withLock { $0.resetsAfter } }
    public var framesSeen: Int { state.withLock { $0.frames } }
    /// The first sample of each frame heard, in order.
    public var firstSamples: [Int16] { state.withLock { $0.firstSamples } }
    /// Frames heard while the speaker's own sound played (only with barge-in: otherwise none reach the detector).
    public var framesOverOwnSound: Int { state.withLock { $0.overOwnSound } }
    /// Of those, the frames heard while a timer rang (`OwnSound.ring`).
    public var framesOverRing: Int { state.withLock { $0.overRing } }

    /// From now on each frame waits in `process` until `release()`.
    public func hold() {
        gate.lock()
        gateState.withLock { $0.held = true }
        gate.unlock()
    }

    public func release() {
        gate.lock()
        gateState.withLock { $0.held = false }
        gate.broadcast()
        gate.unlock()
    }

    /// Waits until a frame is waiting in `process` (held). Blocks the calling thread: call it from a test's own
    /// thread, not from a task.
    public func waitUntilAFrameWaits() {
        gate.lock()
        while gateState.withLock({ $0.waiting == 0 }) { gate.wait() }
        gate.unlock()
    }
}

public struct FakeSystem: SystemInfo {
    public var addresses: [String]
    public var synchronized: Bool
    public init(addresses: [String] = ["192.168.1.23"], synchronized: Bool = true) {
        self.addresses = addresses
        self.synchronized = synchronized
    }
    public func ipAddresses() -> [String] { addresses }
    public func clockSynchronized() -> Bool { synchronized }
}

/// A remembered setting (mute) kept in memory; one store given to two rigs in turn is a restart.
public final class FakeFlagStore: FlagStore {
    private let saved = Mutex(false)
    private let loadFailure: DeviceProblem?
    private let saveFailure: DeviceProblem?
    /// `loadFailure`: every load throws it (a damaged file); `saveFailure`: every save throws it (a full disk), and
    /// keeps nothing.
    public init(loadFailure: DeviceProblem? = nil, saveFailure: DeviceProblem? = nil) {
        self.loadFailure = loadFailure
        self.saveFailure = saveFailure
    }
    public var value: Bool { saved.withLock { $0 } }
    public func load() throws(DeviceProblem) -> Bool {
        if let loadFailure { throw loadFailure }
        return saved.withLock { $0 }
    }
    public func save(_ value: Bool) throws(DeviceProblem) {
        if let saveFailure { throw saveFailure }
        saved.withLock { $0 = value }
    }
}

/// Timers kept in memory; one store given to two rigs in turn is a restart. What a loop saves is kept as the
/// timers file would hold it (`TimerBook.json(at:)`) and read back as the file is, at the loading clock's time, so
/// that a restart counts on as a real one does. `problems` are reported by each load, as a file with entries it
/// could not keep reports them.
public final class FakeTimerStore: TimerStore {
    private let saved = Mutex<(book: TimerBook?, file: JSONValue?)>((nil, nil))
    private let problems: [DeviceProblem]
    public convenience init() { self.init(nil) }
    /// `book`: made in code on the clock of the loop that loads it, and loaded as it is.
    public init(_ book: TimerBook?, problems: [DeviceProblem] = []) {
        saved.withLock { $0 = (book, nil) }
        self.problems = problems
    }
    private let saveFailure = Mutex<DeviceProblem?>(nil)
    /// The book as the loop last saved it (on that loop's clock).
    public var book: TimerBook? { saved.withLock { $0.book } }
    /// What the timers file would hold.
    public var file: JSONValue? { saved.withLock { $0.file } }
    public func load(at now: ClockReading) throws(DeviceProblem) -> (book: TimerBook, problems: [DeviceProblem]) {
        let (book, file) = saved.withLock { ($0.book, $0.file) }
        guard let file else { return (book ?? TimerBook(), problems) }
        do throws(TimerFileError) { return (try TimerBook(json: file, at: now), problems) } catch {
            throw DeviceProblem("timers: \(error)")
        }
    }
    public func save(_ book: TimerBook, at now: ClockReading) throws(DeviceProblem) {
        if let failure = saveFailure.withLock({ $0 }) { throw failure }
        saved.withLock { $0 = (book, book.json(at: now)) }
    }
    /// From now on every save fails with `problem` (a full disk), or, with nil, works again.
    public func failSaves(_ problem: DeviceProblem?) { saveFailure.withLock { $0 = problem } }
}

/// The owner's commands, recorded; the test ends each with the status it wants.
public final class FakeCommands: CommandPort {
    private let state = Mutex<[(command: String, ended: @Sendable (Result<Int32, DeviceProblem>) -> Void)]>([])
    public init() {}
    public func run(_ command: String, ended: @escaping @Sendable (Result<Int32, DeviceProblem>) -> Void) {
        state.withLock { $0.append((command, ended)) }
    }
    public var started: [String] { state.withLock { $0.map(\.command) } }
    /// Ends the latest command with `status`.
    public func end(_ status: Int32) { state.withLock { $0.last?.ended }?(.success(status)) }
}

/// A backlight that keeps what it was set to, or fails as a backlight the service may not write does.
public final class FakeScreenLight: ScreenLight {
    private let state = Mutex<(levels: [Int], failing: Bool)>(([], false))

    public init(failing: Bool = false) { state.withLock { $0.failing = failing } }

    public func set(percent: Int) throws(DeviceProblem) {
        let failing = state.withLock { s in
            s.levels.append(percent)
            return s.failing
        }
        if failing { throw DeviceProblem("[screen] backlight: cannot write /sys/class/backlight/test/brightness: Permission denied") }
    }

    /// Every level asked for, failed or not.
    public var levels: [Int] { state.withLock { $0.levels } }
}

/// The household's side of a spoken enrollment: every take checked is kept for the test to look at, and accepted
/// unless the test queued a verdict for it (`refuseNext`, `failNext`); saves and discards are counted.
public final class FakeEnrollment: EnrollmentPort {
    public let defaultPhrase = "OK Hound"
    public let unavailable: String?
    private let state = Mutex<(checked: [[Int16]], verdicts: [Result<Void, TakeCheckFailure>], saved: [String], discards: Int)>(([], [], [], 0))

    public init(unavailable: String? = nil) { self.unavailable = unavailable }

    public func refuseNext(_ refusal: TakeRefusal) { state.withLock { $0.verdicts.append(.failure(.refused(refusal))) } }
    public func failNext(_ why: String) { state.withLock { $0.verdicts.append(.failure(.failed(why))) } }

    public func check(_ take: [Int16], phrase: String, done: @escaping @Sendable (Result<Void, TakeCheckFailure>) -> Void) {
        let verdict = state.withLock { s -> Result<Void, TakeCheckFailure> in
            s.checked.append(take)
            return s.verdicts.isEmpty ? .success(()) : s.verdicts.removeFirst()
        }
        done(verdict)
    }

    public func save(phrase: String, done: @escaping @Sendable (String?) -> Void) {
        state.withLock { $0.saved.append(phrase) }
        done(nil)
    }

    public func discard() { state.withLock { $0.discards += 1 } }

    public var checked: [[Int16]] { state.withLock { $0.checked } }
    public var saved: [String] { state.withLock { $0.saved } }
    public var discards: Int { state.withLock { $0.discards } }
}
