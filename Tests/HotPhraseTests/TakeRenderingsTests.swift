#if canImport(Glibc)
import Glibc
#endif
@testable import HotPhrase
import Testing
import TestSupport

/// The takes' renderings for the personal head (Sources/HotPhrase/TakeRenderings.swift): what the measurement's
/// recipe promises of each, checked on a made-up take.
@Suite(.ownThread) struct TakeRenderingsTests {
    /// 0.8 s of a vowel-like sound (a 150 Hz tone and harmonics, rising and falling), 16 kHz.
    static let take: [Int16] = (0..<12_800).map { i in
        let t = Double(i) / 16_000
        let envelope = sin(.pi * t / 0.8)
        return Int16(8000 * envelope * (sin(2 * .pi * 150 * t) + 0.5 * sin(2 * .pi * 300 * t) + 0.3 * sin(2 * .pi * 450 * t)) / 1.8)
    }

    static func floats(_ x: [Int16]) -> [Float] { x.map { Float($0) / 32768 } }

    static func padded(_ x: [Int16]) -> [Float] {
        let pad = [Float](repeating: 0, count: 16_000)
        return pad + floats(x) + pad
    }

    @Test func theSameSeedGivesTheSameRenderingAndAnotherAnother() {
        let r = TakeRenderings.Rendering(room: true, snr: 5)
        let a = TakeRenderings.render(Self.take, r, seed: 7), b = TakeRenderings.render(Self.take, r, seed: 7)
        let c = TakeRenderings.render(Self.take, r, seed: 8)
        #expect(a.samples == b.samples && a.noise == b.noise)
        #expect(a.samples != c.samples)
        #expect(a.samples.count == Self.take.count + 32_000)
    }

    @Test func noiseIsMixedAtItsSNRUnderTheTakesActivePower() {
        for snr in [0.0, 5, 10, 15] {
            for seed in UInt64(1)...6 {
                let (samples, family) = TakeRenderings.render(Self.take, .init(room: false, snr: snr), seed: seed)
                let clean = Self.padded(Self.take), noisy = Self.floats(samples)
                let noise = zip(noisy, clean).map { $0 - $1 }
                let measured = 10 * log10(TakeRenderings.activePower(clean)
                    / (noise.reduce(0) { $0 + Double($1) * Double($1) } / Double(noise.count)))
                #expect(abs(measured - snr) < 0.1, "\(family.map(\.rawValue) ?? "none") at \(snr) dB: \(measured)")
                #expect(family != nil && family != .babble, "no voices were given, so no babble")
            }
        }
    }

    @Test func babbleIsDrawnOnlyWhenVoicesAreGiven() {
        let voice: [Float] = (0..<8000).map { Float(sin(Double($0) * 0.07) * 0.3) }
        let drawn = Set((UInt64(0)..<40).compactMap { TakeRenderings.render(Self.take, .init(room: false, snr: 10), seed: $0, babble: [voice]).noise })
        #expect(drawn == Set(TakeRenderings.Noise.allCases))
    }

    @Test func aRoomKeepsTheDryTakesActivePowerAndReverberates() {
        let (samples, family) = TakeRenderings.render(Self.take, .init(room: true, snr: nil), seed: 3)
        #expect(family == nil)
        let dry = Self.padded(Self.take), wet = Self.floats(samples)
        let ratio = TakeRenderings.activePower(wet) / TakeRenderings.activePower(dry)
        #expect(abs(ratio - 1) < 0.01)
        // the tail: after the take ends the dry padding is silent, the room's is not
        let end = 16_000 + Self.take.count
        let tail = wet[end..<(end + 1600)].reduce(0) { $0 + Double($1) * Double($1) }
        #expect(dry[end..<(end + 1600)].allSatisfy { $0 == 0 })
        #expect(tail > 1e-4)
    }

    @Test func silenceRendersAsFiniteNumbers() {
        let silent = [Int16](repeating: 0, count: 4000)
        #expect(TakeRenderings.activePower(Self.floats(silent)) == 1e-12)
        for rendering in TakeRenderings.measured {
            let out = TakeRenderings.render(silent, rendering, seed: 2).samples
            #expect(out.count == silent.count + 32_000)
            #expect(out.allSatisfy { abs(Int($0)) < 32_767 }, "\(rendering): silence stays quiet, no NaN clamped to full scale")
        }
    }

    @Test func theConvolutionIsTheSumItNames() {
        var random = SplitMix64(seed: 5)
        let x = (0..<300).map { $0 % 7 == 0 ? 0 : Float(random.gaussian()) }  // some silence, skipped
        let h = (0..<37).map { _ in Float(random.gaussian()) }
        let y = TakeRenderings.convolve(x, h)
        #expect(y.count == x.count)
        for n in 0..<x.count {
            let expected = (0...min(n, h.count - 1)).reduce(0.0) { $0 + Double(x[n - $1]) * Double(h[$1]) }
            #expect(abs(Double(y[n]) - expected) < 1e-4, "sample \(n)")
        }
    }

    @Test func theRoomsImpulseIsTheRecipes() {
        for seed in UInt64(0)..<20 {
            var random = SplitMix64(seed: seed)
            let h = TakeRenderings.roomImpulse(&random)
            #expect(h[0] == 1)
            #expect((4800...12_800).contains(h.count), "RT60 0.3-0.8 s: \(h.count) samples")
            #expect(h[1..<32].allSatisfy { $0 == 0 }, "the tail starts at least 2 ms after the direct path")
            let reverberant = h.dropFirst().reduce(0) { $0 + Double($1) * Double($1) }
            let drr = 10 * log10(1 / reverberant)
            #expect(drr >= -3.01 && drr <= 6.01, "direct-to-reverberant \(drr) dB")
            // 60 dB down by the end: the last tenth holds a tiny part of the first tenth's energy
            let tenth = h.count / 10
            let first = h[1..<tenth].reduce(0) { $0 + Double($1) * Double($1) }
            let last = h[(h.count - tenth)...].reduce(0) { $0 + Double($1) * Double($1) }
            #expect(last < first * 1e-4)
        }
    }

    @Test func theNoisesAreTheirFamilies() {
        var random = SplitMix64(seed: 11)
        let n = 32_000
        func rms(_ x: [Float]) -> Double { (x.reduce(0) { $0 + Double($1) * Double($1) } / Double(x.count)).squareRoot() }
        /// the power of the first difference against the signal's: 2 for white noise, small for low sounds
        func roughness(_ x: [Float]) -> Double {
            zip(x.dropFirst(), x).reduce(0) { $0 + Double($1.0 - $1.1) * Double($1.0 - $1.1) } / (rms(x) * rms(x) * Double(x.count))
        }
        for family in TakeRenderings.Noise.allCases where family != .babble {
            let x = TakeRenderings.noise(family, count: n, &random, babble: [])
            #expect(x.count == n)
            #expect(abs(rms(x) - 0.1) < 1e-3, "\(family) at an RMS of 0.1")
            #expect(roughness(x) < 0.6, "\(family) is mostly low frequencies (white noise: 2): \(roughness(x))")
        }
        // pink noise: 3 dB an octave down, so far smoother than white, and rougher than hum
        let pink = TakeRenderings.noise(.pink, count: n, &random, babble: [])
        let hum = TakeRenderings.noise(.hum, count: n, &random, babble: [])
        #expect(roughness(pink) > roughness(hum))
    }
}
