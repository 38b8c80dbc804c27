import AudioCore

/// Records one take of the enrollment phrase from the microphone's 16 kHz frames (the enrollment session's
/// `startCapture`): it waits for a moment of quiet, so that the end of something said before (or of the speaker's
/// own prompt) is not a take, then keeps from `preRollMS` before speech starts until `trailingMS` of quiet after it.
/// Nothing said within `waitMS`: the last second heard is the take, and the take checks say why it is not one.
/// Speech is the endpointer's voice activity detector (adaptive floor), so a noisy room is no take by itself.
public struct TakeRecorder: Sendable {
    public struct Settings: Sendable, Equatable {
        public var quietBeforeMS = 300
        public var preRollMS = 500
        public var trailingMS = 600
        /// Longer speech ends the take there (the checks refuse speech over 2.5 s).
        public var longestSpeechMS = 4000
        public var waitMS = 8000
        public init() {}
    }

    private enum Phase {
        case waitingForQuiet(quietMS: Int)
        case armed
        case speaking(silenceMS: Int, speechMS: Int)
        case finished
    }

    public let settings: Settings
    private var vad = VoiceActivityDetector()
    private var phase = Phase.waitingForQuiet(quietMS: 0)
    /// The last second heard, before speech starts (the pre-roll comes from it): the capture router's ring, so a
    /// frame costs a copy of itself, not a shift of the whole second.
    private var ring = PreRollRing(capacity: 1000 * TakeRecorder.rate)
    private var recorded: [Int16] = []
    private var elapsedMS = 0
    private static let rate = SpeakerAudio.samplesPerMS

    public init(settings: Settings = Settings()) { self.settings = settings }

    /// Takes one frame; returns the take once it is complete (then nothing more is taken).
    public mutating func process(_ frame: UnsafeBufferPointer<Int16>) -> [Int16]? {
        if case .finished = phase { return nil }
        let ms = frame.count / Self.rate
        elapsedMS += ms
        let speech = vad.isSpeech(frame)
        switch phase {
        case .waitingForQuiet(let quiet):
            keep(frame)
            let now = speech ? 0 : quiet + ms
            phase = now >= settings.quietBeforeMS ? .armed : .waitingForQuiet(quietMS: now)
        case .armed:
            if speech {
                recorded = Array(heard().suffix(settings.preRollMS * Self.rate)) + Array(frame)
                phase = .speaking(silenceMS: 0, speechMS: ms)
            } else {
                keep(frame)
            }
        case .speaking(let silence, let speechMS):
            recorded.append(contentsOf: frame)
            let quiet = speech ? 0 : silence + ms
            if quiet >= settings.trailingMS || speechMS + ms >= settings.longestSpeechMS {
                phase = .finished
                return recorded
            }
            phase = .speaking(silenceMS: quiet, speechMS: speechMS + ms)
            return nil
        case .finished:
            return nil
        }
        guard elapsedMS >= settings.waitMS else { return nil }
        phase = .finished
        return heard()
    }

    private mutating func keep(_ frame: UnsafeBufferPointer<Int16>) { ring.append(frame) }

    /// The ring's samples, oldest first.
    private func heard() -> [Int16] {
        var out: [Int16] = []
        out.reserveCapacity(ring.count)
        ring.read { out.append(contentsOf: $0) }
        return out
    }
}
