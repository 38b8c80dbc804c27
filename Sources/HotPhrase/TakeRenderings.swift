import AudioCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An enrollment take rendered as the personal head's positives are (docs/household.md, "The personal head"):
/// through a procedural room and in training noise, as the measurement renders them
/// (tools/hotphrase/hotphrase/household_eval.py: `render_take`, `enrol_room_ir`; augment.py: the noise families,
/// `active_power`, `mix`). Nothing here is the evaluation's: its rooms are image-source impulse responses and its
/// noises fan, street, plucked music and other voices.
public enum TakeRenderings {
    static let sampleRate = SpeakerAudio.sampleRate

    /// The training noise families the renderings draw on: pink noise, mains hum, sustained chords, and babble
    /// (several voices at once; the caller hands over the voices, e.g. espeak-ng's).
    public enum Noise: String, CaseIterable, Sendable {
        case pink, hum, chords, babble
    }

    /// One rendering: through a room (or not), then in noise at `snr` dB under the take's active power (or none).
    /// `variant` tells apart renderings of the same kind (another room, another noise).
    public struct Rendering: Equatable, Sendable {
        public let room: Bool
        public let snr: Double?
        public let variant: Int

        public init(room: Bool, snr: Double?, variant: Int = 0) {
            self.room = room
            self.snr = snr
            self.variant = variant
        }
    }

    /// The measurement's 13 renderings a take, so that the head is trained as it was measured (BENCHMARKS.md, "gate,
    /// learning and multi-condition enrollment together; a personal head"; household_head's `--renderings`,
    /// "noise0x2+noise5x2+noise10x2+noise15x2+room+room10x2+room5x2").
    public static let measured: [Rendering] = {
        func twice(room: Bool, snr: Double) -> [Rendering] { (0..<2).map { Rendering(room: room, snr: snr, variant: $0) } }
        let noisy = [0.0, 5, 10, 15].flatMap { twice(room: false, snr: $0) }
        let roomNoisy = [10.0, 5].flatMap { twice(room: true, snr: $0) }
        return noisy + [Rendering(room: true, snr: nil)] + roomNoisy
    }()

    /// The take (16 kHz) with a second of silence either side, as it is enrolled, rendered, and the noise family
    /// drawn (nil without noise). `seed` draws the room and the noise: give each take and rendering its own (the
    /// same take, rendering and seed give the same samples). `babble` is speech to make babble from, each
    /// utterance 16 kHz in [-1, 1]; without any, babble is not drawn.
    public static func render(_ take: [Int16], _ rendering: Rendering, seed: UInt64,
                              babble: [[Float]] = []) -> (samples: [Int16], noise: Noise?) {
        var random = SplitMix64(seed: seed)
        var drawn: Noise?
        let pad = [Float](repeating: 0, count: sampleRate)
        var x = pad + take.map { Float($0) / 32768 } + pad
        if rendering.room {
            let dry = activePower(x)
            let reverberant = convolve(x, roomImpulse(&random))
            x = scaled(reverberant, by: (dry / activePower(reverberant)).squareRoot())
        }
        if let snr = rendering.snr {
            let families = Noise.allCases.filter { $0 != .babble || !babble.isEmpty }
            let family = families[Int(random.next() % UInt64(families.count))]
            x = mix(x, noise(family, count: x.count, &random, babble: babble), snr: snr)
            drawn = family
        }
        return (x.map { Int16(max(-32768, min(32767, ($0 * 32768).rounded()))) }, drawn)
    }

    /// A procedural room: 1 at the direct path, then a noise tail falling 60 dB by its RT60 (0.3-0.8 s), starting
    /// 2-10 ms after it, scaled to a direct-to-reverberant ratio of -3 to 6 dB (as low as the evaluation's rooms at
    /// 2-3 m reach).
    static func roomImpulse(_ random: inout SplitMix64) -> [Float] {
        let n = Int(random.uniform(0.3, 0.8) * Double(sampleRate))
        var tail = (0..<n).map { random.gaussian() * exp(-6.9 * Double($0) / Double(n)) }
        for i in 0..<Int(random.uniform(0.002, 0.01) * Double(sampleRate)) { tail[i] = 0 }
        let energy = tail.reduce(0) { $0 + $1 * $1 }.squareRoot()
        let scale = pow(10, -random.uniform(-3, 6) / 20) / (energy + 1e-12)
        var h = tail.map { Float($0 * scale) }
        h[0] = 1
        return h
    }

    /// x * h, its first x.count samples (aligned on the direct path, h[0]): each input sample adds the response
    /// it scales, eight lanes at a time (the renderings' largest cost; the padding's silence is skipped).
    static func convolve(_ x: [Float], _ h: [Float]) -> [Float] {
        var y = [Float](repeating: 0, count: x.count)
        y.withUnsafeMutableBufferPointer { out in
            h.withUnsafeBufferPointer { ir in
                let o = UnsafeMutableRawPointer(out.baseAddress!), r = UnsafeRawPointer(ir.baseAddress!)
                for (i, v) in x.enumerated() where v != 0 {
                    let m = min(ir.count, x.count - i)
                    let scale = SIMD8<Float>(repeating: v)
                    var k = 0
                    while k + 8 <= m {
                        let at = 4 * (i + k)
                        let sum = o.loadUnaligned(fromByteOffset: at, as: SIMD8<Float>.self)
                            + scale * r.loadUnaligned(fromByteOffset: 4 * k, as: SIMD8<Float>.self)
                        o.storeBytes(of: sum, toByteOffset: at, as: SIMD8<Float>.self)
                        k += 8
                    }
                    while k < m {
                        out[i + k] += v * ir[k]
                        k += 1
                    }
                }
            }
        }
        return y
    }

    /// The mean power of the 10 ms blocks above -30 dB of the loudest (speech, not the silence around it).
    static func activePower(_ x: [Float]) -> Double {
        let block = sampleRate / 100
        let n = x.count / block
        guard n > 0 else { return x.reduce(0) { $0 + Double($1) * Double($1) } / Double(max(x.count, 1)) + 1e-12 }
        let power = (0..<n).map { b in x[(b * block)..<((b + 1) * block)].reduce(0) { $0 + Double($1) * Double($1) } / Double(block) }
        let loudest = power.max()!
        let active = power.filter { $0 > loudest * 1e-3 }
        guard !active.isEmpty else { return 1e-12 }  // silence: no NaN into a gain
        return active.reduce(0, +) / Double(active.count) + 1e-12
    }

    /// speech + noise, the noise scaled to `snr` dB under the speech's active power.
    static func mix(_ speech: [Float], _ noise: [Float], snr: Double) -> [Float] {
        let noisePower = noise.reduce(0) { $0 + Double($1) * Double($1) } / Double(max(noise.count, 1)) + 1e-12
        let gain = Float((activePower(speech) / noisePower / pow(10, snr / 10)).squareRoot())
        return zip(speech, noise).map { $0 + $1 * gain }
    }

    static func scaled(_ x: [Float], by g: Double) -> [Float] { x.map { $0 * Float(g) } }

    /// `count` samples of a noise family, at an RMS of 0.1.
    static func noise(_ family: Noise, count: Int, _ random: inout SplitMix64, babble: [[Float]]) -> [Float] {
        var x = [Double](repeating: 0, count: count)
        let rate = Double(sampleRate)
        switch family {
        case .pink:
            x = pink(count, &random)
        case .hum:  // mains at 50 or 60 Hz and six harmonics, a little pink noise under it
            let f = random.next() % 2 == 0 ? 50.0 : 60.0
            let parts = (1...7).map { k in (random.uniform(0.2, 1) / Double(k), random.uniform(0, 6)) }
            let floor = normalised(pink(count, &random))
            for i in 0..<count {
                let t = Double(i) / rate
                x[i] = parts.enumerated().reduce(0.05 * Double(floor[i])) { s, p in
                    s + p.element.0 * sin(2 * .pi * f * Double(p.offset + 1) * t + p.element.1)
                }
            }
        case .chords:  // sustained chords of sines with two overtones, 0.4-2 s each, each note fading
            let chords = [[0, 4, 7], [0, 3, 7], [0, 4, 7, 11], [0, 5, 9]]
            var at = 0
            while at < count {
                let length = min(Int(random.uniform(0.4, 2) * rate), count - at)
                let root = 45 + Int(random.next() % 25)
                let fade = random.uniform(0.3, 2)
                let chord = chords[Int(random.next() % UInt64(chords.count))]
                for i in 0..<length {
                    let t = Double(i) / rate
                    let envelope = min(1, t * 20) * exp(-t * fade)
                    for interval in chord {
                        let f = 440 * pow(2, Double(root + interval - 69) / 12)
                        // A plain loop: Swift 6.2's type checker times out on the same sum written as a reduce.
                        var tones = 0.0
                        for overtone in [1.0, 2, 3] { tones += sin(2 * .pi * f * overtone * t) / pow(overtone, 1.5) }
                        x[at + i] += envelope * tones
                    }
                }
                at += length
            }
        case .babble:  // 3 to 6 talkers, each utterance at unit RMS, a pause of 0.05-0.5 s between
            guard !babble.isEmpty else { break }
            for _ in 0..<(3 + Int(random.next() % 4)) {
                var at = Int(random.next() % UInt64(sampleRate))
                while at < count {
                    let u = babble[Int(random.next() % UInt64(babble.count))]
                    let rms = (u.reduce(0) { $0 + Double($1) * Double($1) } / Double(max(u.count, 1))).squareRoot() + 1e-9
                    for (k, v) in u.prefix(count - at).enumerated() { x[at + k] += Double(v) / rms }
                    at += u.count + Int(random.uniform(0.05, 0.5) * rate)
                }
            }
        }
        return normalised(x)
    }

    /// White noise through Paul Kellet's economy pink filter (the measurement's).
    static func pink(_ count: Int, _ random: inout SplitMix64) -> [Double] {
        let b = [0.049922035, -0.095993537, 0.050612699, -0.004408786]
        let a = [1, -2.494956002, 2.017265875, -0.522189400]
        var (w1, w2, w3, y1, y2, y3) = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        var out = [Double](repeating: 0, count: count)
        for i in 0..<count {
            let w0 = random.gaussian()
            let v = b[0] * w0 + b[1] * w1 + b[2] * w2 + b[3] * w3 - a[1] * y1 - a[2] * y2 - a[3] * y3
            (w3, w2, w1) = (w2, w1, w0)
            (y3, y2, y1) = (y2, y1, v)
            out[i] = v
        }
        return out
    }

    /// x at an RMS of 0.1.
    static func normalised(_ x: [Double]) -> [Float] {
        let rms = (x.reduce(0) { $0 + $1 * $1 } / Double(max(x.count, 1))).squareRoot()
        return x.map { Float($0 / (rms + 1e-9) * 0.1) }
    }
}

/// A seeded generator (the standard library has none): SplitMix64, so that a take's renderings are the same each
/// time it is rendered.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [lo, hi).
    mutating func uniform(_ lo: Double, _ hi: Double) -> Double {
        lo + (hi - lo) * Double(next() >> 11) / Double(1 << 53)
    }

    /// Standard normal (Box-Muller).
    mutating func gaussian() -> Double {
        let u = max(uniform(0, 1), 1e-300), v = uniform(0, 1)
        return (-2 * log(u)).squareRoot() * cos(2 * .pi * v)
    }
}
