// The drivers' settings, here in the pure half so that the config reader (Sources/SpeakerConfig) and the core
// name them without linking ALSA, speexdsp, espeak-ng or OpenSSL.

/// Capture settings (`[audio]` in config).
public struct CaptureSettings: Sendable, Equatable {
    /// ALSA PCM name, e.g. "default" or "plughw:CARD=seeed2micvoicec,DEV=0".
    public var device = "default"
    /// Rate asked of the device. The device may give its own nearest rate (ALSA's resampling is turned off);
    /// whatever it gives is resampled to 16 kHz with libsoxr.
    public var rate = SpeakerAudio.sampleRate
    /// Channels asked of the device (a multi-microphone card may need 2).
    public var channels = 1
    /// The channel used, 0-based.
    public var channel = 0
    /// Length of the frames delivered, 10 or 20 ms.
    public var frameMS = 20
    /// How often a lost device is looked for again.
    public var retryInterval: Duration = .seconds(1)
    /// How fast frames are delivered (`[audio] input_pacing`).
    public var pacing: CapturePacing = .auto

    /// `device` nil keeps the default (written once, above).
    public init(device: String? = nil) { if let device { self.device = device } }
}

/// A sound card delivers audio as it is heard; an ALSA `file` PCM (a recording played as the microphone, in tests,
/// the demo or a bench check) hands over all of it as fast as it is read.
public enum CapturePacing: String, Sendable, Equatable, CaseIterable {
    /// A `file` PCM is read at a microphone's pace; any other device paces itself.
    case auto
    /// Never faster than real time, whatever the device.
    case realTime = "realtime"
    /// As fast as the device gives it (a `file` PCM: at once), for tests that must not wait.
    case none
}

/// `[audio] echo_cancel`, `echo_delay_ms`, `echo_tail_ms`: acoustic echo cancellation on the capture path
/// (issue #19), so the hot phrase and the question are heard over the speaker's own voice and ringing.
public struct EchoCancelSettings: Sendable, Equatable {
    public var enabled = false
    /// How much later than the devices' own delays say the echo reaches the microphone: the converters and the air
    /// between speaker and microphone (`hound-speaker doctor` measures it on the configured devices).
    public var delayMS = 0
    /// The longest echo the filter models: the room's reverberation that matters, 50-1000 ms.
    public var tailMS = 200
    /// The residual echo suppressor's greatest attenuation (dB, negative) with the person silent, and while the
    /// person talks over the echo: speexdsp's defaults. Not config keys: `hound-speaker-bench aec --suppress` and
    /// `--noise-suppress` measure other values (BENCHMARKS.md, "Echo cancellation": less suppression while a person
    /// talks hears real voices a little better, and leaves more of the echo in a room's first seconds).
    public var suppressDB = -40
    public var suppressActiveDB = -15
    /// The noise suppressor's greatest attenuation (dB, negative), applied with the echo's while echoing.
    public var noiseSuppressDB = -15
    /// speexdsp's frame, 10 or 20 ms: the capture's frames (20 ms in the speaker) must be whole multiples of it.
    /// 20 ms took speech down further in the benchmark's rooms, but with the timer's trill its filter can diverge
    /// (output louder than the microphone, speexdsp resetting it) in other rooms and at other echo levels, where 10 ms
    /// held 17-31 dB (tools/bench/aec_frames.py; BENCHMARKS.md, "Echo cancellation"): 10 ms.
    public var frameMS = 10

    /// Each value not given keeps its default (written once, above).
    public init(enabled: Bool? = nil, delayMS: Int? = nil, tailMS: Int? = nil) {
        if let enabled { self.enabled = enabled }
        if let delayMS { self.delayMS = delayMS }
        if let tailMS { self.tailMS = tailMS }
    }

    public static let tailRange = 50...1000
    public static let delayRange = 0...500
}
