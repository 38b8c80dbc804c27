public import Audio
public import AudioCore
public import Board
public import BoardCore
import Dispatch
import FoundationEssentials
import FoundationInternationalization
import Glibc
import JSONKit
import Platform
public import SpeakerCore
public import Speech
public import Timers
import Synchronization

// The real drivers behind the speaker core's ports. Each adapter only translates: the behaviour is the
// driver's (Houndify, Speech, Board, Audio) or the core's.

// MARK: Speech and sounds

/// espeak-ng's speech and the earcons, played by the speech engine to one output.
public struct EngineSpeech: SpeechOutputPort {
    public let engine: SpeechEngine
    public let output: SpeechOutput
    public let earcons: [Earcon: MonoAudio]

    public init(engine: SpeechEngine, output: SpeechOutput, earcons: [Earcon: MonoAudio]) {
        self.engine = engine
        self.output = output
        self.earcons = earcons
    }

    struct Playing: Playback {
        let task: SpeechTask?
        let what: String

        func ended() async -> (end: SoundEnd, problem: String?) {
            guard let task else { return (.interrupted, "\(what): no such sound") }
            switch await task.result() {
            case .success(let result): return (result.outcome == .finished ? .finished : .interrupted, nil)
            case .failure(let error): return (error.isOutputDevice ? .outputFailed : .interrupted, "\(what): \(error)")
            }
        }
    }

    public func speak(_ text: String, onFirstSample: @escaping @Sendable () -> Void) -> any Playback {
        Playing(task: engine.speak(text, to: output, onFirstSample: onFirstSample), what: "speech")
    }

    public func playRecording(_ audio: MonoAudio, onFirstSample: @escaping @Sendable () -> Void) -> any Playback {
        Playing(task: engine.play(audio, to: output, onFirstSample: onFirstSample), what: "Houndify's voice")
    }

    public func play(_ earcon: Earcon) -> any Playback {
        Playing(task: earcons[earcon].map { engine.play($0, to: output) }, what: "earcon \(earcon.rawValue)")
    }

    public func stopSpeaking() { engine.stopSpeaking() }
}

/// The output volume: an ALSA mixer control, or the speech engine's own gain.
public struct MixerVolume: VolumeControl {
    public let volume: OutputVolume
    public init(_ volume: OutputVolume) { self.volume = volume }
    public var percent: Int { volume.current }
    public var soundOff: Bool { volume.isSoundOff }
    public func step(up: Bool) throws(DeviceProblem) -> Int {
        do throws(AudioDeviceError) { return up ? try volume.up() : try volume.down() } catch {
            throw DeviceProblem("volume: \(error)")
        }
    }
    public func set(_ percent: Int) throws(DeviceProblem) -> Int {
        do throws(AudioDeviceError) { return try volume.set(percent) } catch { throw DeviceProblem("volume: \(error)") }
    }
    public func setSoundOff(_ off: Bool) throws(DeviceProblem) {
        do throws(AudioDeviceError) { try volume.setSoundOff(off) } catch { throw DeviceProblem("volume: \(error)") }
    }
}

// MARK: Board

/// The button and LEDs (libgpiod, or the simulated board on a terminal).
public struct RunnerBoard: BoardPort {
    public let runner: BoardRunner
    public let intents: AsyncStream<TalkIntent>
    public let hasMuteSwitch: Bool

    /// `gestures` hears each of the button's gestures, before the intents they make reach the loop.
    public init(_ runner: BoardRunner, hasMuteSwitch: Bool = false, gestures: @escaping @Sendable (ButtonGestures.Event) -> Void = { _ in }) {
        self.runner = runner
        self.hasMuteSwitch = hasMuteSwitch
        intents = mapping(runner.events) { event in
            switch event {
            case .intent(let intent): return intent
            case .button(let gesture): gestures(gesture)
            case .inputEnded: break
            }
            return nil
        }
    }

    public func show(_ state: LEDState) { runner.show(state) }
    public func stop() { runner.stop() }
    public var ring: RingSetting? { runner.ringSetting }
    public func setRing(_ setting: RingSetting) { runner.setRing(setting) }
}

// MARK: Microphone

/// ALSA capture, converted to 16 kHz mono on its own thread.
public struct ALSAMicrophone: MicrophonePort {
    public var settings: CaptureSettings
    /// Every frame goes through it before anyone hears it (`[audio] echo_cancel`).
    public var echo: EchoCanceller?
    public init(_ settings: CaptureSettings, echo: EchoCanceller? = nil) {
        self.settings = settings
        self.echo = echo
    }
    public var device: String { settings.device }
    public var frameMS: Int { settings.frameMS }

    struct Stream: MicrophoneStream {
        let capture: ALSACapture
        func stop() { capture.stop() }
    }

    public func open(waitForDevice: Bool, onEvent: @escaping @Sendable (MicrophoneEvent) -> Void,
                     onFrame: @escaping @Sendable (UnsafeBufferPointer<Int16>) -> Void) throws(DeviceProblem) -> any MicrophoneStream {
        do throws(AudioDeviceError) {
            let capture = try ALSACapture(settings: settings, waitForDevice: waitForDevice, echoCanceller: echo, onEvent: { event in
                switch event {
                case .opened(let device, let rate, let channels): onEvent(.opened(device: device, rate: rate, channels: channels))
                case .overrun: onEvent(.overrun)
                case .lost(let error): onEvent(.lost("\(error)"))
                case .recovered: onEvent(.recovered)
                case .stopped: onEvent(.stopped)
                }
            }, onFrame: { frame, _ in onFrame(frame) })
            capture.start()
            return Stream(capture: capture)
        } catch {
            throw DeviceProblem("microphone: \(error)")
        }
    }
}

// MARK: Time

/// The real clock: dispatch timers, each moved rather than re-made when re-armed. (A Task sleeping per state
/// would do the same, but a cancelled Task.sleep keeps its timer and memory until its deadline, up to a minute:
/// at a query every few seconds that piles up, as the loop benchmark showed.)
public struct DispatchClock: LoopClock {
    public let calendar: any LocalCalendar
    public init(calendar: any LocalCalendar = SystemCalendar()) { self.calendar = calendar }
    public var now: ContinuousClock.Instant { .now }
    public var wallTime: WallTime {
        var t = timespec()
        clock_gettime(CLOCK_REALTIME, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
    /// CLOCK_BOOTTIME, the clock ContinuousClock reads on Linux: it never steps, and counts across suspend.
    public var bootTime: BootTime {
        var t = timespec()
        clock_gettime(CLOCK_BOOTTIME, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
    public var bootID: String { Self.bootID }
    /// The kernel's id of this boot, read once (it cannot change while the process runs).
    static let bootID: String = {
        guard let data = FileManager.default.contents(atPath: "/proc/sys/kernel/random/boot_id") else { return "" }
        return String(decoding: data, as: UTF8.self).trimmed(.whitespacesAndNewlines)
    }()

    /// @unchecked: a libdispatch timer source (a C object); libdispatch makes its calls thread-safe, but its
    /// Swift overlay does not mark it Sendable.
    final class Timer: LoopTimer, @unchecked Sendable {
        /// One serial queue for every timer: their handlers only hand an event to the loop, and libdispatch keeps as
        /// many worker threads as queues once fired together, alive while any of them fires again within 5 s (a
        /// running timer ticks every second), so a queue each grew the process by a thread it never gave back.
        private static let queue = DispatchQueue(label: "hound-speaker.timers")
        private let source: any DispatchSourceTimer

        init(fire: @escaping @Sendable () -> Void) {
            source = DispatchSource.makeTimerSource(queue: Self.queue)
            source.setEventHandler(handler: fire)
            source.schedule(deadline: .distantFuture)
            source.resume()
        }

        deinit { source.cancel() }

        func schedule(after delay: Duration) {
            let (seconds, attoseconds) = delay.components
            // Nanoseconds in an Int hold 292 years; a longer delay (the loop asks for a day at most) is never, and a
            // negative one is now, rather than a trap.
            guard seconds < 1 << 32 else {
                source.schedule(deadline: .distantFuture)
                return
            }
            let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
            source.schedule(deadline: .now() + .nanoseconds(max(0, nanoseconds)))
        }

        func disarm() { source.schedule(deadline: .distantFuture) }
    }

    public func makeTimer(_ fire: @escaping @Sendable () -> Void) -> any LoopTimer { Timer(fire: fire) }
}

// MARK: The machine it runs on

/// The system's time zone (TZ, else /etc/localtime) as the C library knows it, daylight saving included.
public struct SystemCalendar: LocalCalendar {
    public init() {}
    public func utcOffset(at time: WallTime) -> Int {
        var seconds = time_t(time.rounded(.down))
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return 0 }
        return Int(parts.tm_gmtoff)
    }
}

/// Local time in the configured zone (`[location] timezone`), which setup mode's page may set while the speaker
/// runs: alarms and the time the speaker tells follow it at once, with no TZ to change under running threads.
/// Without a zone (or with one ICU does not know), the C library's.
public final class SpeakerCalendar: LocalCalendar {
    private let zone = Mutex<TimeZone?>(nil)

    public init(zone identifier: String) { set(zone: identifier) }

    /// False when there is no such zone: the system's is used.
    @discardableResult
    public func set(zone identifier: String) -> Bool {
        let found = identifier.isEmpty ? nil : TimeZone(identifier: identifier)
        zone.withLock { $0 = found }
        return identifier.isEmpty || found != nil
    }

    public func utcOffset(at time: WallTime) -> Int {
        guard let zone = zone.withLock({ $0 }) else { return SystemCalendar().utcOffset(at: time) }
        return zone.secondsFromGMT(for: Date(timeIntervalSince1970: time))
    }
}

public struct HostSystem: SystemInfo {
    public init() {}

    /// The kernel's NTP state (adjtimex(2)), as the doctor's clock check reads it.
    public func clockSynchronized() -> Bool {
        if case .synchronized = KernelClock.state { true } else { false }
    }

    public func ipAddresses() -> [String] {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return [] }
        defer { freeifaddrs(list) }
        var out: [String] = []
        var item: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = item {
            defer { item = entry.pointee.ifa_next }
            guard let address = entry.pointee.ifa_addr, address.pointee.sa_family == UInt16(AF_INET),
                  entry.pointee.ifa_flags & UInt32(IFF_LOOPBACK) == 0, entry.pointee.ifa_flags & UInt32(IFF_UP) != 0 else { continue }
            var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
            if getnameinfo(address, socklen_t(MemoryLayout<sockaddr_in>.size), &host, socklen_t(host.count), nil, 0, NI_NUMERICHOST) == 0 {
                out.append(String(decoding: host.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            }
        }
        return out
    }
}

/// The timers kept in a JSON file (`[speaker] timers_file`, by default timers.json in the state directory), written
/// atomically (Platform's AtomicFile): a power cut keeps the last list whole. What it cannot read is kept aside
/// (`timers.json.bad-DATE`) before anything replaces it, and named in the log. A file it cannot open (one the
/// service's user may not read: issue #34 lost two timers and an alarm that way), or a damaged one it could not keep
/// aside (a full disk), is held: never replaced while that lasts. Each save tries again (the loop saves at every
/// change and every minute until it works), and says why it saved nothing.
public struct TimerFile: TimerStore {
    public let path: String
    /// Why the file as it is must not be replaced (nil: nothing held). Set by `load`, cleared by the save that
    /// finds the file gone, or readable and kept aside.
    private let held = Held()

    public init(path: String) { self.path = path }

    private final class Held: Sendable {
        let reason = Mutex<String?>(nil)
    }

    public func load(at now: ClockReading) throws(DeviceProblem) -> (book: TimerBook, problems: [DeviceProblem]) {
        let data: [UInt8]
        switch AtomicFile.read(path) {
        case .none:
            held.reason.withLock { $0 = nil }
            return (TimerBook(), [])
        case .unreadable(let reason):
            held.reason.withLock { $0 = "unreadable at the start: \(reason)" }
            throw DeviceProblem("cannot read the timers file \(path) (\(reason)); it is left as it is, and no timer is saved "
                                + "until it can be read")
        case .bytes(let bytes):
            data = bytes
        }
        let read: (book: TimerBook, rejected: [TimerFileRejection])
        do {
            read = try TimerBook.reading(json: try JSONValue(parsing: Data(data)), at: now)
        } catch {
            let kept = setAside(data, keeping: TimerBook(), at: now)
            throw DeviceProblem("the timers file \(path) is not readable (\(error))\(kept)")
        }
        guard !read.rejected.isEmpty else { return (read.book, []) }
        let kept = setAside(data, keeping: read.book, at: now)
        return (read.book, read.rejected.map { DeviceProblem("the timers file \(path): \($0); left out\(kept)") })
    }

    public func save(_ book: TimerBook, at now: ClockReading) throws(DeviceProblem) {
        if let reason = held.reason.withLock({ $0 }) { try release(reason) }
        try write(book, at: now)
    }

    private func write(_ book: TimerBook, at now: ClockReading) throws(DeviceProblem) {
        do throws(AtomicFile.Failure) { try AtomicFile.write(Array(book.json(at: now).asciiJSON().utf8), to: path) } catch {
            throw DeviceProblem("timers: \(error)")
        }
    }

    /// A held file may be replaced once it is gone, or has been read and kept aside; until then nothing is saved.
    private func release(_ reason: String) throws(DeviceProblem) {
        switch AtomicFile.read(path) {
        case .none:
            break
        case .unreadable(let now):
            throw DeviceProblem("timers: not saved: the timers file \(path) cannot be read (\(now)), and is not replaced "
                                + "by timers that would lose what it holds")
        case .bytes(let bytes):
            do throws(AtomicFile.Failure) { _ = try keepAside(bytes) } catch {
                throw DeviceProblem("timers: not saved: the timers file \(path) (\(reason)) could not be kept aside "
                                    + "(\(error)), and is not replaced until it can be")
            }
        }
        held.reason.withLock { $0 = nil }
    }

    /// A copy of `bytes` beside the file, named for the time (`timers.json.bad-20261126T013000Z`, then `-2`, ...).
    /// Returns its path.
    private func keepAside(_ bytes: [UInt8]) throws(AtomicFile.Failure) -> String {
        var now = time(nil), parts = tm()
        var stamp = [CChar](repeating: 0, count: 32)
        if gmtime_r(&now, &parts) != nil { _ = strftime(&stamp, stamp.count, "%Y%m%dT%H%M%SZ", &parts) }
        let base = "\(path).bad-\(String(decoding: stamp.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))"
        var copy = base, n = 1
        while FileManager.default.fileExists(atPath: copy) {
            n += 1
            copy = "\(base)-\(n)"
        }
        try AtomicFile.write(bytes, to: copy)
        return copy
    }

    /// Copies the file as it was beside it, then writes what was read in its place, so that the next start does not
    /// find the same damage (and copy it again). Nothing is replaced unless the copy was made: without it the file
    /// is held (`save` tries the copy again first). Returns the words for the log.
    func setAside(_ data: [UInt8], keeping book: TimerBook, at clocks: ClockReading) -> String {
        let copy: String
        do throws(AtomicFile.Failure) { copy = try keepAside(data) } catch {
            held.reason.withLock { $0 = "damaged" }
            return "; the file could not be kept aside (\(error)), so it is left as it is, and no timer is saved until it can be"
        }
        held.reason.withLock { $0 = nil }
        try? write(book, at: clocks)  // if this fails, the next start finds the damage again and copies it again: nothing is lost
        return "; the file as it was is kept as \(copy)"
    }
}

/// Mute kept in a small file (`[speaker] mute_file`, by default `muted` in the state directory): "true" or
/// "false", written atomically. No file means never muted (a new speaker). Anything else that does not say for
/// certain (a damaged or empty file, one it may not read) is an error, which the loop takes as muted: a privacy
/// setting fails closed.
public struct FlagFile: FlagStore {
    public let path: String
    public init(path: String) { self.path = path }

    public func load() throws(DeviceProblem) -> Bool {
        // Only "no such file" means never muted (AtomicFile.read tells it from a folder it may not search).
        let bytes: [UInt8]
        switch AtomicFile.read(path, limit: 64) {  // "false\n" and some whitespace: anything longer is not one of the two
        case .none: return false
        case .unreadable(let reason): throw DeviceProblem("cannot read \(path): \(reason)")
        case .bytes(let read): bytes = read
        }
        let text = String(decoding: bytes.prefix(65), as: UTF8.self).trimmed(.whitespacesAndNewlines)
        switch text {
        case "true": return true
        case "false": return false
        default: throw DeviceProblem("\(path) holds neither true nor false (\(JSONValue.string(String(text.prefix(20))).asciiJSON()))")
        }
    }

    public func save(_ value: Bool) throws(DeviceProblem) {
        do throws(AtomicFile.Failure) { try AtomicFile.write(Array("\(value)\n".utf8), to: path) } catch {
            // A full disk must not undo a mute at the next start. An empty file needs no space, and reads as
            // unknown, which starts muted.
            if value && emptied() {
                throw DeviceProblem("mute: \(error); the mute file is emptied instead, so a restart starts muted")
            }
            throw DeviceProblem("mute: \(error); \(value ? "muted now, but a restart would not remember it" : "unmuted now, but a restart may start muted")")
        }
    }

    private func emptied() -> Bool {
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        return ftruncate(fd, 0) == 0 && fsync(fd) == 0
    }
}

/// A display's backlight through sysfs (`/sys/class/backlight/NAME`: `max_brightness`, `brightness`), as the
/// kernel's backlight class offers it for the Raspberry Pi touch displays. Writing it needs the file to be writable
/// by the service's user (deploy/README.md, "The screen": a udev rule gives it to the video group).
public struct SysfsBacklight: ScreenLight {
    public let directory: String

    public init(directory: String) { self.directory = directory }

    public func set(percent: Int) throws(DeviceProblem) {
        let maxPath = directory + "/max_brightness"
        guard let data = FileManager.default.contents(atPath: maxPath),
              let maximum = Int(String(decoding: data, as: UTF8.self).trimmed(.whitespacesAndNewlines)), maximum > 0 else {
            throw DeviceProblem("[screen] backlight: cannot read \(maxPath) (ls /sys/class/backlight shows the displays' backlights)")
        }
        // Never 0 for a dimmed screen: some panels switch off at 0.
        let value = max(1, (maximum * min(100, max(1, percent)) + 50) / 100)
        let path = directory + "/brightness"
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw DeviceProblem("[screen] backlight: cannot write \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        // sysfs takes an attribute in one write; it does not block.
        let text = Array("\(value)\n".utf8)
        let written = text.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == text.count else {
            throw DeviceProblem("[screen] backlight: writing \(value) to \(path) failed: \(String(cString: strerror(errno)))")
        }
    }
}

// MARK: The LED ring's timer arc

public enum RingTimers {
    /// The running timer nearest its end, as the ring's arc shows it (its length, and the time left now); nil when
    /// none runs. A paused or ringing timer has no arc: the ring shows the state for those.
    public static func next(in snapshot: SpeakerSnapshot) -> RingTimer? {
        let now = snapshot.now
        guard let next = snapshot.timers.filter(\.isRunning).min(by: { $0.remaining(at: now) < $1.remaining(at: now) }) else {
            return nil
        }
        // Milliseconds, saturated: a timer file edited by hand can hold any number.
        let left = next.remaining(at: now) * 1000
        let leftMS = left.isFinite ? Int64(min(max(left, 0), 1e15)) : 0
        return RingTimer(length: .seconds(max(next.seconds, 0)), left: .milliseconds(leftMS))
    }
}
