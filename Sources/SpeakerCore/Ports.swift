public import JSONKit
public import Timers
public import AudioCore
public import BoardCore

// The speaker core talks to the world only through these ports. Assembly adapts the real drivers to them
// (libcurl's Houndify client, espeak-ng and ALSA playback, libgpiod, ALSA capture, dispatch timers); the test kit
// (Tests/SpeakerTestKit) has fakes and a manual clock, so the loop's behaviour is tested without a device.

/// A device or service that did not do what was asked, with the words that name it (device, file, status).
public struct DeviceProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

// MARK: Voice search

/// Why a search failed: what the person is told, and the detail for the log (the error and its SDK code).
public struct SearchError: Error, Sendable, Equatable, CustomStringConvertible {
    public var failure: SearchFailure
    public var detail: String
    /// The Hound SDK's name for it (HoundVoiceSearchErrorCode: "ConnectionFailure", "NotReady", ...; "" when none
    /// fits), for the events and the log.
    public var code: String
    public init(_ failure: SearchFailure, detail: String, code: String = "") {
        self.failure = failure
        self.detail = detail
        self.code = code
    }
    /// The SDK's NotReady: a question was asked with no microphone to record it.
    public static func notReady(_ detail: String) -> SearchError { SearchError(.microphone, detail: detail, code: "NotReady") }
    /// The SDK's AudioInterrupted: the microphone was lost in the middle of a question.
    public static func audioInterrupted(_ detail: String) -> SearchError {
        SearchError(.microphone, detail: detail, code: "AudioInterrupted")
    }
    public var description: String { detail }
    /// The speaker understands its own commands on the device (issue #63): an offline failure's sentence says what
    /// it can still do.
    public var offlineCommands = false
    /// Words that say more than the failure's own sentence (setup mode: where to go, and the code).
    public var spoken: String?
    /// What the speaker says about it.
    public var sentence: String { spoken ?? failure.sentence(offlineCommands: offlineCommands) }
}

/// What a voice search reports while it runs. A search that was cancelled reports nothing more.
public enum SearchEvent: Sendable, Equatable {
    case partialTranscript(String)
    /// The service has heard enough (Houndify's SafeToStopAudio): the question has ended.
    case safeToStopAudio
    case answer(SpeakerAnswer)
    case failed(SearchError)
}

/// One voice search under way: audio in (from the capture thread), events out.
public protocol VoiceSearchSession: AnyObject, Sendable {
    var events: AsyncStream<SearchEvent> { get }
    /// Queues audio for the upload; false (and nothing queued) once the upload has ended. The session then tells
    /// why through `events` (SafeToStopAudio, the answer, a failure), and the loop's `endAudio` stops the feeding:
    /// the state machine alone decides that the upload has ended.
    func write(_ samples: UnsafeBufferPointer<Int16>) -> Bool
    /// Ends the upload; the search goes on to its answer.
    func finish()
    func cancel()
    /// When the first audio went out, as the transport saw it (for the interaction's timings).
    var firstAudioSent: ContinuousClock.Instant? { get }
}

public protocol VoiceSearchService: Sendable {
    /// `afterHotPhrase`: the audio starts with the end of "OK Hound" (the pre-roll), which the service should drop.
    /// `endsAtSafeToStop`: the service's SafeToStopAudio ends the upload; false (hold-to-talk), only `finish` does.
    func startVoiceSearch(afterHotPhrase: Bool, endsAtSafeToStop: Bool) throws(SearchError) -> any VoiceSearchSession
    /// Keeps the conversation state of the branch of a dynamic response the speaker took (the service keeps that
    /// of ordinary answers itself).
    func keepConversation(_ state: JSONValue)
    /// A typed question (a text search) in the same conversation as the spoken ones. Its session takes no audio
    /// (`write` refuses) and reports as a voice search's does.
    func startTextSearch(_ query: String) throws(SearchError) -> any VoiceSearchSession
    /// The next question starts a new conversation (clearConversationState).
    func clearConversation()
    /// Whether the service answers now: a light check (no query), made while the speaker is offline.
    func reachable() async -> Bool
}

extension VoiceSearchService {
    public func keepConversation(_ state: JSONValue) {}
    /// A service that cannot tell: offline lasts until a question works.
    public func reachable() async -> Bool { false }
}

// MARK: Speech and sounds

/// One utterance or earcon being played.
public protocol Playback: Sendable {
    /// Waits for its end. `problem` names what failed, if anything did.
    func ended() async -> (end: SoundEnd, problem: String?)
}

public protocol SpeechOutputPort: Sendable {
    /// Speaks `text`; `onFirstSample` runs when the first sample of speech reaches the output.
    func speak(_ text: String, onFirstSample: @escaping @Sendable () -> Void) -> any Playback
    func play(_ earcon: Earcon) -> any Playback
    /// Plays a recorded answer (Houndify's own voice) as speech: the same output, stops and timings.
    func playRecording(_ audio: MonoAudio, onFirstSample: @escaping @Sendable () -> Void) -> any Playback
    /// Stops the utterance or earcon playing now: it ends `.interrupted`.
    func stopSpeaking()
}

public protocol VolumeControl: Sendable {
    /// 0-100: the level the sound plays at when it is on.
    var percent: Int { get }
    /// The sound is switched off (Houndify's MuteSound); the level is kept for when it comes back.
    var soundOff: Bool { get }
    /// One step up or down; the new percentage. Switches the sound back on.
    func step(up: Bool) throws(DeviceProblem) -> Int
    /// To a level (clamped to 0-100); the new percentage. Switches the sound back on.
    func set(_ percent: Int) throws(DeviceProblem) -> Int
    func setSoundOff(_ off: Bool) throws(DeviceProblem)
}

// MARK: Board

public protocol BoardPort: Sendable {
    /// What the button means (tap or hold to talk, long press to cancel).
    var intents: AsyncStream<TalkIntent> { get }
    /// The board has a mute switch: its position (told at start) decides mute, not the remembered setting.
    var hasMuteSwitch: Bool { get }
    func show(_ state: LEDState)
    /// LEDs off, lines released.
    func stop()
    /// The LED ring's setting as the board starts; nil: it has none.
    var ring: RingSetting? { get }
    /// The ring on or off, and how bright.
    func setRing(_ setting: RingSetting)
}

extension BoardPort {
    public var ring: RingSetting? { nil }
    public func setRing(_ setting: RingSetting) {}
}

// MARK: Microphone

public enum MicrophoneEvent: Sendable, Equatable {
    case opened(device: String, rate: Int, channels: Int)
    /// Audio was lost and capture recovered.
    case overrun
    /// The device went away; it is looked for again every second.
    case lost(String)
    case recovered
    case stopped
}

public protocol MicrophoneStream: Sendable {
    func stop()
}

public protocol MicrophonePort: Sendable {
    /// The device's name, for messages.
    var device: String { get }
    /// Length of each frame handed to `onFrame`, in milliseconds of 16 kHz mono audio.
    var frameMS: Int { get }
    /// Opens and starts capture. `waitForDevice`: a device missing now is looked for every second instead of
    /// failing. Frames and events arrive on the capture's own thread.
    func open(waitForDevice: Bool, onEvent: @escaping @Sendable (MicrophoneEvent) -> Void,
              onFrame: @escaping @Sendable (UnsafeBufferPointer<Int16>) -> Void) throws(DeviceProblem) -> any MicrophoneStream
}

/// What a frame completed.
public enum HotPhraseHit: Sendable, Equatable {
    /// The hot phrase (or a wake phrase of the household's own).
    case wake
    /// The household's stop phrase, which only counts over the speaker's own sound (docs/household.md).
    case stop
}

/// What of the speaker's own sound plays while a frame is captured.
public enum OwnSound: Sendable, Equatable {
    case none
    /// An answer, an announcement, a prompt or an earcon: words anyone may say.
    case answer
    /// A timer's ring: one known sound, over which the stop word may listen closer (StopWord's ring threshold).
    case ring
}

/// Listens for the hot phrase on every 16 kHz frame. The capture router calls `hear` on the capture thread, and
/// `process` and `reset` on its detector thread (`HotPhraseWorker`), one call at a time, in the order of capture.
public protocol HotPhraseDetecting: AnyObject, Sendable {
    /// On the capture thread, as the frame arrives and before it waits in the detector's queue: writes what the
    /// detector is to hear of `frame` into `heard` (as long as `frame`) and says whether the speaker's echo may be
    /// in it, from what belongs to that moment (the echo canceller's state for this frame). Quick, allocates
    /// nothing, and never waits for `process`. By default: the frame itself, no echo.
    func hear(_ frame: UnsafeBufferPointer<Int16>, into heard: UnsafeMutableBufferPointer<Int16>) -> Bool
    /// What this frame (as `hear` made it) completes, if anything. `over`: what the speaker was playing at its
    /// capture (not `.none`: the frame has been through the echo canceller, barge-in): the detector listens at its
    /// threshold for that, and for the household's stop phrase and the stop word, which it does not report
    /// otherwise. `echoing`: what `hear` said of it.
    func process(_ frame: UnsafeBufferPointer<Int16>, over: OwnSound, echoing: Bool) -> HotPhraseHit?
    /// Forgets what was heard so far.
    func reset()
    /// The latest wake was false (`FalseWake.kept`): a detector that learns the household's false wakes keeps
    /// that wake's frames (issue #37). Called from the loop; must not block it.
    func keepFalseWake()
    /// The latest wake started a question that was answered: a detector that learns the household's voices sets
    /// that wake aside for `keepAnsweredWake`. Called from the loop; must not block it.
    func holdAnsweredWake()
    /// The answer to the wake set aside by `holdAnsweredWake` was heard to the end: a detector that learns the
    /// household's voices may keep that wake as a template (issue #37, "answered wakes can strengthen the
    /// enrollment"). Nothing when none is set aside; it is set aside once. Called from the loop; must not block it.
    func keepAnsweredWake()
}

extension HotPhraseDetecting {
    public func hear(_ frame: UnsafeBufferPointer<Int16>, into heard: UnsafeMutableBufferPointer<Int16>) -> Bool {
        _ = heard.update(fromContentsOf: frame)
        return false
    }

    public func keepFalseWake() {}
    public func holdAnsweredWake() {}
    public func keepAnsweredWake() {}
}

// MARK: Screen

/// The screen's backlight (a kiosk display's), set by the loop: full while something happens, dimmed when the
/// speaker has been quiet for a while, never off (a screen across the room still shows the time and the timers).
public protocol ScreenLight: Sendable {
    /// `percent`: 1-100 of the display's full brightness.
    func set(percent: Int) throws(DeviceProblem)
}

// MARK: Time

/// A one-shot timer that is moved, not re-made, each time it is armed.
public protocol LoopTimer: Sendable {
    /// Fires once, `delay` from now (replacing any earlier arming).
    func schedule(after delay: Duration)
    /// Will not fire until scheduled again.
    func disarm()
}

public protocol LoopClock: Sendable {
    var now: ContinuousClock.Instant { get }
    /// The time of day, in seconds since 1970: what alarms are kept in. It steps when the clock is set.
    var wallTime: WallTime { get }
    /// Seconds on the monotonic clock that counts across suspend (CLOCK_BOOTTIME): what running timers are kept
    /// in, so that a step of the wall clock moves none of them.
    var bootTime: BootTime { get }
    /// Which boot this is (the kernel's boot_id; "" if unknown): a saved `bootTime` means something only in the
    /// same boot.
    var bootID: String { get }
    /// The local time zone and its daylight saving, for alarms.
    var calendar: any LocalCalendar { get }
    func makeTimer(_ fire: @escaping @Sendable () -> Void) -> any LoopTimer
}

extension LoopClock {
    /// Both clocks and the boot, read together.
    public var reading: ClockReading { ClockReading(wall: wallTime, boot: bootTime, bootID: bootID) }
}

// MARK: Timers

/// Where the timers are kept between runs (a file in the state directory, written atomically).
public protocol TimerStore: Sendable {
    /// The saved timers as they stand at `now` (none when nothing was saved yet), and what was wrong with entries
    /// that could not be kept (each is said in the log; the store keeps them aside). Throws when none could be read.
    func load(at now: ClockReading) throws(DeviceProblem) -> (book: TimerBook, problems: [DeviceProblem])
    /// Saves the timers as they stand at `now` (their time left: `TimerBook.json(at:)`).
    func save(_ book: TimerBook, at now: ClockReading) throws(DeviceProblem)
}

/// One setting kept between runs (mute): a file in the state directory.
public protocol FlagStore: Sendable {
    /// The saved value (false when nothing was saved yet). Throws when it cannot tell: the loop then starts muted.
    func load() throws(DeviceProblem) -> Bool
    /// Throws when the value could not be kept as it is; the problem says what a restart would do.
    func save(_ value: Bool) throws(DeviceProblem)
}

// MARK: The machine it runs on

public protocol SystemInfo: Sendable {
    /// The addresses of the up, non-loopback IPv4 interfaces.
    func ipAddresses() -> [String]
    /// Whether the clock has been set from the network (an alarm on a clock never set rings at the wrong time).
    func clockSynchronized() -> Bool
}

// MARK: Owner's commands

/// Runs the commands an owner ties to phrases (`[[houndify.client_match]] run`).
public protocol CommandPort: Sendable {
    /// Starts `command`, not waiting for it; `ended` gets its exit status, or the reason it did not start.
    func run(_ command: String, ended: @escaping @Sendable (Result<Int32, DeviceProblem>) -> Void)
}

// MARK: The household's voices

/// Why a take was not accepted: the take checks refused it, or it could not be checked at all.
public enum TakeCheckFailure: Error, Sendable, Equatable {
    case refused(TakeRefusal)
    case failed(String)
}

/// Checks and keeps the takes of a spoken enrollment (issue #37, `EnrollmentSession`): Assembly's hot-phrase
/// listener, with the take checks and the household's file. Each call returns at once; the work runs on a
/// thread of the port's own and `done` is called from there.
public protocol EnrollmentPort: Sendable {
    /// The phrase enrolled when none is named: the model's own ("OK Hound").
    var defaultPhrase: String { get }
    /// Why no session can run now (nil: one can), e.g. the model has no speech embedding.
    var unavailable: String? { get }
    /// Checks one take (16 kHz mono) as `enroll` does, against the phrase's takes in the household and those held
    /// for this session; accepted, it is held (not saved).
    func check(_ take: [Int16], phrase: String, done: @escaping @Sendable (Result<Void, TakeCheckFailure>) -> Void)
    /// Adds the held takes to the household's file and listens with them at once; `done` gets nil or the problem.
    func save(phrase: String, done: @escaping @Sendable (String?) -> Void)
    /// Drops the takes held.
    func discard()
}

/// The speaker as the control API sees it: events in, a snapshot out (the runtime's SpeakerLoop).
public protocol ControlledSpeaker: AnyObject, Sendable {
    func send(_ event: SpeakerEvent)
    var snapshot: SpeakerSnapshot { get }
    /// The screen was touched: full brightness, and the quiet time before it dims starts again.
    func wakeScreen()
    /// Starts a spoken enrollment of `phrase` (nil: the model's): its first progress, or why it cannot start.
    func enroll(phrase: String?) async -> Result<EnrollmentProgress, DeviceProblem>
    /// Switches the LED ring on or off and sets its brightness (nil: as it is): the setting now, or why not.
    func setRing(on: Bool?, percent: Int?) -> Result<RingSetting, DeviceProblem>
}

extension ControlledSpeaker {
    public func setRing(on: Bool?, percent: Int?) -> Result<RingSetting, DeviceProblem> {
        .failure(DeviceProblem("this speaker has no LED ring"))
    }

    public func enroll(phrase: String?) async -> Result<EnrollmentProgress, DeviceProblem> {
        .failure(DeviceProblem("this speaker cannot learn voices"))
    }
}
