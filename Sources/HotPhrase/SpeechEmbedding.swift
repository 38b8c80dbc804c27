/// Format 2's detector steps: mel front end, streaming speech embedding, classifier head (EmbeddingModel.swift
/// has the numbers; tools/hotphrase/hotphrase/export_embedding.py has the reference inference these match).
final class EmbeddingScorer: StepScorer {
    private let model: EmbeddingModel
    private let frontEnd: EmbeddingMelFrontEnd
    private let network: StreamingEmbedding
    private let head: EmbeddingHead
    private var groups = 0
    /// For tests: each mel group (group x mels, already `mel / 10 + 2`) and each embedding.
    var melObserver: ((UnsafeBufferPointer<Float>) -> Void)?
    var embeddingObserver: ((UnsafeBufferPointer<Float>) -> Void)?

    init(model: EmbeddingModel) {
        self.model = model
        frontEnd = EmbeddingMelFrontEnd(mel: model.mel)
        network = StreamingEmbedding(model: model)
        head = EmbeddingHead(model: model)
    }

    func reset() {
        frontEnd.reset()
        network.reset()
        head.reset()
        groups = 0
    }

    func process(_ samples: UnsafeBufferPointer<Int16>, onEmbedding: (UnsafeBufferPointer<Float>, Int) -> Void,
                 onScore: (Float, Int) -> Void) {
        let mel = model.mel
        frontEnd.process(samples) { group in
            groups += 1
            melObserver?(group)
            // the moment the group's newest frame ended
            let end = ((groups * mel.group) - 1) * mel.hop + mel.fftSize
            var score: Float?
            network.push(group: group) { embedding in
                embeddingObserver?(embedding)
                onEmbedding(embedding, end)
                score = head.push(embedding: embedding)
            }
            if let score { onScore(score, end) }
        }
    }

    func process(_ samples: UnsafeBufferPointer<Int16>, onScore: (Float, Int) -> Void) {
        process(samples, onEmbedding: { _, _ in }, onScore: onScore)
    }
}

/// The mel spectrogram of openWakeWord's melspectrogram.tflite: frame j is samples hop*j ..< hop*j + fftSize
/// (int16 scale), windowed, power spectrum, mel filterbank, 10 log10 with a floor; each group of `group` frames
/// (one call of the graph) is clamped to within topDB of its loudest value, then scaled as openWakeWord does.
final class EmbeddingMelFrontEnd {
    private let mel: EmbeddingModel.Mel
    private let fft: RealFFT
    private let buffer: UnsafeMutablePointer<Float>
    private var filled = 0
    private let windowed: UnsafeMutablePointer<Float>
    private let power: UnsafeMutablePointer<Float>
    private let group: UnsafeMutablePointer<Float>
    private var inGroup = 0

    init(mel: EmbeddingModel.Mel) {
        self.mel = mel
        fft = RealFFT(size: mel.fftSize)
        buffer = .allocate(capacity: mel.fftSize)
        windowed = .allocate(capacity: mel.fftSize)
        power = .allocate(capacity: mel.fftSize / 2 + 1)
        group = .allocate(capacity: mel.group * mel.mels)
    }

    deinit {
        buffer.deallocate()
        windowed.deallocate()
        power.deallocate()
        group.deallocate()
    }

    func reset() {
        filled = 0
        inGroup = 0
    }

    /// Feeds samples; calls `onGroup` with every group of frames they complete.
    func process(_ samples: UnsafeBufferPointer<Int16>, onGroup: (UnsafeBufferPointer<Float>) -> Void) {
        let n = mel.fftSize, hop = mel.hop
        var i = 0
        while i < samples.count {
            let take = min(n - filled, samples.count - i)
            for j in 0..<take { buffer[filled + j] = Float(samples[i + j]) }
            filled += take
            i += take
            guard filled == n else { continue }
            frame(into: group + inGroup * mel.mels)
            inGroup += 1
            // keep the overlap: the next frame starts `hop` samples later
            buffer.update(from: buffer + hop, count: n - hop)
            filled = n - hop
            if inGroup == mel.group {
                finishGroup()
                onGroup(UnsafeBufferPointer(start: group, count: mel.group * mel.mels))
                inGroup = 0
            }
        }
    }

    private func frame(into out: UnsafeMutablePointer<Float>) {
        let n = mel.fftSize
        mel.window.withUnsafeBufferPointer { w in
            for j in 0..<n { windowed[j] = buffer[j] * w[j] }
        }
        fft.powerSpectrum(windowed, count: n, into: power)
        for m in 0..<mel.mels {
            var sum: Float = 0
            let first = mel.first[m]
            mel.weights[m].withUnsafeBufferPointer { w in
                for j in 0..<w.count { sum += w[j] * power[first + j] }
            }
            out[m] = 10 * log10(max(sum, mel.powerFloor))
        }
    }

    private func finishGroup() {
        let count = mel.group * mel.mels
        var loudest = -Float.infinity
        for j in 0..<count { loudest = max(loudest, group[j]) }
        let lowest = loudest - mel.topDB
        for j in 0..<count { group[j] = max(group[j], lowest) * mel.scale + mel.offset }
    }
}

/// Frames of one depth of the network, in time order: frame g (global index since the reset) of `width`
/// positions x `channels`, stored with `pad` zero positions on both sides (the zero padding in frequency of the
/// convolution that reads this level), so that one output position's inputs are contiguous.
private final class Level {
    let width: Int
    let channels: Int
    let pad: Int
    let frameSize: Int
    let capacity: Int
    let storage: UnsafeMutablePointer<Float>
    /// Global index of the frame in slot 0, and how many slots hold frames.
    var base = 0
    var count = 0

    init(width: Int, channels: Int, pad: Int, capacity: Int) {
        self.width = width
        self.channels = channels
        self.pad = pad
        frameSize = (width + 2 * pad) * channels
        self.capacity = capacity
        storage = .allocate(capacity: frameSize * capacity)
        storage.initialize(repeating: 0, count: frameSize * capacity)
    }

    deinit { storage.deallocate() }

    /// The padded frame of global index g.
    func frame(_ g: Int) -> UnsafeMutablePointer<Float> { storage + (g - base) * frameSize }

    /// Where a new frame's values go (after the padding); the caller then counts it.
    func appendSlot() -> UnsafeMutablePointer<Float> {
        precondition(count < capacity, "a network level overflowed")
        return storage + count * frameSize + pad * channels
    }

    /// Forgets the frames before global index g (the padding moves with them and stays zero).
    func drop(before g: Int) {
        let n = min(max(0, g - base), count)
        guard n > 0 else { return }
        storage.update(from: storage + n * frameSize, count: (count - n) * frameSize)
        count -= n
        base += n
    }

    func reset() {
        base = 0
        count = 0
    }
}

/// The embedding network run on a stream. Every convolution is VALID in time and every pooling's time stride
/// divides the 8-frame step (EmbeddingModel checks both), so the frames of each depth that consecutive 76-frame
/// windows see are the same frames: each depth keeps only the few frames its next layer still needs, and each
/// step computes only the frames that are new (8 mel frames in, one embedding out) instead of the whole window.
/// Global frame g of the last depth is then exactly the embedding of mel frames step*g ..< step*g + frames.
final class StreamingEmbedding {
    private let model: EmbeddingModel
    /// levels[0] holds mel frames; layer i reads levels[i] and writes levels[i + 1].
    private let levels: [Level]
    /// The next global frame each layer will write.
    private var next: [Int]

    init(model: EmbeddingModel) {
        self.model = model
        var levels: [Level] = []
        var width = model.mel.mels, channels = 1
        // A depth holds the frames its reader keeps between steps (its time kernel less one: a convolution's
        // kt - 1, a pooling's pt - 1) plus what one step adds there (step / the time strides above it; every
        // stride divides the step, EmbeddingModel checks). Sized exactly, the 25 depths take 248 kB instead of
        // the 788 kB of 16 frames each (BENCHMARKS.md, "the shipped model on 10 hours of real recordings, CPU with
        // PocketSphinx, memory": `run`'s memory with a format-2 model).
        var stride = 1
        for layer in model.layers {
            switch layer {
            case .conv(let c):
                levels.append(Level(width: width, channels: channels, pad: c.padF, capacity: c.kt - 1 + model.step / stride))
                width += 2 * c.padF - c.kf + 1
                channels = c.cout
            case .pool(let pt, let pf):
                levels.append(Level(width: width, channels: channels, pad: 0, capacity: pt - 1 + model.step / stride))
                width /= pf
                stride *= pt
            }
        }
        levels.append(Level(width: width, channels: channels, pad: 0, capacity: max(1, model.step / stride)))
        self.levels = levels
        next = [Int](repeating: 0, count: model.layers.count)
    }

    func reset() {
        levels.forEach { $0.reset() }
        for i in next.indices { next[i] = 0 }
    }

    /// Appends a group of mel frames (frames x mels); calls `onEmbedding` for every embedding they complete.
    func push(group: UnsafeBufferPointer<Float>, onEmbedding: (UnsafeBufferPointer<Float>) -> Void) {
        let first = levels[0], mels = model.mel.mels
        for f in 0..<(group.count / mels) {
            (first.appendSlot()).update(from: group.baseAddress! + f * mels, count: mels)
            first.count += 1
        }
        for (i, layer) in model.layers.enumerated() {
            let input = levels[i], output = levels[i + 1]
            switch layer {
            case .conv(let c):
                while next[i] + c.kt <= input.base + input.count {
                    convolve(c, input: input, from: next[i], into: output.appendSlot())
                    output.count += 1
                    next[i] += 1
                }
                input.drop(before: next[i])
            case .pool(let pt, let pf):
                while pt * (next[i] + 1) <= input.base + input.count {
                    pool(pt: pt, pf: pf, input: input, from: pt * next[i], into: output.appendSlot(), width: output.width)
                    output.count += 1
                    next[i] += 1
                }
                input.drop(before: pt * next[i])
            }
        }
        let last = levels[levels.count - 1]
        for g in last.base..<(last.base + last.count) {
            onEmbedding(UnsafeBufferPointer(start: last.frame(g), count: last.frameSize))
        }
        last.drop(before: last.base + last.count)
    }

    /// One output frame of a convolution: input frames g ..< g + kt. Worked in tiles of two output positions x 16
    /// outputs (fewer at the edges): the two positions share every weight load, and four independent
    /// accumulators keep the adds from waiting on each other. arm64 has its own, larger tiles (neonTile).
    @_optimize(speed)  // the detector's hot loop: -O here, in a binary built -Osize (deploy/build-release)
    private func convolve(_ c: EmbeddingModel.Conv, input: Level, from g: Int, into out: UnsafeMutablePointer<Float>) {
        let outWidth = input.width + 2 * input.pad - c.kf + 1
        #if arch(arm64)
        let alpha = SIMD4<Float>(repeating: c.alpha ?? 1)
        let floor = SIMD4<Float>(repeating: c.alpha == nil ? -.infinity : c.floor)
        #else
        let alpha = SIMD8<Float>(repeating: c.alpha ?? 1)
        let floor = SIMD8<Float>(repeating: c.alpha == nil ? -.infinity : c.floor)
        #endif
        c.weight.withUnsafeBufferPointer { weightBuffer in
            c.bias.withUnsafeBufferPointer { biasBuffer in
                let weight = UnsafeRawPointer(weightBuffer.baseAddress!)
                let bias = UnsafeRawPointer(biasBuffer.baseAddress!)
                var f = 0
                while f < outWidth {
                    #if arch(arm64)
                    let rows = outWidth - f >= 4 ? 4 : outWidth - f >= 2 ? 2 : 1
                    #else
                    let rows = min(2, outWidth - f)
                    #endif
                    var ob = 0
                    while ob < c.cout {
                        // constant shapes, so that each call is compiled without the branches
                        #if arch(arm64)
                        let quads = c.cout - ob >= 16 ? 4 : 2  // cout is a multiple of 8 (EmbeddingModel checks)
                        switch (rows, quads) {
                        case (4, 4): neonTile(4, 4, c, input, g, f, ob, weight, bias, out, alpha, floor)
                        case (4, _): neonTile(4, 2, c, input, g, f, ob, weight, bias, out, alpha, floor)
                        case (2, 4): neonTile(2, 4, c, input, g, f, ob, weight, bias, out, alpha, floor)
                        case (2, _): neonTile(2, 2, c, input, g, f, ob, weight, bias, out, alpha, floor)
                        case (_, 4): neonTile(1, 4, c, input, g, f, ob, weight, bias, out, alpha, floor)
                        default: neonTile(1, 2, c, input, g, f, ob, weight, bias, out, alpha, floor)
                        }
                        ob += 4 * quads
                        #else
                        let blocks = min(2, (c.cout - ob) / 8)
                        switch (rows, blocks) {
                        case (2, 2): tile(2, 2, c, input, g, f, ob, weight, bias, out, alpha, floor)
                        case (2, _): tile(2, 1, c, input, g, f, ob, weight, bias, out, alpha, floor)
                        case (_, 2): tile(1, 2, c, input, g, f, ob, weight, bias, out, alpha, floor)
                        default: tile(1, 1, c, input, g, f, ob, weight, bias, out, alpha, floor)
                        }
                        ob += 8 * blocks
                        #endif
                    }
                    f += rows
                }
            }
        }
    }

    #if arch(arm64)
    /// Output positions f ..< f + rows (1, 2 or 4) x outputs ob ..< ob + 4 quads (2 or 4) of one output frame, in
    /// up to 16 accumulator registers of arm64's 32. Four consecutive inputs of a position are one vector load, and
    /// each is multiplied in by lane (fmla v.4s, v.4s, v.s[k]): no broadcast load per input and position, and each
    /// weight load serves every position. Every accumulator still takes its products one fused multiply-add at a
    /// time in the order of the SIMD8 tile (time tap, then input), so the results are bit for bit the same.
    @inline(__always) private func neonTile(_ rows: Int, _ quads: Int, _ c: EmbeddingModel.Conv, _ input: Level, _ g: Int,
                                            _ f: Int, _ ob: Int, _ weight: UnsafeRawPointer, _ bias: UnsafeRawPointer,
                                            _ out: UnsafeMutablePointer<Float>, _ alpha: SIMD4<Float>, _ floor: SIMD4<Float>) {
        let span = c.kf * c.cin  // inputs one output position sees in one time tap
        let cout = c.cout, cin = c.cin
        // Byte strides, and pointers stepped along (wrapping arithmetic): checked index sums and products cost
        // as many instructions as the multiply-adds.
        let ws = 4 &* cout  // one input's weights to the next input's
        let xs = 4 &* cin  // one position's inputs to the next position's
        var a = Quads(bias + 4 * ob, quads)
        var b = a, d = a, e = a  // positions f + 1, f + 2, f + 3
        for i in 0..<c.kt {
            // position f's inputs are contiguous in the padded frame; position f + r's start r cin later
            var x = UnsafeRawPointer(input.frame(g + i) + f * cin)
            var w = weight + 4 * (i * span * cout + ob)
            var n = span
            while n >= 4 {
                let x0 = x.loadUnaligned(as: SIMD4<Float>.self)
                let x1 = rows > 1 ? x.loadUnaligned(fromByteOffset: xs, as: SIMD4<Float>.self) : SIMD4()
                let x2 = rows > 2 ? x.loadUnaligned(fromByteOffset: 2 &* xs, as: SIMD4<Float>.self) : SIMD4()
                let x3 = rows > 2 ? x.loadUnaligned(fromByteOffset: 3 &* xs, as: SIMD4<Float>.self) : SIMD4()
                // lane k written out four times: constant lanes, so that LLVM selects the by-lane fmla
                var wk = Quads(w, quads)
                a.add(x0[0], wk, quads); if rows > 1 { b.add(x1[0], wk, quads) }
                if rows > 2 { d.add(x2[0], wk, quads); e.add(x3[0], wk, quads) }
                wk = Quads(w + ws, quads)
                a.add(x0[1], wk, quads); if rows > 1 { b.add(x1[1], wk, quads) }
                if rows > 2 { d.add(x2[1], wk, quads); e.add(x3[1], wk, quads) }
                wk = Quads(w + 2 &* ws, quads)
                a.add(x0[2], wk, quads); if rows > 1 { b.add(x1[2], wk, quads) }
                if rows > 2 { d.add(x2[2], wk, quads); e.add(x3[2], wk, quads) }
                wk = Quads(w + 3 &* ws, quads)
                a.add(x0[3], wk, quads); if rows > 1 { b.add(x1[3], wk, quads) }
                if rows > 2 { d.add(x2[3], wk, quads); e.add(x3[3], wk, quads) }
                x += 16
                w += 4 &* ws
                n &-= 4
            }
            // the rest one input at a time (the first layer's 3 inputs; the others' spans are multiples of 4)
            while n > 0 {
                let wk = Quads(w, quads)
                a.add(x.load(as: Float.self), wk, quads)
                if rows > 1 { b.add(x.load(fromByteOffset: xs, as: Float.self), wk, quads) }
                if rows > 2 {
                    d.add(x.load(fromByteOffset: 2 &* xs, as: Float.self), wk, quads)
                    e.add(x.load(fromByteOffset: 3 &* xs, as: Float.self), wk, quads)
                }
                x += 4
                w += ws
                n &-= 1
            }
        }
        let o = UnsafeMutableRawPointer(out + f * cout + ob)
        a.store(o, quads, alpha, floor)
        if rows > 1 { b.store(o + 4 * cout, quads, alpha, floor) }
        if rows > 2 { d.store(o + 8 * cout, quads, alpha, floor); e.store(o + 12 * cout, quads, alpha, floor) }
    }

    /// Up to 16 consecutive outputs as four vectors (the last two unused when quads is 2).
    private struct Quads {
        var v0, v1, v2, v3: SIMD4<Float>

        @inline(__always) init(_ p: UnsafeRawPointer, _ quads: Int) {
            v0 = p.loadUnaligned(as: SIMD4<Float>.self)
            v1 = p.loadUnaligned(fromByteOffset: 16, as: SIMD4<Float>.self)
            v2 = quads > 2 ? p.loadUnaligned(fromByteOffset: 32, as: SIMD4<Float>.self) : SIMD4()
            v3 = quads > 2 ? p.loadUnaligned(fromByteOffset: 48, as: SIMD4<Float>.self) : SIMD4()
        }

        /// self + x w, fused (what the SIMD8 tile's multiplyAdd does on arm64).
        @inline(__always) mutating func add(_ x: Float, _ w: Quads, _ quads: Int) {
            let s = SIMD4<Float>(repeating: x)
            v0 = v0.addingProduct(s, w.v0)
            v1 = v1.addingProduct(s, w.v1)
            if quads > 2 {
                v2 = v2.addingProduct(s, w.v2)
                v3 = v3.addingProduct(s, w.v3)
            }
        }

        @inline(__always) func store(_ p: UnsafeMutableRawPointer, _ quads: Int, _ alpha: SIMD4<Float>, _ floor: SIMD4<Float>) {
            p.storeBytes(of: StreamingEmbedding.activate(v0, alpha, floor), as: SIMD4<Float>.self)
            p.storeBytes(of: StreamingEmbedding.activate(v1, alpha, floor), toByteOffset: 16, as: SIMD4<Float>.self)
            if quads > 2 {
                p.storeBytes(of: StreamingEmbedding.activate(v2, alpha, floor), toByteOffset: 32, as: SIMD4<Float>.self)
                p.storeBytes(of: StreamingEmbedding.activate(v3, alpha, floor), toByteOffset: 48, as: SIMD4<Float>.self)
            }
        }
    }

    /// activate (below) on four lanes.
    @inline(__always) fileprivate static func activate(_ v: SIMD4<Float>, _ alpha: SIMD4<Float>, _ floor: SIMD4<Float>) -> SIMD4<Float> {
        let leaky = v * alpha
        let m = v.replacing(with: leaky, where: v .< leaky)
        return m.replacing(with: floor, where: m .< floor)
    }
    #endif

    /// Output positions f ..< f + rows (1 or 2) x outputs ob ..< ob + 8 blocks (1 or 2) of one output frame.
    @inline(__always) private func tile(_ rows: Int, _ blocks: Int, _ c: EmbeddingModel.Conv, _ input: Level, _ g: Int,
                                        _ f: Int, _ ob: Int, _ weight: UnsafeRawPointer, _ bias: UnsafeRawPointer,
                                        _ out: UnsafeMutablePointer<Float>, _ alpha: SIMD8<Float>, _ floor: SIMD8<Float>) {
        let span = c.kf * c.cin  // inputs one output position sees in one time tap
        let cout = c.cout, cin = c.cin
        var a0 = bias.loadUnaligned(fromByteOffset: 4 * ob, as: SIMD8<Float>.self)
        var a1 = blocks == 2 ? bias.loadUnaligned(fromByteOffset: 4 * ob + 32, as: SIMD8<Float>.self) : SIMD8<Float>()
        var b0 = a0, b1 = a1
        for i in 0..<c.kt {
            // position f's inputs are contiguous in the padded frame; position f + 1's start cin later
            let row = input.frame(g + i) + f * cin
            let w = weight + 4 * (i * span * cout + ob)
            for q in 0..<span {
                let wq = w + 4 * q * cout
                let w0 = wq.loadUnaligned(as: SIMD8<Float>.self)
                let x = SIMD8<Float>(repeating: row[q])
                a0 = multiplyAdd(a0, x, w0)
                if rows == 2 { b0 = multiplyAdd(b0, SIMD8<Float>(repeating: row[q + cin]), w0) }
                if blocks == 2 {
                    let w1 = wq.loadUnaligned(fromByteOffset: 32, as: SIMD8<Float>.self)
                    a1 = multiplyAdd(a1, x, w1)
                    if rows == 2 { b1 = multiplyAdd(b1, SIMD8<Float>(repeating: row[q + cin]), w1) }
                }
            }
        }
        let o = UnsafeMutableRawPointer(out + f * cout + ob)
        o.storeBytes(of: activate(a0, alpha, floor), as: SIMD8<Float>.self)
        if blocks == 2 { o.storeBytes(of: activate(a1, alpha, floor), toByteOffset: 32, as: SIMD8<Float>.self) }
        if rows == 2 {
            let p = o + 4 * cout
            p.storeBytes(of: activate(b0, alpha, floor), as: SIMD8<Float>.self)
            if blocks == 2 { p.storeBytes(of: activate(b1, alpha, floor), toByteOffset: 32, as: SIMD8<Float>.self) }
        }
    }

    /// acc + x * w: fused on arm64 (one NEON fmla per 4 lanes; the Pi), separate elsewhere (x86-64's baseline has
    /// no FMA instruction, and the fused form would become a library call per lane).
    @inline(__always) private func multiplyAdd(_ acc: SIMD8<Float>, _ x: SIMD8<Float>, _ w: SIMD8<Float>) -> SIMD8<Float> {
        #if arch(arm64)
        acc.addingProduct(x, w)
        #else
        acc + x * w
        #endif
    }

    /// LeakyReLU with alpha < 1 is max(x, alpha x); then the graph's max(x, floor). As selects: the standard
    /// library's pointwiseMax was a quarter of the detector's time (a call per vector, not inlined).
    @inline(__always) private func activate(_ v: SIMD8<Float>, _ alpha: SIMD8<Float>, _ floor: SIMD8<Float>) -> SIMD8<Float> {
        let leaky = v * alpha
        let m = v.replacing(with: leaky, where: v .< leaky)
        return m.replacing(with: floor, where: m .< floor)
    }

    /// One output frame of a max-pooling: input frames g ..< g + pt, positions pf * p ..< pf * p + pf.
    @_optimize(speed)  // the detector's hot loop: -O here, in a binary built -Osize (deploy/build-release)
    private func pool(pt: Int, pf: Int, input: Level, from g: Int, into out: UnsafeMutablePointer<Float>, width: Int) {
        let c = input.channels
        for p in 0..<width {
            // four channels at a time; x >= m ? x : m is what max(m, x) does lane by lane (the same value, even
            // for -0 against 0), in the same order
            var ch = 0
            while ch + 4 <= c {
                var m = SIMD4<Float>(repeating: -.infinity)
                for i in 0..<pt {
                    var at = UnsafeRawPointer(input.frame(g + i) + input.pad * c + pf * p * c + ch)
                    for _ in 0..<pf {
                        let x = at.loadUnaligned(as: SIMD4<Float>.self)
                        m.replace(with: x, where: x .>= m)
                        at += 4 &* c
                    }
                }
                UnsafeMutableRawPointer(out + p * c + ch).storeBytes(of: m, as: SIMD4<Float>.self)
                ch += 4
            }
            for ch in ch..<c {
                var m = -Float.infinity
                for i in 0..<pt {
                    let frame = input.frame(g + i) + input.pad * c
                    for j in 0..<pf { m = max(m, frame[(pf * p + j) * c + ch]) }
                }
                out[p * c + ch] = m
            }
        }
    }
}

/// The classifier head over the last `headFrames` embeddings, oldest first (time-major, as the head contract in
/// tools/hotphrase/EMBEDDING.md says).
final class EmbeddingHead {
    private let model: EmbeddingModel
    private let ring: UnsafeMutablePointer<Float>
    private var ringNext = 0
    private var ringCount = 0
    private let x: UnsafeMutablePointer<Float>
    private let y: UnsafeMutablePointer<Float>

    init(model: EmbeddingModel) {
        self.model = model
        ring = .allocate(capacity: model.headFrames * model.dim)
        var widest = model.headFrames * model.dim
        for case .dense(_, _, _, let outputs) in model.head { widest = max(widest, outputs) }
        x = .allocate(capacity: widest)
        y = .allocate(capacity: widest)
    }

    deinit {
        ring.deallocate()
        x.deallocate()
        y.deallocate()
    }

    func reset() {
        ringNext = 0
        ringCount = 0
    }

    /// Adds an embedding; returns the head's output once it has `headFrames` of them.
    @_optimize(speed)  // the detector's hot loop: -O here, in a binary built -Osize (deploy/build-release)
    func push(embedding: UnsafeBufferPointer<Float>) -> Float? {
        let dim = model.dim, n = model.headFrames
        (ring + ringNext * dim).update(from: embedding.baseAddress!, count: dim)
        ringNext = (ringNext + 1) % n
        ringCount = min(ringCount + 1, n)
        guard ringCount == n else { return nil }
        // oldest first: the ring's next slot is the oldest
        for k in 0..<n { (x + k * dim).update(from: ring + ((ringNext + k) % n) * dim, count: dim) }
        var width = n * dim
        var out: Float = 0
        for layer in model.head {
            switch layer {
            case .dense(let weight, let bias, let inputs, let outputs):
                weight.withUnsafeBufferPointer { w in
                    bias.withUnsafeBufferPointer { b in
                        var o = 0
                        while o + 32 <= outputs {
                            Self.dense(8, x, UnsafeRawPointer(w.baseAddress! + o), UnsafeRawPointer(b.baseAddress! + o), y + o,
                                       inputs: inputs, stride: outputs)
                            o += 32
                        }
                        while o + 4 <= outputs {
                            Self.dense(1, x, UnsafeRawPointer(w.baseAddress! + o), UnsafeRawPointer(b.baseAddress! + o), y + o,
                                       inputs: inputs, stride: outputs)
                            o += 4
                        }
                        for o in o..<outputs {
                            var sum = b[o]
                            for i in 0..<inputs { sum += x[i] * w[i * outputs + o] }
                            y[o] = sum
                        }
                    }
                }
                x.update(from: y, count: outputs)
                width = outputs
            case .layerNorm(let gamma, let beta, let eps):
                var mean: Float = 0
                for i in 0..<width { mean += x[i] }
                mean /= Float(width)
                var variance: Float = 0
                for i in 0..<width { variance += (x[i] - mean) * (x[i] - mean) }
                variance /= Float(width)
                let scale = 1 / (variance + eps).squareRoot()
                for i in 0..<width { x[i] = (x[i] - mean) * scale * gamma[i] + beta[i] }
            case .relu:
                for i in 0..<width { x[i] = max(x[i], 0) }
            case .sigmoid:
                for i in 0..<width { x[i] = 1 / (1 + exp(-x[i])) }
            }
            out = x[0]
        }
        return out
    }

    /// 4 quads outputs (quads 8 or 1) of a dense layer whose weight rows are `stride` apart, kept in registers over
    /// all the inputs: the bias, then + x[i] w[i] for i in order, each product and each sum rounded on its own as
    /// in the scalar loop (the same bits on every architecture), but y written once instead of loaded and stored
    /// again for every input.
    @inline(__always) private static func dense(_ quads: Int, _ x: UnsafeMutablePointer<Float>, _ w: UnsafeRawPointer,
                                                _ b: UnsafeRawPointer, _ y: UnsafeMutablePointer<Float>, inputs: Int, stride: Int) {
        var a0 = quad(b, 0, quads), a1 = quad(b, 1, quads), a2 = quad(b, 2, quads), a3 = quad(b, 3, quads)
        var a4 = quad(b, 4, quads), a5 = quad(b, 5, quads), a6 = quad(b, 6, quads), a7 = quad(b, 7, quads)
        var row = w
        for i in 0..<inputs {
            let v = SIMD4<Float>(repeating: x[i])
            a0 += v * quad(row, 0, quads)
            if quads > 1 {
                a1 += v * quad(row, 1, quads); a2 += v * quad(row, 2, quads); a3 += v * quad(row, 3, quads)
                a4 += v * quad(row, 4, quads); a5 += v * quad(row, 5, quads); a6 += v * quad(row, 6, quads)
                a7 += v * quad(row, 7, quads)
            }
            row += 4 * stride
        }
        let o = UnsafeMutableRawPointer(y)
        o.storeBytes(of: a0, as: SIMD4<Float>.self)
        if quads > 1 {
            o.storeBytes(of: a1, toByteOffset: 16, as: SIMD4<Float>.self)
            o.storeBytes(of: a2, toByteOffset: 32, as: SIMD4<Float>.self)
            o.storeBytes(of: a3, toByteOffset: 48, as: SIMD4<Float>.self)
            o.storeBytes(of: a4, toByteOffset: 64, as: SIMD4<Float>.self)
            o.storeBytes(of: a5, toByteOffset: 80, as: SIMD4<Float>.self)
            o.storeBytes(of: a6, toByteOffset: 96, as: SIMD4<Float>.self)
            o.storeBytes(of: a7, toByteOffset: 112, as: SIMD4<Float>.self)
        }
    }

    /// Four floats k x 16 bytes from p, or zeros past `quads`.
    @inline(__always) private static func quad(_ p: UnsafeRawPointer, _ k: Int, _ quads: Int) -> SIMD4<Float> {
        k < quads ? p.loadUnaligned(fromByteOffset: 16 * k, as: SIMD4<Float>.self) : SIMD4()
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
