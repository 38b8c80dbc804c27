import FoundationEssentials
import Glibc

/// A real FFT of a power-of-two size n, as one complex FFT of n/2 points on the even/odd samples and a final
/// split (half the work of a complex FFT on zero imaginary parts). Tables are built once; `powerSpectrum` does
/// not allocate.
final class RealFFT {
    let n: Int
    private let half: Int
    private let bitReverse: [Int]
    private let twiddleRe: [Float]  // e^{-2 pi i k / half}, k < half/2
    private let twiddleIm: [Float]
    private let splitRe: [Float]    // e^{-2 pi i k / n}, k <= half
    private let splitIm: [Float]
    private var re: [Float]
    private var im: [Float]

    init(size n: Int) {
        precondition(n >= 4 && n & (n - 1) == 0, "FFT size must be a power of two")
        self.n = n
        half = n / 2
        let bits = half.trailingZeroBitCount
        bitReverse = (0..<(n / 2)).map { i in
            var r = 0
            for b in 0..<bits where i & (1 << b) != 0 { r |= 1 << (bits - 1 - b) }
            return r
        }
        twiddleRe = (0..<max(1, n / 4)).map { Float(cos(-2 * Double.pi * Double($0) / Double(n / 2))) }
        twiddleIm = (0..<max(1, n / 4)).map { Float(sin(-2 * Double.pi * Double($0) / Double(n / 2))) }
        splitRe = (0...(n / 2)).map { Float(cos(-2 * Double.pi * Double($0) / Double(n))) }
        splitIm = (0...(n / 2)).map { Float(sin(-2 * Double.pi * Double($0) / Double(n))) }
        re = [Float](repeating: 0, count: n / 2)
        im = [Float](repeating: 0, count: n / 2)
    }

    /// |X[k]|^2 for k in 0...n/2 of `input` (count <= n, zero-padded) into `power` (n/2+1 values).
    @_optimize(speed)  // the detector's hot loop: -O here, in a binary built -Osize (deploy/build-release)
    func powerSpectrum(_ input: UnsafePointer<Float>, count: Int, into power: UnsafeMutablePointer<Float>) {
        let h = half
        re.withUnsafeMutableBufferPointer { re in
            im.withUnsafeMutableBufferPointer { im in
                // z[m] = x[2m] + i x[2m+1], stored bit-reversed for the in-place iterative FFT.
                for m in 0..<h {
                    let j = bitReverse[m]
                    re[j] = 2 * m < count ? input[2 * m] : 0
                    im[j] = 2 * m + 1 < count ? input[2 * m + 1] : 0
                }
                var size = 2
                while size <= h {
                    let step = h / size
                    let hs = size / 2
                    var start = 0
                    while start < h {
                        for k in 0..<hs {
                            let wr = twiddleRe[k * step], wi = twiddleIm[k * step]
                            let a = start + k, b = a + hs
                            let tr = re[b] * wr - im[b] * wi
                            let ti = re[b] * wi + im[b] * wr
                            re[b] = re[a] - tr
                            im[b] = im[a] - ti
                            re[a] += tr
                            im[a] += ti
                        }
                        start += size
                    }
                    size *= 2
                }
                // X[k] = E[k] + W^k O[k], with E = (Z[k] + conj Z[h-k]) / 2 and O = (Z[k] - conj Z[h-k]) / 2i.
                for k in 0...h {
                    let a = k % h, b = (h - k) % h
                    let zr = re[a], zi = im[a], cr = re[b], ci = -im[b]
                    let er = 0.5 * (zr + cr), ei = 0.5 * (zi + ci)
                    let dr = 0.5 * (zr - cr), di = 0.5 * (zi - ci)
                    let orr = di, oi = -dr  // (dr + i di) / i
                    let xr = er + splitRe[k] * orr - splitIm[k] * oi
                    let xi = ei + splitRe[k] * oi + splitIm[k] * orr
                    power[k] = xr * xr + xi * xi
                }
            }
        }
    }
}

/// Streaming log-mel front end (the numbers come from the model file and match tools/hotphrase/hotphrase/frontend.py):
/// Hann windows of `window` samples every `hop`, FFT, power, HTK-mel triangles, natural log with a floor.
/// Samples go in as they arrive; each completed frame is handed to `onFrame` as `mels` floats. Nothing is
/// allocated after init.
final class MelFrontEnd {
    let window: Int
    let hop: Int
    let mels: Int
    private let logFloor: Float
    private let fft: RealFFT
    private let hann: [Float]
    /// Sparse triangles: for mel m, weights over bins first[m] ..< first[m] + weights[m].count.
    private let first: [Int]
    private let weights: [[Float]]
    private var buffer: [Float]
    private var filled = 0
    private var windowed: [Float]
    private var power: [Float]
    private var frame: [Float]

    init(model: ConvolutionalModel) {
        window = model.window
        hop = model.hop
        mels = model.mels
        logFloor = model.logFloor
        fft = RealFFT(size: model.fftSize)
        hann = (0..<model.window).map { Float(0.5 - 0.5 * cos(2 * Double.pi * Double($0) / Double(model.window))) }
        let bins = model.fftSize / 2 + 1
        func toMel(_ f: Double) -> Double { 2595 * log10(1 + f / 700) }
        func toHz(_ m: Double) -> Double { 700 * (pow(10, m / 2595) - 1) }
        let lo = toMel(model.fmin), hi = toMel(model.fmax)
        let edges = (0..<(model.mels + 2)).map { toHz(lo + (hi - lo) * Double($0) / Double(model.mels + 1)) }
        var first: [Int] = [], weights: [[Float]] = []
        for m in 0..<model.mels {
            var w: [Float] = []
            var start = -1
            for k in 0..<bins {
                let f = Double(k) * Double(model.sampleRate) / Double(model.fftSize)
                let v = max(0, min((f - edges[m]) / (edges[m + 1] - edges[m]), (edges[m + 2] - f) / (edges[m + 2] - edges[m + 1])))
                if v > 0 {
                    if start < 0 { start = k }
                    w += [Float](repeating: 0, count: k - start - w.count) + [Float(v)]
                }
            }
            first.append(max(0, start))
            weights.append(w)
        }
        self.first = first
        self.weights = weights
        buffer = [Float](repeating: 0, count: model.window)
        windowed = [Float](repeating: 0, count: model.window)
        power = [Float](repeating: 0, count: bins)
        frame = [Float](repeating: 0, count: model.mels)
    }

    func reset() { filled = 0 }

    /// Feeds 16-bit samples; calls `onFrame` for every frame they complete.
    func process(_ samples: UnsafeBufferPointer<Int16>, onFrame: (UnsafeBufferPointer<Float>) -> Void) {
        var i = 0
        while i < samples.count {
            let take = min(window - filled, samples.count - i)
            buffer.withUnsafeMutableBufferPointer { b in
                for j in 0..<take { b[filled + j] = Float(samples[i + j]) / 32768 }
            }
            filled += take
            i += take
            if filled == window {
                computeFrame()
                frame.withUnsafeBufferPointer { onFrame($0) }
                // keep the overlap: the next window starts `hop` samples later
                buffer.withUnsafeMutableBufferPointer { b in
                    for j in 0..<(window - hop) { b[j] = b[j + hop] }
                }
                filled = window - hop
            }
        }
    }

    private func computeFrame() {
        for j in 0..<window { windowed[j] = buffer[j] * hann[j] }
        windowed.withUnsafeBufferPointer { w in
            power.withUnsafeMutableBufferPointer { p in fft.powerSpectrum(w.baseAddress!, count: window, into: p.baseAddress!) }
        }
        for m in 0..<mels {
            var sum: Float = 0
            let w = weights[m], f = first[m]
            for j in 0..<w.count { sum += w[j] * power[f + j] }
            frame[m] = log(sum + logFloor)
        }
    }
}
