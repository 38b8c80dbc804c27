/// Streaming subsequence DTW of one template over a stream of frames (docs/household.md, "Subsequence DTW"):
/// free start anywhere in the stream, each template frame visited exactly once, the stream either one frame per
/// template frame, one skipped (the person slower), or two template frames on one (the person faster). Frames
/// are already centred and unit length, so the distance is `1 - a . b`. Holds the columns for t-1 and t-2 only;
/// nothing is allocated per frame. Each cell also carries the stream frame its best path started on, so that a
/// match can be cut out of the stream (`lastStart`: what an answered wake teaches the household, docs/household.md).
final class SubsequenceDTW {
    /// Template frames, L.
    let length: Int
    let dim: Int
    /// [L][dim], normalised.
    private let template: UnsafeMutablePointer<Float>
    private let cost: UnsafeMutablePointer<Float>
    /// D(., t), D(., t-1), D(., t-2); rotated after each frame.
    private var current: UnsafeMutablePointer<Float>
    private var previous: UnsafeMutablePointer<Float>
    private var beforePrevious: UnsafeMutablePointer<Float>
    /// The stream frame (from the last reset) each of those cells' best path started on.
    private var currentStart: UnsafeMutablePointer<Int>
    private var previousStart: UnsafeMutablePointer<Int>
    private var beforePreviousStart: UnsafeMutablePointer<Int>
    /// Stream frames pushed since the last reset.
    private(set) var frames = 0
    /// The stream frame on which the best path ending at the template's last frame on the newest frame began
    /// (meaningful once `push` has returned a finite score).
    private(set) var lastStart = 0

    /// `template`: L rows of `dim` normalised numbers.
    init(template: [Float], dim: Int) {
        precondition(dim > 0 && !template.isEmpty && template.count % dim == 0, "a template is whole rows of dim numbers")
        self.dim = dim
        length = template.count / dim
        self.template = .allocate(capacity: template.count)
        self.template.initialize(from: template, count: template.count)
        cost = .allocate(capacity: length)
        cost.initialize(repeating: 0, count: length)
        current = .allocate(capacity: length)
        previous = .allocate(capacity: length)
        beforePrevious = .allocate(capacity: length)
        current.initialize(repeating: .infinity, count: length)
        previous.initialize(repeating: .infinity, count: length)
        beforePrevious.initialize(repeating: .infinity, count: length)
        currentStart = .allocate(capacity: length)
        previousStart = .allocate(capacity: length)
        beforePreviousStart = .allocate(capacity: length)
        currentStart.initialize(repeating: 0, count: length)
        previousStart.initialize(repeating: 0, count: length)
        beforePreviousStart.initialize(repeating: 0, count: length)
    }

    deinit {
        template.deallocate()
        cost.deallocate()
        current.deallocate()
        previous.deallocate()
        beforePrevious.deallocate()
        currentStart.deallocate()
        previousStart.deallocate()
        beforePreviousStart.deallocate()
    }

    /// Forgets the stream: the next frame is t = 0.
    func reset() {
        previous.update(repeating: .infinity, count: length)
        beforePrevious.update(repeating: .infinity, count: length)
        frames = 0
        lastStart = 0
    }

    /// Takes stream frame t (dim normalised numbers); returns score_T(t), the mean distance of the best path
    /// ending at the template's last frame on this one, +inf until a path exists.
    @_optimize(speed)  // the detector's hot loop: -O here, in a binary built -Osize (deploy/build-release)
    func push(_ x: UnsafePointer<Float>) -> Float {
        for i in 0..<length { cost[i] = 1 - dot(template + i * dim, x, dim) }
        current[0] = cost[0]
        currentStart[0] = frames
        for i in 1..<max(1, length) {
            // The same minimum as min(min(a, b), c), with the start of the path that gave it (first on ties).
            var best = previous[i - 1], start = previousStart[i - 1]
            if beforePrevious[i - 1] < best { best = beforePrevious[i - 1]; start = beforePreviousStart[i - 1] }
            if i >= 2, previous[i - 2] + cost[i - 1] < best { best = previous[i - 2] + cost[i - 1]; start = previousStart[i - 2] }
            current[i] = cost[i] + best
            currentStart[i] = start
        }
        let newest = current, newestStart = currentStart
        current = beforePrevious
        beforePrevious = previous
        previous = newest
        currentStart = beforePreviousStart
        beforePreviousStart = previousStart
        previousStart = newestStart
        frames += 1
        lastStart = newestStart[length - 1]
        return newest[length - 1] / Float(length)
    }
}

/// a . b over n numbers, eight lanes at a time where n allows (96 does).
@inline(__always)
func dot(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, _ n: Int) -> Float {
    var i = 0
    var lanes = SIMD8<Float>()
    while i + 8 <= n {
        lanes += UnsafeRawPointer(a + i).loadUnaligned(as: SIMD8<Float>.self)
            * UnsafeRawPointer(b + i).loadUnaligned(as: SIMD8<Float>.self)
        i += 8
    }
    var sum = lanes.sum()
    while i < n {
        sum += a[i] * b[i]
        i += 1
    }
    return sum
}
