public import AudioCore
import CSpeexDSP
import Glibc
import Platform
import Synchronization

/// The monotonic clock as a timeline position (what both devices' positions are measured against).
public func timelineNow() -> TimelinePosition {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    let nanoseconds: Int64 = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    return TimelinePosition.timeline(nanoseconds: nanoseconds)
}

/// speexdsp's acoustic echo canceller between the speaker's output and the microphone. The output's thread tells
/// it what it wrote and when that will be heard (`played`); the capture thread hands it each frame with when it was
/// heard (`process`), and gets back the frame with the speaker's own sound taken out: speexdsp's adaptive filter
/// (MDF) first, then its preprocessor's residual echo suppression while an echo may be in the frame. Everything
/// is allocated up front; a frame allocates nothing. The state is touched only under `lock`.
/// @unchecked: it owns speexdsp's C states and buffers of its own, touched only under `lock` (a Mutex of no value:
/// those C calls take the callers' unsafe buffers with the state's, which a Mutex value's `sending` rules reject).
public final class EchoCanceller: @unchecked Sendable {
    /// speexdsp's frame in samples at 16 kHz (`EchoCancelSettings.frameMS`).
    public let frameSamples: Int
    /// The reference is taken this much earlier than the configured delay says: speexdsp's filter is causal, so a
    /// reference that comes even a little after its echo cannot cancel it, while one a little before only uses a
    /// few of the filter's taps.
    public static let guardMS = 4
    /// How long the output's reference is kept: the capture can be this late (a stall) and still find it.
    static let referenceSeconds = 3
    /// The longest capture frame handled in one call (samples).
    public static let maxFrame = SpeakerAudio.sampleRate / 10
    /// Room for one resampler call's output.
    static let resampledCapacity = 8_192

    public let settings: EchoCancelSettings
    /// Guards everything below that is not atomic: the speexdsp states, the reference, the resampler and the buffers.
    private let lock = Mutex(())
    private let echo: OpaquePointer
    private let preprocess: OpaquePointer
    private var reference: EchoReference
    private var playbackClock = StreamClock()
    private var resampler: OpaquePointer?
    private var resamplerRate = 0
    private let resampled: UnsafeMutablePointer<Int16>
    private let referenceFrame: UnsafeMutablePointer<Int16>
    private let cancelled: UnsafeMutablePointer<Int16>
    /// The last frame as the adaptive filter left it (before the residual suppressor), and as it was handed back,
    /// for `hotPhraseFrame`.
    private let filtered: UnsafeMutablePointer<Int16>
    private let handedBack: UnsafeMutablePointer<Int16>
    private var lastCount = 0
    private let delaySamples: Int64
    private let tailSamples: Int64
    /// Whether the last frame processed may have held the speaker's own sound (read on the capture thread).
    private let active = Atomic<Bool>(false)

    public init(settings: EchoCancelSettings) {
        self.settings = settings
        let tailMS: Int = settings.tailMS.clamped(to: EchoCancelSettings.tailRange)
        let delayMS: Int = max(0, settings.delayMS - Self.guardMS)
        tailSamples = Int64(tailMS * SpeakerAudio.samplesPerMS)
        frameSamples = (settings.frameMS == 20 ? 20 : 10) * SpeakerAudio.samplesPerMS
        delaySamples = Int64(delayMS * SpeakerAudio.samplesPerMS)
        echo = speex_echo_state_init(Int32(frameSamples), Int32(tailMS * SpeakerAudio.samplesPerMS))
        var rate = Int32(SpeakerAudio.sampleRate)
        speex_echo_ctl(echo, SPEEX_ECHO_SET_SAMPLING_RATE, &rate)
        preprocess = speex_preprocess_state_init(Int32(frameSamples), Int32(SpeakerAudio.sampleRate))
        // Only the residual echo suppression is wanted, but speexdsp applies it through the noise suppressor's gain,
        // so that stays on at its default; automatic gain and dereverberation stay off (the hot phrase was trained
        // on plain audio). The preprocessor's output is used only while an echo may be present (`process`).
        var on: Int32 = 1
        var off: Int32 = 0
        speex_preprocess_ctl(preprocess, SPEEX_PREPROCESS_SET_DENOISE, &on)
        speex_preprocess_ctl(preprocess, SPEEX_PREPROCESS_SET_AGC, &off)
        speex_preprocess_ctl(preprocess, SPEEX_PREPROCESS_SET_DEREVERB, &off)
        speex_preprocess_ctl(preprocess, SPEEX_PREPROCESS_SET_ECHO_STATE, UnsafeMutableRawPointer(echo))
        var suppress = Int32(settings.suppressDB)
        var suppressActive = Int32(settings.suppressActiveDB)
        speex_preprocess_ctl(preprocess, SPEEX_PREPROCESS_SET_ECHO_SUPPRESS, &suppress)
        speex_preprocess_ctl(preprocess, SPEEX_PREPROCESS_SET_ECHO_SUPPRESS_ACTIVE, &suppressActive)
        var noiseSuppress = Int32(settings.noiseSuppressDB)
        speex_preprocess_ctl(preprocess, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &noiseSuppress)
        reference = EchoReference(capacity: Self.referenceSeconds * SpeakerAudio.sampleRate)
        resampled = .allocate(capacity: Self.resampledCapacity)
        referenceFrame = .allocate(capacity: Self.maxFrame)
        cancelled = .allocate(capacity: frameSamples)
        filtered = .allocate(capacity: Self.maxFrame)
        handedBack = .allocate(capacity: Self.maxFrame)
    }

    deinit {
        speex_preprocess_state_destroy(preprocess)
        speex_echo_state_destroy(echo)
        if let resampler { speex_resampler_destroy(resampler) }
        resampled.deallocate()
        referenceFrame.deallocate()
        cancelled.deallocate()
        filtered.deallocate()
        handedBack.deallocate()
    }

    // MARK: The output's side

    /// `samples` at `rate` were written to the output; the first of them will be heard at `heard` (now plus what
    /// the device had queued before them). Called on the output's thread.
    public func played(_ samples: UnsafeBufferPointer<Int16>, rate: Int, heard: TimelinePosition) {
        guard let input = samples.baseAddress, !samples.isEmpty, rate > 0 else { return }
        lock.withLock { _ in
            if rate == SpeakerAudio.sampleRate {
                let start = playbackClock.place(count: samples.count, reported: heard)
                reference.write(samples, at: start)
                return
            }
            if resamplerRate != rate {
                if let resampler { speex_resampler_destroy(resampler) }
                var error: Int32 = 0
                // Quality 4 of 10: the reference feeds an adaptive filter, not an ear; its latency is subtracted below.
                resampler = speex_resampler_init(1, UInt32(rate), UInt32(SpeakerAudio.sampleRate), 4, &error)
                resamplerRate = resampler == nil ? 0 : rate
            }
            guard let resampler else { return }
            let latency = Int64(speex_resampler_get_output_latency(resampler))
            let room: Int = Self.resampledCapacity * SpeakerAudio.sampleRate / rate / 2
            var offset = 0
            while offset < samples.count {
                let left: Int = samples.count - offset
                var inLength = UInt32(left < room ? left : room)
                var outLength = UInt32(Self.resampledCapacity)
                speex_resampler_process_int(resampler, 0, input + offset, &inLength, resampled, &outLength)
                if inLength == 0 { break }
                let at: TimelinePosition = TimelinePosition.timeline(frames: offset, rate: rate)
                let start = playbackClock.place(count: Int(outLength), reported: heard + at - latency)
                reference.write(UnsafeBufferPointer(start: resampled, count: Int(outLength)), at: start)
                offset += Int(inLength)
            }
        }
    }

    /// The output dropped what it had queued at `now` (a stop): that was never heard, and the next sound starts a
    /// new stream.
    public func outputStopped(at now: TimelinePosition) {
        lock.withLock { _ in
            reference.truncate(from: now)
            restartPlayback()
        }
    }

    /// The output closed after playing everything out: the next sound starts a new stream.
    public func outputClosed() {
        lock.withLock { _ in
            restartPlayback()
        }
    }

    private func restartPlayback() {
        playbackClock.restart()
        if let resampler { speex_resampler_reset_mem(resampler) }
    }

    // MARK: The microphone's side

    /// Takes the speaker's own sound out of `frame` (16 kHz, a multiple of 10 ms, at most 100 ms), whose first
    /// sample was heard at `heard`. Called on the capture thread.
    public func process(_ frame: UnsafeMutableBufferPointer<Int16>, heard: TimelinePosition) {
        let n = frameSamples
        guard let mic = frame.baseAddress, frame.count % n == 0, frame.count <= Self.maxFrame else { return }
        lock.withLock { _ in
            let from = heard - delaySamples
            reference.read(into: UnsafeMutableBufferPointer(start: referenceFrame, count: frame.count), from: from)
            // An echo may be in this frame while the reference had sound within the filter's reach before it.
            let echoing = reference.lastSound >= from - tailSamples
            active.store(echoing, ordering: .relaxed)
            var k = 0
            while k < frame.count {
                speex_echo_cancellation(echo, mic + k, referenceFrame + k, cancelled)
                (filtered + k).update(from: cancelled, count: n)
                // The preprocessor runs on every frame so that its noise estimate stays current, but its output is used
                // only while echoing: with nothing playing, the hot phrase hears what it always did.
                if !echoing { (mic + k).update(from: cancelled, count: n) }
                speex_preprocess_run(preprocess, cancelled)
                if echoing { (mic + k).update(from: cancelled, count: n) }
                k += n
            }
            handedBack.update(from: mic, count: frame.count)
            lastCount = frame.count
        }
    }

    /// What the hot phrase hears of `frame`, the frame `process` just handed back: the adaptive filter's output,
    /// without the residual echo suppressor. While a person talks over the echo, the suppressor's gains change the
    /// person's spectrum frame by frame, and real voices were missed more often for it (BENCHMARKS.md, "Echo
    /// cancellation", "What the hot phrase hears": up to 2.35 times their misses in silence, against at most 1.77
    /// with this); the question's upload keeps the suppressed frame. With nothing playing the two are the same.
    /// Copies into `into` (at least `frame.count` long) and returns true, or returns false when `frame` is not the
    /// frame last processed (it did not come through this canceller).
    public func hotPhraseFrame(for frame: UnsafeBufferPointer<Int16>, into: UnsafeMutableBufferPointer<Int16>) -> Bool {
        guard let given = frame.baseAddress, let target = into.baseAddress, into.count >= frame.count else { return false }
        return lock.withLock { _ in
            guard frame.count == lastCount, memcmp(given, handedBack, frame.count * 2) == 0 else { return false }
            target.update(from: filtered, count: frame.count)
            return true
        }
    }

    /// Whether the last frame processed may have held the speaker's own sound (its reference had sound within the
    /// filter's tail): the hot phrase then listens at its playback threshold.
    public var echoActive: Bool { active.load(ordering: .relaxed) }

    /// Where the filter has found the echo: its learned impulse response's strongest tap, as the milliseconds by
    /// which the echo comes later than the devices' delays say (the configured delay included), and how far that tap
    /// stands above the response's mean magnitude (a real echo path stands out; a filter that heard no echo has
    /// learned only noise). For `hound-speaker doctor`.
    public func echoPath() -> (delayMS: Double, prominence: Double) {
        return lock.withLock { _ in
            var size: Int32 = 0
            speex_echo_ctl(echo, SPEEX_ECHO_GET_IMPULSE_RESPONSE_SIZE, &size)
            guard size > 0 else { return (0, 0) }
            var response = [Int32](repeating: 0, count: Int(size))
            response.withUnsafeMutableBufferPointer { _ = speex_echo_ctl(echo, SPEEX_ECHO_GET_IMPULSE_RESPONSE, $0.baseAddress) }
            let magnitudes = response.map { abs(Double($0)) }
            let mean = magnitudes.reduce(0, +) / Double(magnitudes.count)
            guard let peak = magnitudes.indices.max(by: { magnitudes[$0] < magnitudes[$1] }), mean > 0 else { return (0, 0) }
            return (Double(peak) / Double(SpeakerAudio.samplesPerMS) + Double(delaySamples) / Double(SpeakerAudio.samplesPerMS), magnitudes[peak] / mean)
        }
    }

    /// Forgets the learned echo path (a new device).
    public func reset() {
        lock.withLock { _ in
            speex_echo_state_reset(echo)
        }
    }
}

extension EchoCanceller {
    /// Runs a whole recording through the canceller as the speaker would: `reference` (what was played, 16 kHz)
    /// written in 20 ms blocks `lead` blocks ahead of the microphone frame heard at the same time, as an output's
    /// queue has it. The benchmark's rooms and the tests use it; a last partial frame is left as it was.
    /// With `hotPhrase`, the frames are what the hot phrase hears of them (`hotPhraseFrame`) instead of what is
    /// uploaded.
    public func cancel(recording mic: [Int16], reference: [Int16], origin: TimelinePosition = 0, lead: Int = 4,
                       hotPhrase: Bool = false) -> [Int16] {
        var out = mic
        let frame = 20 * SpeakerAudio.samplesPerMS
        var heard = [Int16](repeating: 0, count: frame)
        reference.withUnsafeBufferPointer { r in
            out.withUnsafeMutableBufferPointer { o in
                for i in 0..<(mic.count / frame + lead) {
                    let p = i * frame
                    if p + frame <= r.count {
                        played(UnsafeBufferPointer(rebasing: r[p..<p + frame]), rate: SpeakerAudio.sampleRate, heard: origin + TimelinePosition(p))
                    }
                    let m = (i - lead) * frame
                    if m >= 0 && m + frame <= o.count {
                        let part = UnsafeMutableBufferPointer(rebasing: o[m..<m + frame])
                        process(part, heard: origin + TimelinePosition(m))
                        if hotPhrase, heard.withUnsafeMutableBufferPointer({ hotPhraseFrame(for: UnsafeBufferPointer(part), into: $0) }) {
                            _ = part.update(fromContentsOf: heard)
                        }
                    }
                }
            }
        }
        return out
    }
}

extension Int {
    fileprivate func clamped(to range: ClosedRange<Int>) -> Int { Swift.min(Swift.max(self, range.lowerBound), range.upperBound) }
}
