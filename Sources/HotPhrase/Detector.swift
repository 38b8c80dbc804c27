/// A detection: where in the stream (seconds of audio consumed when it fired) and the smoothed score.
public struct HotPhraseDetection: Sendable, Equatable {
    public let time: Double
    public let score: Double
}

/// What turns audio into one probability per detector step: the format-1 network over its log-mel frames, or the
/// speech-embedding pipeline (format 2). `onScore` gets the probability and the number of samples since the
/// last reset at which that step's audio ended; `onEmbedding` (format 2 only) each embedding and the same count
/// for it, before the step's score.
protocol StepScorer: AnyObject {
    func reset()
    func process(_ samples: UnsafeBufferPointer<Int16>, onEmbedding: (UnsafeBufferPointer<Float>, Int) -> Void,
                 onScore: (Float, Int) -> Void)
}

/// Format 1: the log-mel front end and the small streaming network.
final class ConvolutionalScorer: StepScorer {
    private let model: ConvolutionalModel
    private let frontEnd: MelFrontEnd
    private let network: StreamingNetwork
    private var frames = 0

    init(model: ConvolutionalModel) {
        self.model = model
        frontEnd = MelFrontEnd(model: model)
        network = StreamingNetwork(model: model)
    }

    func reset() {
        frontEnd.reset()
        network.reset()
        frames = 0
    }

    func process(_ samples: UnsafeBufferPointer<Int16>, onEmbedding: (UnsafeBufferPointer<Float>, Int) -> Void,
                 onScore: (Float, Int) -> Void) {
        frontEnd.process(samples) { frame in
            frames += 1
            guard let p = network.push(frame: frame) else { return }
            // the moment the newest frame's window ended
            onScore(p, (frames - 1) * model.hop + model.window)
        }
    }
}

/// The streaming hot-phrase detector: 16 kHz mono samples in, detections out. Front end, network, smoothing
/// over `smoothing` steps, threshold, and a refractory period after each detection. One instance belongs to one
/// audio stream and is driven by one thread at a time (the speaker's detector thread); nothing is allocated per
/// call.
public final class HotPhraseDetector {
    public let model: HotPhraseModel
    /// May be changed between calls (the speaker listens at another threshold over its own sound).
    public var threshold: Double
    private let scorer: any StepScorer
    private var smoothed: MovingMean
    private let refractorySteps: Int
    private var deafSteps = 0
    /// Sample position where the scorer started (0, or where the last reset happened).
    private var origin = 0
    private var samplesSeen = 0
    /// Called with every new smoothed score (one per step once the network's history is full); for tests and
    /// score dumps.
    public var stepObserver: ((Double) -> Void)?
    /// The latest smoothed score (0 until the network's history is full).
    public private(set) var score: Double = 0

    /// `threshold` in 0...1; nil uses the model's own (chosen at 0.1 false accepts per hour in evaluation).
    /// `refractorySeconds` nil uses the model's (2 s).
    public init(model: HotPhraseModel, threshold: Double? = nil, refractorySeconds: Double? = nil) {
        self.model = model
        self.threshold = threshold ?? model.defaultThreshold
        switch model.network {
        case .convolutional(let m): scorer = ConvolutionalScorer(model: m)
        case .embedding(let m): scorer = EmbeddingScorer(model: m)
        }
        smoothed = MovingMean(width: model.smoothing)
        refractorySteps = max(1, Int(((refractorySeconds ?? model.refractorySeconds) / model.stepSeconds).rounded()))
    }

    /// The threshold for a sensitivity in 0...1: 0.5 is the model's own threshold, higher hears more (and falsely
    /// more often), lower hears less. Monotonic; spaced evenly in log-odds, +-8 at the ends (a trained threshold
    /// of 0.99998 spans 0.96 to 1 - 4e-9).
    public static func threshold(sensitivity: Double, model: HotPhraseModel) -> Double {
        let s = min(1, max(0, sensitivity))
        // Trained thresholds can sit very close to 1 (a confident network): clamp only to keep the logit finite.
        let t = min(1 - 1e-9, max(1e-9, model.defaultThreshold))
        let logit = log(t / (1 - t)) + (0.5 - s) * 16
        return 1 / (1 + exp(-logit))
    }

    /// Forgets everything heard (after the speaker's own voice, say): the next detection needs a fresh
    /// receptive field of audio.
    public func reset() {
        scorer.reset()
        smoothed.reset()
        deafSteps = 0
        score = 0
        origin = samplesSeen
    }

    /// Feeds samples; calls `onDetection` for each detection they complete.
    public func process(_ samples: UnsafeBufferPointer<Int16>, onDetection: (HotPhraseDetection) -> Void) {
        process(samples, onFrame: { _, _ in }, onDetection: onDetection)
    }

    /// As `process(_:onDetection:)`, and calls `onFrame` with every embedding frame of the format-2 front end
    /// (docs/household.md, "Frames"; a format-1 model has none), before the detector step it completes: the 96
    /// numbers `e_k` (valid only during the call) and `t_k`, the sample count from the stream's start (across
    /// resets) of the newest sample it has seen. The personal scorer (FusedDetector) runs on these.
    public func process(_ samples: UnsafeBufferPointer<Int16>, onFrame: (UnsafeBufferPointer<Float>, Int) -> Void,
                        onDetection: (HotPhraseDetection) -> Void) {
        let origin = origin
        scorer.process(samples, onEmbedding: { e, end in onFrame(e, origin + end) }) { p, end in
            score = smoothed.add(p)
            stepObserver?(score)
            if deafSteps > 0 {
                deafSteps -= 1
            } else if score >= threshold {
                deafSteps = refractorySteps - 1
                onDetection(HotPhraseDetection(time: Double(origin + end) / Double(model.sampleRate), score: score))
            }
        }
        samplesSeen += samples.count
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The mean of the last `width` step scores (a model's `smoothing`), summed oldest slot first as the models were
/// evaluated; the hot-phrase detector's and the stop word's. Allocates nothing per step.
struct MovingMean {
    private var values: [Float]
    private var next = 0
    private var count = 0

    init(width: Int) { values = [Float](repeating: 0, count: max(1, width)) }

    /// Adds `p`; the mean of the scores kept.
    mutating func add(_ p: Float) -> Double {
        values[next] = p
        next = (next + 1) % values.count
        count = min(count + 1, values.count)
        var sum: Float = 0
        for i in 0..<count { sum += values[i] }
        return Double(sum / Float(count))
    }

    mutating func reset() {
        next = 0
        count = 0
    }
}
