import CALSA
public import AudioCore
import CSoxr
import FoundationEssentials
import Glibc
import Platform
import Synchronization

/// What the capture thread reports besides audio (one event per change of state, so a missing microphone logs
/// once, not every second).
public enum CaptureEvent: Sendable, Equatable {
    case opened(device: String, rate: Int, channels: Int)
    /// An overrun: the app fell behind; recovered with snd_pcm_recover.
    case overrun
    /// The device went away (a USB microphone unplugged); it is looked for every `retryInterval`.
    case lost(AudioDeviceError)
    /// It is back.
    case recovered
    case stopped
}

/// The microphone: reads an ALSA PCM on a thread the app owns, at the device's own rate and channel count, picks
/// one channel, resamples to 16 kHz with libsoxr and hands over frames of `frameMS` with their level in dBFS.
/// The frame buffer is reused: the handler must copy what it keeps. Nothing is allocated per frame.
public final class ALSACapture: Sendable {
    public typealias FrameHandler = @Sendable (UnsafeBufferPointer<Int16>, Double) -> Void
    public typealias EventHandler = @Sendable (CaptureEvent) -> Void
    /// Reads up to `frames` interleaved frames; the default is snd_pcm_readi. Tests wrap it to inject the
    /// errors a real device gives (an overrun, a device that goes away) around the real call.
    public typealias Reader = @Sendable (OpaquePointer, UnsafeMutablePointer<Int16>, Int) -> Int

    public let settings: CaptureSettings
    private let onFrame: FrameHandler
    private let onEvent: EventHandler
    private let reader: Reader
    private let control = Condition()
    private let flags = Mutex<(stop: Bool, done: Bool)>((false, false))
    private let first: Mutex<DeviceSession?>
    /// Takes the speaker's own sound out of every frame before anyone hears it (`[audio] echo_cancel`).
    private let echoCanceller: EchoCanceller?
    /// Why the device could not be opened at start, when the capture was told to wait for it.
    private let missingAtStart: AudioDeviceError?

    /// Opens the device now: a bad or missing device throws here, so it is an error at start-up rather than a log
    /// line later. With `waitForDevice`, a device that cannot be opened yet is reported once as `.lost` when the
    /// capture starts and looked for every `retryInterval` until it appears (`.recovered`): the always-on
    /// microphone of the hot phrase must not stay deaf because a USB microphone was plugged in after boot.
    /// Settings that can never work (frame length, rate, channel) throw either way.
    /// With `echoCanceller`, every frame is placed on the timeline (when it was heard, from the device's own delay)
    /// and the speaker's own sound is taken out of it before the level is measured and `onFrame` is called.
    public init(settings: CaptureSettings, waitForDevice: Bool = false, reader: Reader? = nil, echoCanceller: EchoCanceller? = nil,
                onEvent: @escaping EventHandler = { _ in }, onFrame: @escaping FrameHandler) throws(AudioDeviceError) {
        self.settings = settings
        self.echoCanceller = echoCanceller
        self.onFrame = onFrame
        self.onEvent = onEvent
        self.reader = reader ?? ALSACapture.readInterleaved
        guard [10, 20].contains(settings.frameMS) else {
            throw AudioDeviceError(device: settings.device, message: "frames must be 10 or 20 ms, not \(settings.frameMS)")
        }
        if let echoCanceller, (settings.frameMS * SpeakerAudio.sampleRate / 1000) % echoCanceller.frameSamples != 0 {
            throw AudioDeviceError(device: settings.device, message: "\(settings.frameMS) ms frames cannot go through the echo canceller's \(echoCanceller.frameSamples / SpeakerAudio.samplesPerMS) ms frames", isConfiguration: true)
        }
        guard settings.rate > 0 else { throw AudioDeviceError(device: settings.device, message: "capture rate must be positive, not \(settings.rate)") }
        guard settings.channels > 0, (0..<settings.channels).contains(settings.channel) else {
            throw AudioDeviceError(device: settings.device, message: "input channel \(settings.channel) is not one of the \(settings.channels) channels asked for")
        }
        do throws(AudioDeviceError) {
            first = Mutex(try DeviceSession(settings: settings, echo: echoCanceller))
            missingAtStart = nil
        } catch {
            guard waitForDevice else { throw error }
            first = Mutex(nil)
            missingAtStart = error
        }
    }

    /// The rate the device gave (before resampling to 16 kHz); 0 once started or closed.
    public var deviceRate: Int { first.withLock { $0?.rate ?? 0 } }

    /// Whether frames are held to real time (CapturePacing); false once started or closed.
    public var isPaced: Bool { first.withLock { $0?.paced ?? false } }

    /// Closes a capture that was opened but never started.
    public func close() { first.withLock { $0?.close(); $0 = nil } }

    public func start() {
        OwnedThread.start(name: "hs-capture") { [self] in run() }
    }

    /// Stops reading and closes the device; returns once the thread has let go of it.
    public func stop() {
        flags.withLock { $0.stop = true }
        control.lock()
        control.broadcast()
        while !flags.withLock({ $0.done }) { control.wait() }
        control.unlock()
    }

    private var stopping: Bool { flags.withLock { $0.stop } }

    /// How many capture handles are open on each device in this process. A speaker keeps at most one (the
    /// always-on microphone, or the one of the question being recorded); the soak and the loop's tests check that
    /// every path out of a query gives it back.
    static let openDevices = Mutex<[String: Int]>([:])

    public static func openCount(device: String) -> Int { openDevices.withLock { $0[device] ?? 0 } }

    private func run() {
        var session = first.withLock { s -> DeviceSession? in defer { s = nil }; return s }
        if let s = session { onEvent(.opened(device: settings.device, rate: s.rate, channels: s.channels)) }
        var lostReported = false
        if session == nil, let missingAtStart {
            lostReported = true
            onEvent(.lost(missingAtStart))
        }
        let clock = ContinuousClock()
        var paceStart = clock.now
        var framesRead = 0
        while !stopping {
            guard let current = session else {
                // Lost: look again after the retry interval (woken early by stop()).
                control.lock()
                control.wait(seconds: Double(settings.retryInterval.components.seconds)
                    + Double(settings.retryInterval.components.attoseconds) / 1e18)
                control.unlock()
                if stopping { break }
                do throws(AudioDeviceError) {
                    session = try DeviceSession(settings: settings, echo: echoCanceller)
                    lostReported = false
                    onEvent(.recovered)
                } catch {
                    if !lostReported { lostReported = true; onEvent(.lost(error)) }
                }
                continue
            }
            let n = current.readPeriod(using: reader)
            if n >= 0 {
                current.deliver(frames: n, to: onFrame)
                if current.paced && n > 0 {
                    framesRead += n
                    let due = paceStart + .microseconds(Int64(framesRead) * 1_000_000 / Int64(current.rate))
                    let wait = clock.now.duration(to: due)
                    if wait > .zero { usleep(UInt32(wait / .microseconds(1))) } else if wait < .seconds(-1) {
                        paceStart = clock.now  // fell far behind (a stop in the debugger): start pacing afresh
                        framesRead = 0
                    }
                }
                continue
            }
            let code = Int32(n)
            if code == -EAGAIN || code == -EINTR { continue }
            if code == -EPIPE || code == -ESTRPIPE {
                onEvent(.overrun)
                if current.recover(code) { continue }
            }
            let error = AudioDeviceError.from(device: settings.device, operation: "capture failed", code: code)
            current.close()
            session = nil
            lostReported = true
            onEvent(.lost(error))
        }
        session?.close()
        onEvent(.stopped)
        flags.withLock { $0.done = true }
        control.lock()
        control.broadcast()
        control.unlock()
    }
}

/// One open capture device with its buffers and resampler (capture thread only).
/// @unchecked: it owns the ALSA PCM and soxr handles (C handles), touched by the capture thread only.
private final class DeviceSession: @unchecked Sendable {
    let settings: CaptureSettings
    private var pcm: OpaquePointer?
    let rate: Int
    let channels: Int
    /// Whether reads are held to real time (CapturePacing): asked for, or automatic for a `file` PCM.
    let paced: Bool
    private let periodFrames: Int
    private var interleaved: [Int16]
    private var mono: [Int16]
    private var resampled: [Int16]
    private var resampler: soxr_t?
    private var frame: [Int16]
    private var filled = 0
    private let echo: EchoCanceller?
    /// Keeps the frames' timeline positions continuous while following the device's delay (echo cancellation only).
    private var clock = StreamClock()
    /// Where the frame being filled starts on the timeline.
    private var framePosition: TimelinePosition = 0

    init(settings: CaptureSettings, echo: EchoCanceller? = nil) throws(AudioDeviceError) {
        self.settings = settings
        self.echo = echo
        _ = quietALSA
        var handle: OpaquePointer?
        var rc = snd_pcm_open(&handle, settings.device, SND_PCM_STREAM_CAPTURE, 0)
        guard rc >= 0, let handle else { throw .from(device: settings.device, operation: "cannot open for capture", code: rc) }
        var params: OpaquePointer?
        snd_pcm_hw_params_malloc(&params)
        defer { snd_pcm_hw_params_free(params) }
        var rate = UInt32(settings.rate)
        func fail(_ what: String, _ code: Int32) -> AudioDeviceError {
            snd_pcm_close(handle)
            return .from(device: settings.device, operation: what, code: code)
        }
        rc = snd_pcm_hw_params_any(handle, params)
        if rc < 0 { throw fail("cannot read its capabilities", rc) }
        rc = snd_pcm_hw_params_set_access(handle, params, SND_PCM_ACCESS_RW_INTERLEAVED)
        if rc < 0 { throw fail("no interleaved access", rc) }
        rc = snd_pcm_hw_params_set_format(handle, params, SND_PCM_FORMAT_S16_LE)
        if rc < 0 { throw fail("cannot capture 16-bit samples (use a plughw: device)", rc) }
        rc = snd_pcm_hw_params_set_channels(handle, params, UInt32(settings.channels))
        if rc < 0 { throw fail("cannot capture \(settings.channels) channel(s)", rc) }
        // The device's own rate: ALSA must not resample (libsoxr does it better, once).
        snd_pcm_hw_params_set_rate_resample(handle, params, 0)
        rc = snd_pcm_hw_params_set_rate_near(handle, params, &rate, nil)
        if rc < 0 || rate == 0 { throw fail("cannot capture near \(settings.rate) Hz", rc < 0 ? rc : -EINVAL) }
        // 10 ms periods at the rate given, in a buffer of half a second: reads still return each period as soon as it
        // is captured (no added latency), and the capture thread may fall that far behind (a slow storage write, a
        // busy core, a hot-phrase step) before an overrun drops audio. With 80 ms the box lost the first question
        // of a press to five overruns (BENCHMARKS.md, "The Pi in a box").
        var period = snd_pcm_uframes_t(max(1, Int(rate) / 100))
        var buffer = period * 50
        snd_pcm_hw_params_set_period_size_near(handle, params, &period, nil)
        snd_pcm_hw_params_set_buffer_size_near(handle, params, &buffer)
        rc = snd_pcm_hw_params(handle, params)
        if rc < 0 { throw fail("cannot be set up for \(settings.channels) channel(s) at \(rate) Hz", rc) }
        rc = snd_pcm_prepare(handle)
        if rc < 0 { throw fail("cannot be prepared", rc) }
        pcm = handle
        ALSACapture.openDevices.withLock { $0[settings.device, default: 0] += 1 }
        self.rate = Int(rate)
        channels = settings.channels
        switch settings.pacing {
        case .auto: paced = snd_pcm_type(handle) == SND_PCM_TYPE_FILE
        case .realTime: paced = true
        case .none: paced = false
        }
        periodFrames = Int(period)
        interleaved = [Int16](repeating: 0, count: periodFrames * channels)
        mono = [Int16](repeating: 0, count: periodFrames)
        let outCapacity = periodFrames * SpeakerAudio.sampleRate / self.rate + 64
        resampled = [Int16](repeating: 0, count: outCapacity)
        frame = [Int16](repeating: 0, count: SpeakerAudio.sampleRate * settings.frameMS / 1000)
        if self.rate != SpeakerAudio.sampleRate {
            var error: soxr_error_t?
            var io = soxr_io_spec(SOXR_INT16_I, SOXR_INT16_I)
            var quality = soxr_quality_spec(UInt(SOXR_HQ), 0)
            resampler = soxr_create(Double(self.rate), Double(SpeakerAudio.sampleRate), 1, &error, &io, &quality, nil)
            if let error {
                snd_pcm_close(handle)
                pcm = nil
                throw AudioDeviceError(device: settings.device, message: "libsoxr: \(String(cString: error))")
            }
        }
    }

    deinit { close() }

    func readPeriod(using reader: ALSACapture.Reader) -> Int {
        guard let pcm else { return -Int(EBADFD) }
        return interleaved.withUnsafeMutableBufferPointer { reader(pcm, $0.baseAddress!, periodFrames) }
    }

    func recover(_ code: Int32) -> Bool {
        guard let pcm else { return false }
        return snd_pcm_recover(pcm, code, 1) >= 0
    }

    /// When the first of `n` frames just read was heard, on the timeline: now, less what the device still holds
    /// after them (snd_pcm_delay: frames captured and not yet read, and its own latency), less the `n` frames.
    private func heardPosition(framesRead n: Int) -> TimelinePosition {
        var delay: snd_pcm_sframes_t = 0
        if let pcm, snd_pcm_delay(pcm, &delay) < 0 { delay = 0 }
        return timelineNow() - TimelinePosition.timeline(frames: max(0, Int(delay)) + n, rate: rate)
    }

    /// Picks the channel, resamples, and hands over every completed frame.
    func deliver(frames n: Int, to handler: ALSACapture.FrameHandler) {
        guard n > 0 else { return }
        let heard = echo == nil ? 0 : heardPosition(framesRead: n)
        let step = channels, pick = settings.channel
        for i in 0..<n { mono[i] = interleaved[i * step + pick] }
        if let resampler {
            var used = 0, made = 0
            mono.withUnsafeBufferPointer { input in
                resampled.withUnsafeMutableBufferPointer { output in
                    _ = soxr_process(resampler, input.baseAddress, n, &used, output.baseAddress, output.count, &made)
                }
            }
            // What libsoxr gives now is what it was given `soxr_delay` output samples ago.
            let latency = TimelinePosition(soxr_delay(resampler).rounded())
            append(resampled, count: made, startingAt: heard - latency, to: handler)
        } else {
            append(mono, count: n, startingAt: heard, to: handler)
        }
    }

    private func append(_ samples: [Int16], count: Int, startingAt reported: TimelinePosition, to handler: ALSACapture.FrameHandler) {
        let start = echo == nil || count == 0 ? 0 : clock.place(count: count, reported: reported)
        var index = 0
        while index < count {
            if filled == 0 { framePosition = start + TimelinePosition(index) }
            let take = min(count - index, frame.count - filled)
            for i in 0..<take { frame[filled + i] = samples[index + i] }
            filled += take
            index += take
            if filled == frame.count {
                filled = 0
                if let echo {
                    let at = framePosition
                    frame.withUnsafeMutableBufferPointer { echo.process($0, heard: at) }
                }
                let level = AudioLevel.dBFS(frame)
                frame.withUnsafeBufferPointer { handler($0, level) }
            }
        }
    }

    func close() {
        if let resampler { soxr_delete(resampler) }
        resampler = nil
        if let pcm {
            snd_pcm_close(pcm)
            ALSACapture.openDevices.withLock { $0[settings.device, default: 1] -= 1 }
        }
        pcm = nil
    }
}

extension ALSACapture {
    /// The default reader: snd_pcm_readi (a test's reader wraps this real call).
    public static let readInterleaved: Reader = { pcm, buffer, frames in
        Int(snd_pcm_readi(pcm, buffer, snd_pcm_uframes_t(frames)))
    }
}
