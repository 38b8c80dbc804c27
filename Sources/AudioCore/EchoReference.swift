// The echo canceller's timing, with no device and no C (issue #19). The speaker's output and the microphone are
// two devices with two clocks; both are placed on one timeline: the monotonic clock counted in samples at
// 16 kHz. A block written to the output is placed where the output says it will be heard (now plus the device's
// queued delay); a frame read from the microphone where the microphone says it was heard (now minus its delay).
// The canceller then takes, for each microphone frame, the reference from the same place on the timeline.

/// A position on the shared timeline: samples at 16 kHz since the monotonic clock's origin.
public typealias TimelinePosition = Int64

extension TimelinePosition {
    /// The position of a monotonic time in nanoseconds.
    public static func timeline(nanoseconds: Int64) -> TimelinePosition {
        nanoseconds / 1_000_000 * Int64(SpeakerAudio.samplesPerMS) + (nanoseconds % 1_000_000) * Int64(SpeakerAudio.samplesPerMS) / 1_000_000
    }

    /// `frames` at `rate` as timeline samples (rounded).
    public static func timeline(frames: Int, rate: Int) -> TimelinePosition {
        guard rate > 0 else { return 0 }
        return (Int64(frames) * Int64(SpeakerAudio.sampleRate) + Int64(rate / 2)) / Int64(rate)
    }
}

/// Keeps a stream's positions continuous while following what its device says. A device reports its delay in
/// whole periods on some cards (jitter of several milliseconds) and its clock drifts from the monotonic clock
/// (up to about 100 ppm, 1.6 samples a second): following each report would make the reference jump about, and
/// the canceller's filter would have to learn the echo path again after every jump. So the position advances by
/// exactly the samples delivered; the smoothed difference from the reports is taken back one sample at a time
/// (drift), and only a large difference (an underrun, a new utterance, an overrun) is a jump.
public struct StreamClock: Sendable, Equatable {
    /// A report this far from the continued position starts the stream afresh there.
    public var jumpSamples: Int64
    /// Smoothed differences beyond this are taken back, a sample per block.
    public var slewThreshold: Double
    /// The smoothing of the reports' differences (an exponential average's weight for a new report).
    public var smoothing: Double

    /// The position the next block starts at; nil before the first block.
    public private(set) var next: TimelinePosition?
    /// The smoothed difference between the reports and the continued position, in samples.
    public private(set) var error = 0.0
    /// How many times the stream started afresh (for tests and the bench's log).
    public private(set) var jumps = 0

    public init(jumpSamples: Int64 = 20 * Int64(SpeakerAudio.samplesPerMS), slewThreshold: Double = 8, smoothing: Double = 0.05) {
        self.jumpSamples = jumpSamples
        self.slewThreshold = slewThreshold
        self.smoothing = smoothing
    }

    /// Where a block of `count` samples starts, given where its device says it starts; advances past it.
    public mutating func place(count: Int, reported: TimelinePosition) -> TimelinePosition {
        guard let expected = next, abs(reported - expected) < jumpSamples else {
            if next != nil { jumps += 1 }
            next = reported + Int64(count)
            error = 0
            return reported
        }
        error += smoothing * (Double(reported - expected) - error)
        var start = expected
        if error > slewThreshold {
            start += 1
            error -= 1
        } else if error < -slewThreshold {
            start -= 1
            error += 1
        }
        next = start + Int64(count)
        return start
    }

    /// The stream stopped (the output was dropped or closed): the next block starts afresh.
    public mutating func restart() {
        next = nil
        error = 0
    }
}

/// What the speaker played, on the timeline: a ring of the last `capacity` samples at 16 kHz. Places that nothing
/// was played at read as silence, so the canceller's reference is zero between utterances. Not thread-safe: the
/// canceller holds it under its lock (the output's thread writes, the capture thread reads).
public struct EchoReference: Sendable {
    private var ring: [Int16]
    /// One past the newest position written (everything before `end - capacity` is forgotten).
    public private(set) var end: TimelinePosition = 0
    /// The position of the oldest sample written since the ring was last empty (reads before it are silence).
    private var start: TimelinePosition = 0
    /// The newest position at which a sample that is not zero was written.
    public private(set) var lastSound: TimelinePosition = .min

    public init(capacity: Int) { ring = [Int16](repeating: 0, count: max(1, capacity)) }

    public var capacity: Int { ring.count }

    private func slot(_ position: TimelinePosition) -> Int {
        let c = Int64(ring.count)
        return Int(((position % c) + c) % c)
    }

    /// Writes `samples` from `position` on. A gap since the last write is silence; a write over what was written
    /// before replaces it (a stream that started afresh a little earlier).
    public mutating func write(_ samples: UnsafeBufferPointer<Int16>, at position: TimelinePosition) {
        guard !samples.isEmpty else { return }
        let c = Int64(ring.count)
        if end <= start || position - end >= c || position + c <= end {
            // Empty, or nothing written within the ring's reach: start afresh.
            start = position
            end = position
        } else if position > end {
            var p = end
            while p < position { ring[slot(p)] = 0; p += 1 }
        }
        for (i, sample) in samples.enumerated() {
            ring[slot(position + Int64(i))] = sample
            if sample != 0 { lastSound = max(lastSound, position + Int64(i)) }
        }
        end = max(end, position + Int64(samples.count))
        start = max(min(start, position), end - c)
    }

    /// Forgets everything from `position` on (what the output had queued but dropped: it was never heard).
    public mutating func truncate(from position: TimelinePosition) {
        guard position < end else { return }
        end = max(start, position)
        if lastSound >= end { lastSound = end - 1 }
    }

    /// Copies the samples at `position ..< position + output.count` into `output`: silence where nothing was
    /// written or it is forgotten.
    public func read(into output: UnsafeMutableBufferPointer<Int16>, from position: TimelinePosition) {
        for i in 0..<output.count {
            let p = position + Int64(i)
            output[i] = p >= start && p < end ? ring[slot(p)] : 0
        }
    }
}
