import FoundationEssentials
import Glibc
import Platform
public import Audio
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
    /// The threshold over the speaker's own sound (barge-in, `[hotphrase] barge_in_sensitivity`).
    public let bargeInThreshold: Double
    public let modelPath: String
    /// The echo canceller the frames come through, if any: while it says an echo may still be in a frame (the
    /// room's reverberation after the speaker stopped), the barge-in threshold holds.
    private let echo: EchoCanceller?
    /// What the detector hears of a frame that came through `echo`: the adaptive filter's output, without the
    /// residual suppressor (`EchoCanceller.hotPhraseFrame`). Made once, as long as the longest capture frame.
    private var filtered = [Int16](repeating: 0, count: EchoCanceller.maxFrame)

    public init(model: HotPhraseModel, settings: HotPhraseSettings, echo: EchoCanceller? = nil) {
        threshold = HotPhraseDetector.threshold(sensitivity: settings.sensitivity, model: model)
        bargeInThreshold = HotPhraseDetector.threshold(sensitivity: settings.bargeInSensitivity, model: model)
        modelPath = model.path
        self.echo = echo
        detector = HotPhraseDetector(model: model, threshold: threshold, refractorySeconds: settings.refractorySeconds)
    }

    public func process(_ frame: UnsafeBufferPointer<Int16>, overOwnSound: Bool) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        detector.threshold = overOwnSound || echo?.echoActive == true ? bargeInThreshold : threshold
        var hit = false
        let onDetection = { (detection: HotPhraseDetection) in
            hit = true
            self.score = detection.score
        }
        if let echo, filtered.withUnsafeMutableBufferPointer({ echo.hotPhraseFrame(for: frame, into: $0) }) {
            filtered.withUnsafeBufferPointer { detector.process(UnsafeBufferPointer(rebasing: $0[0..<frame.count]), onDetection: onDetection) }
        } else {
            detector.process(frame, onDetection: onDetection)
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
