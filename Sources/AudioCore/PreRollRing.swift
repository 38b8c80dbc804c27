/// The last `capacity` samples heard, oldest first: what came just before a hot phrase fired (its end, which the
/// detector needs a moment to be sure of, and the first words of a question said without a pause).
public struct PreRollRing: Sendable {
    private var samples: [Int16]
    private var start = 0
    public private(set) var count = 0

    public init(capacity: Int) { samples = [Int16](repeating: 0, count: max(1, capacity)) }

    public var capacity: Int { samples.count }

    public mutating func append(_ frame: UnsafeBufferPointer<Int16>) {
        for sample in frame {
            samples[(start + count) % samples.count] = sample
            if count < samples.count { count += 1 } else { start = (start + 1) % samples.count }
        }
    }

    /// Hands the content, oldest first, to `body` in at most two contiguous pieces (nothing is copied).
    public func read(_ body: (UnsafeBufferPointer<Int16>) -> Void) {
        guard count > 0 else { return }
        let tail = min(count, samples.count - start)
        samples.withUnsafeBufferPointer { ring in
            body(UnsafeBufferPointer(rebasing: ring[start..<start + tail]))
            if tail < count { body(UnsafeBufferPointer(rebasing: ring[0..<(count - tail)])) }
        }
    }
}
