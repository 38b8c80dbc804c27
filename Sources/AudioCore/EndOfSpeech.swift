import FoundationEssentials
import Glibc

/// Voice activity on 16 kHz frames: the energy of the speech band against an adaptive noise floor, with
/// hysteresis.
///
/// Why this detector: the speaker needs to know when a person has *stopped* talking, in a room whose noise level
/// it cannot know in advance (a fan, a TV). A fixed threshold fails in one room or the other; the floor here
/// follows the quietest recent frames (fast down, slow up), and a frame is speech when it stands well above it.
/// The level is taken in the telephone band (300-3400 Hz, two biquads) where voices carry most of their energy:
/// hum, rumble and hiss outside it raise the floor without being speech. Measured against noise at 20, 10 and
/// 5 dB SNR by `tools/bench/endpoint.py` (BENCHMARKS.md).
public struct VoiceActivityDetector: Sendable {
    public struct Settings: Sendable, Equatable {
        /// A frame this far above the noise floor starts speech...
        public var onsetDB = 7.0
        /// ...and one this far above keeps it going.
        public var holdDB = 4.0
        /// Below this nothing is speech, however quiet the room (digital silence has no floor).
        public var absoluteFloorDBFS = -65.0
        public init() {}
    }

    public let settings: Settings
    private var floorDB: Double? = nil
    private var highPass = Biquad.highPass(cutoff: 300, sampleRate: Double(SpeakerAudio.sampleRate))
    private var lowPass = Biquad.lowPass(cutoff: 3400, sampleRate: Double(SpeakerAudio.sampleRate))
    private(set) public var inSpeech = false
    /// The last frame's speech-band level, in dBFS.
    private(set) public var levelDB = -90.0

    public init(settings: Settings = Settings()) { self.settings = settings }

    public var noiseFloorDB: Double { floorDB ?? -90 }

    /// Classifies one frame; returns true if it is speech.
    public mutating func isSpeech(_ frame: UnsafeBufferPointer<Int16>) -> Bool {
        guard !frame.isEmpty else { return inSpeech }
        var energy = 0.0
        for sample in frame {
            let y = lowPass.process(highPass.process(Double(sample) / 32768))
            energy += y * y
        }
        let level = max(-90, 10 * log10(energy / Double(frame.count) + 1e-12))
        levelDB = level
        let floor = floorDB ?? level
        let threshold = floor + (inSpeech ? settings.holdDB : settings.onsetDB)
        inSpeech = level > threshold && level > settings.absoluteFloorDBFS
        // The floor falls at once to a quieter frame and rises slowly, faster outside speech.
        if level < floor {
            floorDB = floor + 0.5 * (level - floor)
        } else {
            floorDB = floor + (inSpeech ? 0.002 : 0.03) * (level - floor)
        }
        return inSpeech
    }
}

/// When a query is over (SpeechKit's endpointer modes: short, long, none): after a person has spoken, enough trailing
/// silence ends it; nothing said at all ends it with a timeout; a maximum length ends it regardless. Works in
/// frames, so it is exact and needs no clock.
public struct Endpointer: Sendable {
    public enum Mode: String, Sendable, CaseIterable {
        /// About 0.5 s of silence ends the query.
        case short
        /// About 1.2 s: for people who pause.
        case long
        /// Only the button, the server's SafeToStopAudio or the maximum length end it.
        case none
    }

    public struct Settings: Sendable, Equatable {
        public var mode = Mode.short
        public var shortSilenceMS = 500
        public var longSilenceMS = 1200
        /// Nothing said within this: the query is cancelled.
        public var noSpeechTimeoutMS = 5000
        public var maxLengthMS = 12_000
        /// Speech must last this long to count as speech (a click or a cough does not).
        public var minSpeechMS = 150
        public init() {}

        public var silenceMS: Int? {
            switch mode {
            case .short: shortSilenceMS
            case .long: longSilenceMS
            case .none: nil
            }
        }
    }

    public enum Decision: Sendable, Equatable {
        case speechStarted
        case endOfSpeech
        case noSpeech
        case maxLength
    }

    public let settings: Settings
    public let frameMS: Int
    private var vad: VoiceActivityDetector
    private(set) public var elapsedMS = 0
    private var voicedRunMS = 0
    private(set) public var speechStarted = false
    private var silenceMS = 0
    private(set) public var finished = false
    /// When speech was last heard (end of the last voiced frame), in ms from the start.
    private(set) public var lastSpeechEndMS = 0

    public init(settings: Settings = Settings(), vad: VoiceActivityDetector.Settings = .init(), frameMS: Int = 20) {
        self.settings = settings
        self.vad = VoiceActivityDetector(settings: vad)
        self.frameMS = frameMS
    }

    public var levelDB: Double { vad.levelDB }

    /// Feeds one frame; returns a decision when there is one (each at most once; nothing after the end).
    public mutating func process(_ frame: UnsafeBufferPointer<Int16>) -> Decision? {
        guard !finished else { return nil }
        elapsedMS += frameMS
        let voiced = vad.isSpeech(frame)
        var decision: Decision? = nil
        if voiced {
            voicedRunMS += frameMS
            silenceMS = 0
            lastSpeechEndMS = elapsedMS
            if !speechStarted && voicedRunMS >= settings.minSpeechMS {
                speechStarted = true
                decision = .speechStarted
            }
        } else {
            voicedRunMS = 0
            if speechStarted { silenceMS += frameMS }
        }
        if speechStarted, let limit = settings.silenceMS, silenceMS >= limit {
            decision = .endOfSpeech
        } else if !speechStarted && elapsedMS >= settings.noSpeechTimeoutMS {
            decision = .noSpeech
        } else if elapsedMS >= settings.maxLengthMS {
            decision = .maxLength
        }
        if let d = decision, d != .speechStarted { finished = true }
        return decision
    }
}

/// A second-order IIR section (the Audio EQ Cookbook's high- and low-pass, Q = 0.707).
struct Biquad: Sendable {
    var b0, b1, b2, a1, a2: Double
    var x1 = 0.0, x2 = 0.0, y1 = 0.0, y2 = 0.0

    static func lowPass(cutoff: Double, sampleRate: Double) -> Biquad {
        let (cosw, alpha) = prewarp(cutoff, sampleRate)
        let a0 = 1 + alpha
        return Biquad(b0: (1 - cosw) / 2 / a0, b1: (1 - cosw) / a0, b2: (1 - cosw) / 2 / a0, a1: -2 * cosw / a0, a2: (1 - alpha) / a0)
    }

    static func highPass(cutoff: Double, sampleRate: Double) -> Biquad {
        let (cosw, alpha) = prewarp(cutoff, sampleRate)
        let a0 = 1 + alpha
        return Biquad(b0: (1 + cosw) / 2 / a0, b1: -(1 + cosw) / a0, b2: (1 + cosw) / 2 / a0, a1: -2 * cosw / a0, a2: (1 - alpha) / a0)
    }

    private static func prewarp(_ cutoff: Double, _ rate: Double) -> (Double, Double) {
        let w = 2 * Double.pi * cutoff / rate
        return (cos(w), sin(w) / (2 * 0.7071))
    }

    mutating func process(_ x: Double) -> Double {
        let y = b0 * x + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
        x2 = x1; x1 = x
        y2 = y1; y1 = y
        return y
    }
}
