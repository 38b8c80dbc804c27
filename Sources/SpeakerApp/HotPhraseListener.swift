import FoundationEssentials
import Glibc
import Platform
public import HotPhrase
public import SpeakerCore

/// The "OK Hound" detector as the capture router uses it. The router calls `process` from the capture thread
/// and `reset` from the loop; the lock here makes "one thread at a time" a property of this type rather than of
/// its caller (hence @unchecked: the detector is only touched under `lock`).
public final class HotPhraseListener: HotPhraseDetecting, @unchecked Sendable {
    private let lock = Lock()
    private let detector: HotPhraseDetector
    private var score = 0.0
    public let threshold: Double
    public let modelPath: String

    public init(model: HotPhraseModel, settings: HotPhraseSettings) {
        threshold = HotPhraseDetector.threshold(sensitivity: settings.sensitivity, model: model)
        modelPath = model.path
        detector = HotPhraseDetector(model: model, threshold: threshold, refractorySeconds: settings.refractorySeconds)
    }

    public func process(_ frame: UnsafeBufferPointer<Int16>) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        var hit = false
        detector.process(frame) { detection in
            hit = true
            score = detection.score
        }
        return hit
    }

    public func reset() {
        lock.lock()
        detector.reset()
        lock.unlock()
    }

    /// The score of the latest detection (for the log line).
    public var lastDetectionScore: Double {
        lock.lock()
        defer { lock.unlock() }
        return score
    }
}
