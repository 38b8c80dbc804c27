@testable import HotPhrase
import Testing

/// The personal head's fit (Sources/HotPhrase/PersonalHead.swift) on small made-up windows: what it must do
/// whatever the data. Its agreement with the measurement's fit on real embeddings is HouseholdParityTests'.
@Suite struct PersonalHeadTests {
    /// A fixed pseudo-random sequence (no seeded generator in the standard library): a 64-bit LCG's top bits.
    struct Numbers {
        var state: UInt64
        mutating func next() -> Float {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(state >> 40) / Float(1 << 24) * 2 - 1
        }
    }

    /// Two clouds in `width` numbers: positives around +0.3 on the first number, negatives around -0.3.
    static func clouds(width: Int, positives: Int, negatives: Int, overlap: Float = 0.2) -> (WindowRows, WindowRows) {
        var numbers = Numbers(state: 37)
        var p = WindowRows(width: width), n = WindowRows(width: width)
        for k in 0..<(positives + negatives) {
            var row = (0..<width).map { _ in numbers.next() * overlap }
            row[0] += k < positives ? 0.3 : -0.3
            if k < positives { p.append(row) } else { n.append(row) }
        }
        return (p, n)
    }

    static func logits(_ rows: WindowRows, _ w: [Double], _ b: Double) -> [Double] {
        (0..<rows.count).map { r in
            (0..<rows.width).reduce(b) { $0 + w[$1] * Double(rows.values[r * rows.width + $1]) }
        }
    }

    @Test func itSeparatesWhatIsSeparable() throws {
        let (p, n) = Self.clouds(width: 8, positives: 12, negatives: 300, overlap: 0.1)
        let (w, b) = try HeadFit.fit(positives: p, negatives: n)
        let sp = Self.logits(p, w, b), sn = Self.logits(n, w, b)
        #expect(sp.min()! > sn.max()!)
        #expect(w[0] > 0)
    }

    @Test func itReachesTheMinimum() throws {
        // Overlapping clouds: the minimum is inside, where the gradient is zero.
        let (p, n) = Self.clouds(width: 24, positives: 40, negatives: 900, overlap: 0.6)
        let (w, b) = try HeadFit.fit(positives: p, negatives: n)
        var g = [Double](repeating: 0, count: 25)
        let f = HeadFit.loss(w + [b], gradient: &g, positives: p, negatives: n, l2: HeadFit.l2)
        let norm = g.reduce(0) { $0 + $1 * $1 }.squareRoot()
        #expect(norm < 1e-4, "gradient norm \(norm) at the fit")
        // and any step away costs
        for k in [0, 5, 24] {
            var moved = w + [b]
            moved[k] += 0.05
            var unused = g
            #expect(HeadFit.loss(moved, gradient: &unused, positives: p, negatives: n, l2: HeadFit.l2) > f)
        }
    }

    @Test func theGradientIsTheLosss() {
        let (p, n) = Self.clouds(width: 6, positives: 5, negatives: 50, overlap: 0.7)
        let theta: [Double] = [0.8, -1.2, 0.3, 2.0, -0.4, 0.1, -0.6]
        var g = [Double](repeating: 0, count: 7), unused = g
        _ = HeadFit.loss(theta, gradient: &g, positives: p, negatives: n, l2: 0.05)
        for k in 0..<7 {
            var up = theta, down = theta
            // a step the Float dot products resolve (the loss is exact to about 1e-7 of itself)
            up[k] += 1e-3
            down[k] -= 1e-3
            let numeric = (HeadFit.loss(up, gradient: &unused, positives: p, negatives: n, l2: 0.05)
                - HeadFit.loss(down, gradient: &unused, positives: p, negatives: n, l2: 0.05)) / 2e-3
            #expect(abs(numeric - g[k]) < 1e-3 * max(1, abs(numeric)), "number \(k): \(numeric) against \(g[k])")
        }
    }

    @Test func theClassesWeighTheSameWhateverTheirSizes() throws {
        // The same clouds with every positive repeated ten times: the mean loss, so the same head.
        let (p, n) = Self.clouds(width: 6, positives: 10, negatives: 200, overlap: 0.6)
        var p10 = WindowRows(width: 6)
        for _ in 0..<10 { p10.append(contentsOf: p) }
        let a = try HeadFit.fit(positives: p, negatives: n), b = try HeadFit.fit(positives: p10, negatives: n)
        for k in 0..<6 { #expect(abs(a.weights[k] - b.weights[k]) < 1e-3) }
        #expect(abs(a.bias - b.bias) < 1e-3)
    }

    @Test func itNeedsBothClassesAndFiniteNumbers() {
        let (p, n) = Self.clouds(width: 4, positives: 3, negatives: 20)
        #expect(throws: HeadFit.Failure(problem: "0 positive and 20 negative windows: it needs both")) {
            try HeadFit.fit(positives: WindowRows(width: 4), negatives: n)
        }
        var bad = p
        bad.append([0, .nan, 0, 0])
        #expect(throws: HeadFit.Failure(problem: "a window holds a number that is not finite")) {
            try HeadFit.fit(positives: bad, negatives: n)
        }
        #expect(throws: HeadFit.Failure(problem: "positive windows of 4 numbers, negative of 5")) {
            try HeadFit.fit(positives: p, negatives: WindowRows(width: 5))
        }
    }

    @Test func normalisedIsAZAgainstTheNegativesInTheSameOrder() throws {
        let (p, n) = Self.clouds(width: 8, positives: 12, negatives: 300, overlap: 0.5)
        let (w, b) = try HeadFit.fit(positives: p, negatives: n)
        let (wz, bz) = HeadFit.normalised(weights: w, bias: b, negatives: n)
        let z = Self.logits(n, wz.map(Double.init), bz)
        let mean = z.reduce(0, +) / Double(z.count)
        let sd = (z.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(z.count)).squareRoot()
        #expect(abs(mean) < 1e-4)
        #expect(abs(sd - 1) < 1e-4)
        let raw = Self.logits(p, w, b), scaled = Self.logits(p, wz.map(Double.init), bz)
        #expect(raw.indices.sorted { raw[$0] < raw[$1] } == scaled.indices.sorted { scaled[$0] < scaled[$1] })
    }

    @Test func windowsEndAtEachFrameOldestFirst() {
        var rows = WindowRows(width: 6)
        rows.appendWindows(of: [1, 2, 3, 4, 5, 6, 7, 8], dim: 2, frames: 3)  // four frames of two
        #expect(rows.values == [1, 2, 3, 4, 5, 6, 3, 4, 5, 6, 7, 8])
        // the windows share the stream's numbers: 8 kept, not 12
        #expect(rows.storage.count == 8 && rows.starts == [0, 2])
        // the same rows copied one by one are equal, however stored; appended after another row, they move with it
        var copied = WindowRows(width: 6)
        copied.append([1, 2, 3, 4, 5, 6])
        copied.append([3, 4, 5, 6, 7, 8])
        #expect(copied == rows && copied.storage.count == 12)
        var both = WindowRows(width: 6)
        both.append([9, 9, 9, 9, 9, 9])
        both.append(contentsOf: rows)
        #expect(both.values == [9, 9, 9, 9, 9, 9, 1, 2, 3, 4, 5, 6, 3, 4, 5, 6, 7, 8] && both.starts == [0, 6, 8])
        #expect(both != rows)
        var none = WindowRows(width: 6)
        none.appendWindows(of: [1, 2, 3, 4], dim: 2, frames: 3)
        #expect(none.count == 0)
    }
}
