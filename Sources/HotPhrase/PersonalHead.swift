#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import CLBFGS

/// Windows of normalised embedding frames, `width` numbers each: what the personal head is fitted on and scores.
/// Each row is `width` consecutive numbers of `storage` from its start; the windows of one stream share them (a
/// window of 12 frames overlaps the next in 11), so the bank's 12,956 windows hold a twelfth of what copies would
/// (BENCHMARKS.md, "the personal head on the speaker, its offset picked with both keywords pooled").
public struct WindowRows: Sendable, Equatable {
    public private(set) var storage: [Float] = []
    /// Where each row starts in `storage`.
    public private(set) var starts: [Int] = []
    public let width: Int

    public init(width: Int) {
        precondition(width > 0)
        self.width = width
    }

    public var count: Int { starts.count }

    /// Every row, one after another (a copy: for checks and tests, not the fit).
    public var values: [Float] { starts.flatMap { storage[$0..<($0 + width)] } }

    /// `body` gets the storage's first number and each row's start.
    public func withRows<R>(_ body: (UnsafePointer<Float>, [Int]) throws -> R) rethrows -> R {
        try storage.withUnsafeBufferPointer { try body($0.baseAddress ?? UnsafePointer(bitPattern: 8)!, starts) }
    }

    public mutating func append(_ row: [Float]) {
        precondition(row.count == width)
        starts.append(storage.count)
        storage += row
    }

    public mutating func append(contentsOf other: WindowRows) {
        precondition(other.width == width)
        let base = storage.count
        storage += other.storage
        starts += other.starts.map { $0 + base }
    }

    /// Every window of `frames` consecutive frames (each `dim` numbers, oldest first) in `normalised`, a stream of
    /// normalised frames one after another: the window ending at each frame from the `frames`-th on.
    public mutating func appendWindows(of normalised: [Float], dim: Int, frames: Int) {
        precondition(frames * dim == width && normalised.count % dim == 0)
        let n = normalised.count / dim
        guard n >= frames else { return }
        let base = storage.count
        storage += normalised
        starts += (0...(n - frames)).map { base + $0 * dim }
    }

    /// The same rows, however they are stored.
    public static func == (a: WindowRows, b: WindowRows) -> Bool {
        a.width == b.width && a.count == b.count
            && zip(a.starts, b.starts).allSatisfy { a.storage[$0..<($0 + a.width)] == b.storage[$1..<($1 + b.width)] }
    }
}

/// The personal head's fit (docs/household.md, "The personal head"; BENCHMARKS.md, "gate, learning and
/// multi-condition enrollment together; a personal head"): logistic regression, the two classes weighed equally
/// whatever their sizes, with an L2 penalty: minimises the mean log loss of the positives plus the mean log loss
/// of the negatives plus `l2 |w|^2` (the bias is not penalised), by libLBFGS. The same objective as the
/// measurement's (tools/hotphrase/hotphrase/household_head.py, `fit`); it is strictly convex, so any minimiser
/// that converges reaches the same head.
public enum HeadFit {
    /// Why no head was fitted.
    public struct Failure: Error, Equatable, CustomStringConvertible {
        public let problem: String
        public var description: String { "the personal head cannot be fitted: \(problem)" }
    }

    /// The penalty the measurement chose: 0.01 missed fewer in a room with noise than 1.0 (BENCHMARKS.md, "gate,
    /// learning and multi-condition enrollment together; a personal head").
    public static let l2 = 0.01
    public static let maxIterations = 500

    /// -> the weights (one per number of a window) and the bias.
    public static func fit(positives: WindowRows, negatives: WindowRows, l2: Double = l2,
                           maxIterations: Int = maxIterations) throws(Failure) -> (weights: [Double], bias: Double) {
        guard positives.width == negatives.width else {
            throw Failure(problem: "positive windows of \(positives.width) numbers, negative of \(negatives.width)")
        }
        guard positives.count > 0, negatives.count > 0 else {
            throw Failure(problem: "\(positives.count) positive and \(negatives.count) negative windows: it needs both")
        }
        guard l2 > 0, l2.isFinite, maxIterations > 0 else {
            throw Failure(problem: "the penalty must be above 0 and the iterations at least 1")
        }
        guard positives.storage.allSatisfy(\.isFinite), negatives.storage.allSatisfy(\.isFinite) else {
            throw Failure(problem: "a window holds a number that is not finite")
        }
        let objective = Objective(positives: positives, negatives: negatives, l2: l2)
        let n = positives.width + 1
        guard let x = lbfgs_malloc(Int32(n)) else { throw Failure(problem: "out of memory") }
        defer { lbfgs_free(x) }
        for i in 0..<n { x[i] = 0 }
        var parameters = lbfgs_parameter_t()
        lbfgs_parameter_init(&parameters)
        parameters.m = 10
        parameters.max_iterations = Int32(maxIterations)
        // Stop when the gradient is 1e-6 of the weights' size, or the loss falls by less than 1e-10 of itself in
        // an iteration: tighter than the measurement's scipy L-BFGS-B defaults, so both reach the same head.
        parameters.epsilon = 1e-6
        parameters.past = 1
        parameters.delta = 1e-10
        var loss = 0.0
        let status = withExtendedLifetime(objective) {
            lbfgs(Int32(n), x, &loss, { instance, x, g, n, _ in
                Unmanaged<Objective>.fromOpaque(instance!).takeUnretainedValue().evaluate(x!, g!, Int(n))
            }, nil, Unmanaged.passUnretained(objective).toOpaque(), &parameters)
        }
        // A line search that can no longer lower the loss in floating point, and the iteration limit, leave the
        // last point: the minimum to within rounding, or as close as the limit allows (scipy does the same).
        let acceptable = [Int32(LBFGS_SUCCESS), Int32(LBFGS_STOP), Int32(LBFGS_ALREADY_MINIMIZED),
                          Int32(LBFGSERR_ROUNDING_ERROR), Int32(LBFGSERR_MAXIMUMITERATION)]
        guard acceptable.contains(status), loss.isFinite else {
            throw Failure(problem: "libLBFGS stopped with status \(status)")
        }
        let d = positives.width
        return ((0..<d).map { x[$0] }, x[d])
    }

    /// The loss at `theta` (the weights, then the bias) and its gradient into `gradient`: the fit's objective.
    static func loss(_ theta: [Double], gradient: inout [Double], positives: WindowRows, negatives: WindowRows,
                     l2: Double) -> Double {
        let objective = Objective(positives: positives, negatives: negatives, l2: l2)
        return theta.withUnsafeBufferPointer { t in
            gradient.withUnsafeMutableBufferPointer { objective.evaluate(t.baseAddress!, $0.baseAddress!, theta.count) }
        }
    }

    /// The head rescaled so that its logits over `negatives` have mean 0 and standard deviation 1 (floored at
    /// 1e-6): a z against them, as the templates' DTW score is a z against the bank, so that one threshold means
    /// the same for every enrollment.
    public static func normalised(weights: [Double], bias: Double, negatives: WindowRows) -> (weights: [Float], bias: Double) {
        precondition(weights.count == negatives.width && negatives.count > 0)
        let w = weights.map { Float($0) }
        var sum = 0.0, sumSquares = 0.0
        w.withUnsafeBufferPointer { wb in
            negatives.withRows { base, starts in
                for start in starts {
                    let s = Double(dot(base + start, wb.baseAddress!, negatives.width)) + bias
                    sum += s
                    sumSquares += s * s
                }
            }
        }
        let count = Double(negatives.count)
        let mu = sum / count
        let sd = max((max(sumSquares / count - mu * mu, 0)).squareRoot(), 1e-6)
        return (weights.map { Float($0 / sd) }, (bias - mu) / sd)
    }
}

/// The fit's objective over two sets of windows; libLBFGS calls `evaluate` through a C function pointer.
private final class Objective {
    let positives: WindowRows
    let negatives: WindowRows
    let l2: Double
    /// The weights as Floats, for the dot products with the windows.
    var weights: [Float]

    init(positives: WindowRows, negatives: WindowRows, l2: Double) {
        self.positives = positives
        self.negatives = negatives
        self.l2 = l2
        weights = [Float](repeating: 0, count: positives.width)
    }

    func evaluate(_ x: UnsafePointer<Double>, _ g: UnsafeMutablePointer<Double>, _ n: Int) -> Double {
        let d = n - 1
        for j in 0..<d { weights[j] = Float(x[j]) }
        for j in 0..<n { g[j] = 0 }
        var loss = 0.0
        weights.withUnsafeBufferPointer { w in
            loss += Self.term(positives, positive: true, w: w.baseAddress!, bias: x[d], g: g)
            loss += Self.term(negatives, positive: false, w: w.baseAddress!, bias: x[d], g: g)
        }
        for j in 0..<d {
            loss += l2 * x[j] * x[j]
            g[j] += 2 * l2 * x[j]
        }
        return loss
    }

    /// The mean log loss of one class (-log sigmoid(s) for a positive, -log sigmoid(-s) for a negative, s = w.x + b),
    /// its gradient added into g.
    private static func term(_ rows: WindowRows, positive: Bool, w: UnsafePointer<Float>, bias: Double,
                             g: UnsafeMutablePointer<Double>) -> Double {
        let d = rows.width, count = Double(rows.count)
        var loss = 0.0, biasGradient = 0.0
        rows.withRows { base, starts in
            for start in starts {
                let row = base + start
                let s = Double(dot(row, w, d)) + bias
                let m = positive ? -s : s  // the loss is softplus(m)
                loss += max(m, 0) + log1p(exp(-abs(m)))
                // d softplus(m) / ds: sigmoid(m), with the sign of m against s
                let sigmoid = m >= 0 ? 1 / (1 + exp(-m)) : exp(m) / (1 + exp(m))
                let c = (positive ? -sigmoid : sigmoid) / count
                biasGradient += c
                for j in 0..<d { g[j] += c * Double(row[j]) }
            }
        }
        g[d] += biasGradient
        return loss / count
    }
}

/// The household's personal head for one enrollment (docs/household.md, "The personal head"): a linear score over
/// the last `window` embedding frames, each normalised as the templates' are (`NegativeBank.normalise`), scaled
/// to a z against its negatives (`HeadFit.normalised`) so that it is compared with the templates' z at one
/// threshold.
public struct PersonalHead: Codable, Sendable, Equatable {
    /// Frames a window holds: 0.96 s, longer than most takes' template (BENCHMARKS.md, "gate, learning and
    /// multi-condition enrollment together; a personal head").
    public static let window = 12
    /// The positive windows of a take end this many steps from its template's last frame.
    public static let shifts = [-1, 0, 1, 2]
    /// The takes a session needs for a head: the measurement's enrollments had three.
    public static let minimumTakes = 3
    /// The speaker's rule (docs/household.md, "The personal head"): the templates wake at the bank's z, a head at
    /// that z plus this much. Picked on 5.45 h of held-out speech with four keywords pooled, at the bank's z 6.0
    /// (BENCHMARKS.md, "the bank's z on 5.45 h and four keywords; a threshold of each template's own"): the lowest
    /// offset at which the pair wakes at most 0.01 times an hour more than the templates alone (mean over
    /// enrollments). With each half of that speech held out in turn the rule picks 0.60 and 0.50. A head thus
    /// passes at z 6.55.
    public static let offset = 0.55

    /// "1 personal head", "2 personal heads": how the log, `ctl voices` and `hotphrase --household` count them.
    public static func counted(_ n: Int) -> String { "\(n) personal head\(n == 1 ? "" : "s")" }

    /// Said where `Household.addHead` finds the phrase gone (`ctl forget` while the head trained): nothing is
    /// wrong, and there is nothing to keep it for.
    public static func forgotten(_ phrase: String) -> String {
        "\"\(phrase)\" was forgotten while its personal head trained; the head is not kept"
    }

    /// `window * dim` numbers, the oldest frame's first.
    public var weights: [Float]
    public var bias: Double

    public init(weights: [Float], bias: Double) {
        self.weights = weights
        self.bias = bias
    }

    /// The z of the window whose normalised frames are `frames` (`window * dim` numbers, oldest first).
    public func z(_ frames: UnsafePointer<Float>) -> Double {
        weights.withUnsafeBufferPointer { Double(dot(frames, $0.baseAddress!, $0.count)) } + bias
    }

    /// The head scaled again so that its z over `negatives` has mean 0 and deviation 1 (a new bank's windows).
    public func rescaled(against negatives: WindowRows) -> PersonalHead {
        let (w, b) = HeadFit.normalised(weights: weights.map(Double.init), bias: bias, negatives: negatives)
        return PersonalHead(weights: w, bias: b)
    }

    /// A take's positive windows: its normalised frames (silence either side, as enrolled), the windows ending
    /// `shifts` steps from its template's last frame, those that fit.
    public static func positives(of take: EnrolledTake, bank: NegativeBank) -> WindowRows {
        windows(around: take.templateEnd, of: take.frames, bank: bank)
    }

    /// The windows of `frames` (raw, normalised here) ending `shifts` steps from `end`, those that fit.
    private static func windows(around end: Int, of frames: [[Float]], bank: NegativeBank) -> WindowRows {
        var rows = WindowRows(width: window * bank.dim)
        let normalised = bank.normalised(frames)
        for shift in shifts {
            let last = end + shift
            guard last >= window - 1, last < frames.count else { continue }
            rows.append(Array(normalised[((last - window + 1) * bank.dim)..<((last + 1) * bank.dim)]))
        }
        return rows
    }

    /// The positive windows of a take's rendering (`TakeRenderings.render`: the take padded as enrolled, so its
    /// frames line up with the clean take's): its normalised frames, the windows ending where the clean take's do
    /// (the clean take's template end, as the measurement keeps a rendering's frames by its clean take's span).
    public static func positives(ofRendering samples: [Int16], take: EnrolledTake, model: HotPhraseModel,
                                 bank: NegativeBank) -> WindowRows {
        var frames: [[Float]] = []
        let detector = HotPhraseDetector(model: model)
        samples.withUnsafeBufferPointer { detector.process($0, onFrame: { e, _ in frames.append(Array(e)) }, onDetection: { _ in }) }
        return windows(around: take.templateEnd, of: frames, bank: bank)
    }

    /// One enrollment's head as the speaker trains it: each take (its samples and what `Enrollment.take` made of
    /// them) clean and in each of `renderings` (seeded by the take's place and the rendering's, so the same takes
    /// give the same head), against the bank's windows and `extraNegatives`.
    public static func train(takes: [(samples: [Int16], take: EnrolledTake)], model: HotPhraseModel, bank: NegativeBank,
                             renderings: [TakeRenderings.Rendering] = TakeRenderings.measured, babble: [[Float]] = [],
                             extraNegatives: WindowRows? = nil) throws(HeadFit.Failure) -> PersonalHead {
        var negatives = negatives(bank: bank)
        if let extraNegatives { negatives.append(contentsOf: extraNegatives) }
        return try fit(positives: positives(takes: takes, model: model, bank: bank, renderings: renderings, babble: babble),
                       negatives: negatives)
    }

    /// `train`'s positive windows: each take's, clean and rendered.
    public static func positives(takes: [(samples: [Int16], take: EnrolledTake)], model: HotPhraseModel, bank: NegativeBank,
                                 renderings: [TakeRenderings.Rendering], babble: [[Float]]) -> WindowRows {
        var rows = WindowRows(width: window * bank.dim)
        for (t, take) in takes.enumerated() {
            rows.append(contentsOf: positives(of: take.take, bank: bank))
            for (r, rendering) in renderings.enumerated() {
                let seed = UInt64(t) << 32 | UInt64(r)
                let rendered = TakeRenderings.render(take.samples, rendering, seed: seed, babble: babble).samples
                rows.append(contentsOf: positives(ofRendering: rendered, take: take.take, model: model, bank: bank))
            }
        }
        return rows
    }

    /// Every window of each of the bank's segments (each a stream from reset, so no window spans two).
    public static func negatives(bank: NegativeBank) -> WindowRows {
        var rows = WindowRows(width: window * bank.dim)
        var first = 0
        var e = [Float](repeating: 0, count: bank.dim)
        for segment in bank.segments {
            var normalised = [Float](repeating: 0, count: segment * bank.dim)
            normalised.withUnsafeMutableBufferPointer { out in
                for t in 0..<segment {
                    bank.frame(first + t, into: &e)
                    e.withUnsafeBufferPointer { bank.normalise($0.baseAddress!, into: out.baseAddress! + t * bank.dim) }
                }
            }
            rows.appendWindows(of: normalised, dim: bank.dim, frames: window)
            first += segment
        }
        return rows
    }

    /// The head of one enrollment: `positives` (the takes' windows, and any rendering's) against `negatives`,
    /// scaled to a z against the negatives.
    public static func fit(positives: WindowRows, negatives: WindowRows, l2: Double = HeadFit.l2) throws(HeadFit.Failure) -> PersonalHead {
        let (w, b) = try HeadFit.fit(positives: positives, negatives: negatives, l2: l2)
        let (weights, bias) = HeadFit.normalised(weights: w, bias: b, negatives: negatives)
        return PersonalHead(weights: weights, bias: bias)
    }
}
