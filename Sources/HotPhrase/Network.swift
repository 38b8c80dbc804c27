/// The streaming form of the network in tools/hotphrase/hotphrase/model.py. Because every convolution is causal,
/// feeding steps one at a time and keeping each block's recent inputs in a ring gives exactly the numbers the
/// whole-sequence reference computes. All state lives in buffers allocated at init.
final class StreamingNetwork {
    private let model: ConvolutionalModel
    private let c: Int
    private let inputSize: Int
    /// Ring of the last `span + 1` inputs of each block, `c` floats per entry.
    private var rings: [UnsafeMutablePointer<Float>]
    private let ringLength: [Int]
    private var ringNext: [Int]
    private var ringCount: [Int]
    private var x: UnsafeMutablePointer<Float>
    private var dw: UnsafeMutablePointer<Float>
    private var y: UnsafeMutablePointer<Float>
    private var stepInput: UnsafeMutablePointer<Float>
    private var stacked = 0

    init(model: ConvolutionalModel) {
        self.model = model
        c = model.channels
        inputSize = model.stack * model.mels
        ringLength = model.dilations.map { (model.kernel - 1) * $0 + 1 }
        rings = ringLength.map { UnsafeMutablePointer<Float>.allocate(capacity: $0 * model.channels) }
        ringNext = [Int](repeating: 0, count: model.dilations.count)
        ringCount = [Int](repeating: 0, count: model.dilations.count)
        x = .allocate(capacity: model.channels)
        dw = .allocate(capacity: model.channels)
        y = .allocate(capacity: model.channels)
        stepInput = .allocate(capacity: model.stack * model.mels)
    }

    deinit {
        rings.forEach { $0.deallocate() }
        x.deallocate()
        dw.deallocate()
        y.deallocate()
        stepInput.deallocate()
    }

    func reset() {
        for i in ringCount.indices { ringCount[i] = 0; ringNext[i] = 0 }
        stacked = 0
    }

    /// One 10 ms feature frame. Returns the network's probability when the frame completes a step and the
    /// network's history is full, else nil.
    func push(frame: UnsafeBufferPointer<Float>) -> Float? {
        let mels = model.mels
        model.normMean.withUnsafeBufferPointer { mean in
            model.normInvStd.withUnsafeBufferPointer { inv in
                let base = stacked * mels
                for m in 0..<mels { stepInput[base + m] = (frame[m] - mean[m]) * inv[m] }
            }
        }
        stacked += 1
        guard stacked == model.stack else { return nil }
        stacked = 0
        return step()
    }

    private func step() -> Float? {
        // pointwise input layer + ReLU
        model.inWeight.withUnsafeBufferPointer { w in
            for o in 0..<c {
                var s = model.inBias[o]
                let row = w.baseAddress! + o * inputSize
                for j in 0..<inputSize { s += row[j] * stepInput[j] }
                x[o] = max(s, 0)
            }
        }
        let k = model.kernel
        for b in 0..<rings.count {
            // push x into block b's ring
            let ring = rings[b], length = ringLength[b]
            (ring + ringNext[b] * c).update(from: x, count: c)
            let newest = ringNext[b]
            ringNext[b] = (ringNext[b] + 1) % length
            ringCount[b] = min(ringCount[b] + 1, length)
            guard ringCount[b] == length else { return nil }
            let d = model.dilations[b]
            // depthwise: tap j sees the input (k-1-j)*d steps ago
            model.dwWeight[b].withUnsafeBufferPointer { w in
                model.dwBias[b].withUnsafeBufferPointer { bias in
                    for ch in 0..<c { dw[ch] = bias[ch] }
                    for j in 0..<k {
                        let age = (k - 1 - j) * d
                        let entry = ring + ((newest - age + length) % length) * c
                        for ch in 0..<c { dw[ch] += w[ch * k + j] * entry[ch] }
                    }
                    for ch in 0..<c { dw[ch] = max(dw[ch], 0) }
                }
            }
            // pointwise + ReLU, residual onto the newest input
            model.pwWeight[b].withUnsafeBufferPointer { w in
                model.pwBias[b].withUnsafeBufferPointer { bias in
                    for o in 0..<c {
                        var s = bias[o]
                        let row = w.baseAddress! + o * c
                        for j in 0..<c { s += row[j] * dw[j] }
                        y[o] = max(s, 0)
                    }
                }
            }
            let entry = ring + newest * c
            for ch in 0..<c { x[ch] = entry[ch] + y[ch] }
        }
        var z = model.outBias
        model.outWeight.withUnsafeBufferPointer { w in
            for ch in 0..<c { z += w[ch] * x[ch] }
        }
        return 1 / (1 + exp(-z))
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
