import FoundationEssentials

/// Format 2 (tools/hotphrase/hotphrase/export_embedding.py): Google's speech_embedding front end as openWakeWord runs it
/// (a mel spectrogram, then a convolutional network from 76 mel frames to one 96-number embedding every 8
/// frames) and a classifier head over the last `head.frames` embeddings.
struct EmbeddingModel: Sendable {
    struct Mel: Sendable {
        let fftSize: Int
        let hop: Int
        let mels: Int
        /// Frames per clamp group: the top-dB clamp is against the loudest value of each group (one call of the
        /// TFLite graph, 1760 samples, is 8 frames).
        let group: Int
        let powerFloor: Float
        let topDB: Float
        /// openWakeWord's `mel / 10 + 2`.
        let scale: Float
        let offset: Float
        /// fftSize samples (a 400-sample Hann window centred in 512).
        let window: [Float]
        /// Sparse triangles: mel m weighs bins first[m] ..< first[m] + weights[m].count.
        let first: [Int]
        let weights: [[Float]]
    }

    /// A convolution over (time, frequency): VALID in time (kt frames), zero-padded by padF in frequency, then
    /// max(LeakyReLU(alpha), floor) when `alpha` is set.
    struct Conv: Sendable {
        let kt: Int
        let kf: Int
        let padF: Int
        let cin: Int
        let cout: Int
        let alpha: Float?
        let floor: Float
        /// [kt][kf * cin][cout]: for one time tap, the kf * cin inputs the output position sees are contiguous in
        /// a padded frame, and each input's cout weights are contiguous (the SIMD accumulation runs over outputs).
        let weight: [Float]
        let bias: [Float]
    }

    enum Layer: Sendable {
        case conv(Conv)
        /// Max over pt frames x pf bins, stride = size.
        case pool(pt: Int, pf: Int)
    }

    enum HeadLayer: Sendable {
        /// weight [in][out] (as the head contract stores it), bias [out].
        case dense(weight: [Float], bias: [Float], inputs: Int, outputs: Int)
        case layerNorm(gamma: [Float], beta: [Float], eps: Float)
        case relu
        case sigmoid
    }

    let mel: Mel
    /// Mel frames per embedding window (76) and frames between windows (8).
    let frames: Int
    let step: Int
    let dim: Int
    let layers: [Layer]
    /// Embeddings per head input.
    let headFrames: Int
    let head: [HeadLayer]

    /// Detector steps (mel groups) without a score: the first window needs frames/step + 1 groups, the head
    /// headFrames embeddings.
    var warmUpSteps: Int { (frames + mel.group - 1) / mel.group - 1 + headFrames - 1 }

    /// Multiply-adds per detector step (80 ms): the embedding network over a whole 76-frame window (what
    /// openWakeWord's pipeline computes every step), the same network streaming (only the frames new at each
    /// depth), and the head.
    var multiplyAdds: (window: Int, streaming: Int, head: Int) {
        var t = frames, f = mel.mels, c = 1, new = step
        var window = 0, streaming = 0
        for layer in layers {
            switch layer {
            case .conv(let l):
                t -= l.kt - 1
                f += 2 * l.padF - l.kf + 1
                let perFrame = f * l.cout * l.kt * l.kf * c
                window += t * perFrame
                streaming += new * perFrame
                c = l.cout
            case .pool(let pt, let pf):
                t /= pt
                f /= pf
                new /= pt
            }
        }
        var head = 0
        for case .dense(_, _, let inputs, let outputs) in self.head { head += inputs * outputs }
        return (window, streaming, head)
    }

    /// TFLite's [out][kt][kf * in] to [kt][kf * in][out] (Conv.weight).
    private static func reorder(_ w: [Float], cout: Int, kt: Int, span: Int) -> [Float] {
        var reordered = [Float](repeating: 0, count: w.count)
        for o in 0..<cout {
            for i in 0..<kt {
                for q in 0..<span { reordered[(i * span + q) * cout + o] = w[(o * kt + i) * span + q] }
            }
        }
        return reordered
    }

    private struct Header: Decodable {
        struct MelHeader: Decodable {
            let fft: Int
            let hop: Int
            let mels: Int
            let group: Int
            let power_floor: Double
            let top_db: Double
            let scale: Double
            let offset: Double
        }
        struct LayerHeader: Decodable {
            let type: String
            let kt: Int?
            let kf: Int?
            let pad_f: Int?
            let `in`: Int?
            let out: Int?
            let alpha: Double?
            let floor: Double?
            let weight: String?
            let bias: String?
            let pt: Int?
            let pf: Int?
        }
        struct EmbeddingHeader: Decodable {
            let frames: Int
            let step: Int
            let dim: Int
            let layers: [LayerHeader]
        }
        struct HeadLayerHeader: Decodable {
            let type: String
            let w: String?
            let b: String?
            let gamma: String?
            let beta: String?
            let eps: Double?
        }
        struct HeadHeader: Decodable {
            let frames: Int
            let layers: [HeadLayerHeader]
        }
        let mel: MelHeader
        let embedding: EmbeddingHeader
        let head: HeadHeader
        let tensors: [TensorFile.Entry]
    }

    init(header bytes: Data, file: TensorFile, payload: Int) throws {
        let header = try JSONDecoder().decode(Header.self, from: bytes)
        var table: [String: TensorFile.Entry] = [:]
        for t in header.tensors { table[t.name] = t }
        func tensor(_ name: String?, _ shape: [Int]) throws -> [Float] {
            guard let name else { throw file.fail("a layer names no tensor") }
            return try file.tensor(table, name, shape, payload: payload)
        }
        let m = header.mel
        guard m.fft >= 4, m.fft & (m.fft - 1) == 0, m.hop > 0, m.mels > 0, m.group > 0, m.power_floor > 0, m.top_db > 0
        else { throw file.fail("its mel numbers are out of range") }
        let bins = m.fft / 2 + 1
        let dense = try tensor("mel.filterbank", [bins, m.mels])
        var first: [Int] = [], weights: [[Float]] = []
        for j in 0..<m.mels {
            let column = (0..<bins).map { dense[$0 * m.mels + j] }
            let lo = column.firstIndex { $0 != 0 } ?? 0
            let hi = column.lastIndex { $0 != 0 } ?? -1
            first.append(lo)
            weights.append(hi >= lo ? Array(column[lo...hi]) : [])
        }
        mel = Mel(fftSize: m.fft, hop: m.hop, mels: m.mels, group: m.group, powerFloor: Float(m.power_floor),
                  topDB: Float(m.top_db), scale: Float(m.scale), offset: Float(m.offset),
                  window: try tensor("mel.window", [m.fft]), first: first, weights: weights)

        let e = header.embedding
        // One embedding per mel group: the detector scores once per group.
        guard e.frames > 0, e.step == m.group, e.dim > 0 else { throw file.fail("its embedding numbers are out of range") }
        // Shapes through one window: time must shrink to exactly one frame of dim values, and every stride must
        // divide `step` so that consecutive windows share their intermediate frames (what makes streaming exact).
        var t = e.frames, f = m.mels, c = 1, stride = 1
        var layers: [Layer] = []
        for l in e.layers {
            switch l.type {
            case "conv":
                guard let kt = l.kt, let kf = l.kf, let padF = l.pad_f, let cin = l.in, let cout = l.out,
                      kt > 0, kf > 0, padF >= 0, cin == c, cout > 0, cout % 8 == 0
                else { throw file.fail("a convolution's numbers are out of range") }
                let reordered = Self.reorder(try tensor(l.weight, [cout, kt, kf, cin]), cout: cout, kt: kt, span: kf * cin)
                layers.append(.conv(Conv(kt: kt, kf: kf, padF: padF, cin: cin, cout: cout, alpha: l.alpha.map(Float.init),
                                         floor: Float(l.floor ?? -Double.infinity), weight: reordered,
                                         bias: try tensor(l.bias, [cout]))))
                t -= kt - 1
                f += 2 * padF - kf + 1
                c = cout
            case "pool":
                guard let pt = l.pt, let pf = l.pf, pt > 0, pf > 0 else { throw file.fail("a pooling's numbers are out of range") }
                layers.append(.pool(pt: pt, pf: pf))
                t /= pt
                f /= pf
                stride *= pt
            default:
                throw file.fail("embedding layer type \(l.type) is not known")
            }
            guard t > 0, f > 0 else { throw file.fail("the embedding's layers shrink a window to nothing") }
        }
        guard t == 1, f * c == e.dim, e.step % stride == 0 else {
            throw file.fail("the embedding's layers do not make one \(e.dim)-number vector per window every \(e.step) frames")
        }
        frames = e.frames
        step = e.step
        dim = e.dim
        self.layers = layers

        let h = header.head
        guard h.frames > 0 else { throw file.fail("its head needs at least one embedding") }
        var width = h.frames * e.dim
        var head: [HeadLayer] = []
        for l in h.layers {
            switch l.type {
            case "dense":
                guard let wName = l.w, let entry = table[wName], entry.shape.count == 2, entry.shape[0] == width else {
                    throw file.fail("a head layer's weight does not take \(width) inputs")
                }
                let outputs = entry.shape[1]
                head.append(.dense(weight: try tensor(wName, [width, outputs]), bias: try tensor(l.b, [outputs]),
                                   inputs: width, outputs: outputs))
                width = outputs
            case "layernorm":
                head.append(.layerNorm(gamma: try tensor(l.gamma, [width]), beta: try tensor(l.beta, [width]),
                                       eps: Float(l.eps ?? 1e-5)))
            case "relu": head.append(.relu)
            case "sigmoid": head.append(.sigmoid)
            default: throw file.fail("head layer type \(l.type) is not known")
            }
        }
        guard width == 1, case .sigmoid = head.last else { throw file.fail("its head does not end in one sigmoid output") }
        headFrames = h.frames
        self.head = head
    }
}
