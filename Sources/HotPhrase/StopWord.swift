import Platform

/// The stop word for everyone (issue #61; docs/household.md, "The stop word"): a classifier head that hears
/// "stop" said by anyone, trained on synthetic voices and on real recordings of the word over the speaker's own
/// sound (tools/hotphrase: `hotphrase.train_stop`), shipped as a format-2 model file (`share/hotphrase/stop.hpm`)
/// whose speech embedding is the hot-phrase model's own. It runs on the hot-phrase model's embedding frames (no
/// second embedding network), on every frame, so that its window is full the moment it is armed; it fires only
/// while armed (the speaker rings or speaks), at its own threshold for each (the model file's `default_threshold`
/// over an answer, `ring_threshold` over a ring), and is deaf for the model's refractory period after it fires.
/// One instance belongs to one stream and one thread, and allocates nothing per frame.
public final class StopWord {
    public let model: HotPhraseModel
    /// The smoothed score it must reach over an answer and over a ring (0...1); may be changed between calls.
    public var threshold: Double
    public var ringThreshold: Double
    private let head: EmbeddingHead
    private let dim: Int
    private var smoothed: MovingMean
    private let refractorySamples: Int
    private var deafUntil = Int.min
    /// The latest smoothed score (0 until the head has its window), and how many it has made since the reset.
    public private(set) var score: Double = 0
    public private(set) var steps = 0

    public static let defaultFileName = "stop.hpm"

    /// What the speaker plays while the word is listened for.
    public enum Over: Sendable, Equatable {
        case answer
        case ring
    }

    /// `model`: the stop word's file; `generic`: the hot-phrase model whose embedding frames it will be given.
    /// Throws when either is format 1 or their speech embeddings differ (the head would read other numbers).
    /// `threshold` and `ringThreshold` replace the file's (`ringThreshold` nil: the file's, else `threshold`).
    public init(model: HotPhraseModel, generic: HotPhraseModel, threshold: Double? = nil, ringThreshold: Double? = nil) throws {
        guard case .embedding(let stop) = model.network else {
            throw HotPhraseModelError(path: model.path, problem: "the stop word needs a format-2 model (a speech-embedding head)")
        }
        guard case .embedding(let frames) = generic.network else {
            throw HotPhraseModelError(path: generic.path, problem: "format 1: no speech embedding for the stop word to run on")
        }
        guard stop.sameEmbedding(as: frames) else {
            throw HotPhraseModelError(path: model.path, problem: "its speech embedding is not the one of \(generic.path)")
        }
        self.model = model
        self.threshold = threshold ?? model.defaultThreshold
        self.ringThreshold = ringThreshold ?? model.ringThreshold ?? self.threshold
        head = EmbeddingHead(model: stop)
        dim = stop.dim
        smoothed = MovingMean(width: model.smoothing)
        refractorySamples = Int((model.refractorySeconds * Double(model.sampleRate)).rounded())
    }

    /// Loads `path` if given, else the shipped `stop.hpm` (ShippedFiles' hot-phrase folders); nil when there is
    /// none. Throws when a file is there but cannot be used.
    public static func locate(_ path: String?) throws -> HotPhraseModel? {
        if let path, !path.isEmpty { return try HotPhraseModel.load(path: path) }
        guard let found = ShippedFiles.locate(defaultFileName, in: .hotPhrase) else { return nil }
        return try HotPhraseModel.load(path: found)
    }

    /// Forgets everything heard (with the detector it rides on).
    public func reset() {
        head.reset()
        smoothed.reset()
        deafUntil = .min
        score = 0
        steps = 0
    }

    /// One embedding frame `e`, heard up to `sample` (HotPhraseDetector's onFrame), `over` what the speaker plays
    /// (nil: nothing, not armed); true when the word is heard: armed, the smoothed score at that sound's threshold
    /// or above, and not within the refractory period of the last.
    public func push(_ e: UnsafeBufferPointer<Float>, sample: Int, over: Over?) -> Bool {
        guard e.count == dim, let p = head.push(embedding: e) else { return false }
        score = smoothed.add(p)
        steps += 1
        guard let over, sample >= deafUntil, score >= (over == .ring ? ringThreshold : threshold) else { return false }
        deafUntil = sample + refractorySamples
        return true
    }

    /// Deaf until `sample` (another stop fired there: one refractory period for all).
    public func deafen(until sample: Int) {
        deafUntil = max(deafUntil, sample)
    }
}

extension EmbeddingModel {
    /// Whether `other` computes the same embeddings: the same mel front end and network, number for number.
    func sameEmbedding(as other: EmbeddingModel) -> Bool {
        guard frames == other.frames, step == other.step, dim == other.dim, layers.count == other.layers.count,
              mel.fftSize == other.mel.fftSize, mel.hop == other.mel.hop, mel.mels == other.mel.mels,
              mel.group == other.mel.group, mel.powerFloor == other.mel.powerFloor, mel.topDB == other.mel.topDB,
              mel.scale == other.mel.scale, mel.offset == other.mel.offset, mel.window == other.mel.window,
              mel.first == other.mel.first, mel.weights == other.mel.weights
        else { return false }
        for (a, b) in zip(layers, other.layers) {
            switch (a, b) {
            case (.conv(let x), .conv(let y)):
                guard x.kt == y.kt, x.kf == y.kf, x.padF == y.padF, x.cin == y.cin, x.cout == y.cout, x.alpha == y.alpha,
                      x.floor == y.floor, x.weight == y.weight, x.bias == y.bias else { return false }
            case (.pool(let pt, let pf), .pool(let qt, let qf)):
                guard pt == qt, pf == qf else { return false }
            default:
                return false
            }
        }
        return true
    }
}
