import Foundation
import BoardCore
import Synchronization
import Testing
@testable import Board

/// The ring's colours as the tests expect them (written out here, not read from the code).
private enum Look {
    static let dark = PixelColor.black
    static let readyGlow = PixelColor(red: 10, green: 10, blue: 10)
    static let listening = PixelColor(red: 90, green: 150, blue: 255)
    static let thinking = PixelColor(red: 0, green: 220, blue: 255)
    static let thinkingTail = PixelColor(red: 0, green: 44, blue: 52)
    static let white = PixelColor(red: 255, green: 255, blue: 255)
    static let red = PixelColor(red: 255, green: 0, blue: 0)
    static let amber = PixelColor(red: 255, green: 110, blue: 0)
    static let mutedRed = PixelColor(red: 48, green: 0, blue: 0)
    static let timer = PixelColor(red: 0, green: 200, blue: 60)
    static let setupA = PixelColor(red: 140, green: 0, blue: 255)
    static let setupB = PixelColor(red: 160, green: 160, blue: 160)
}

private func ring(_ state: LEDState, _ n: Int, timer: RingTimer? = nil) -> RingAnimation {
    RingAnimation(state: state, pixelCount: n, timer: timer)
}

private extension RingAnimation {
    func at(_ ms: Int) -> [PixelColor] { colors(at: .milliseconds(ms)) }
    func next(_ ms: Int) -> Duration? { nextChange(after: .milliseconds(ms)) }
}

/// `n` pixels, `lit` of them (from the first) in `color`, the rest dark.
private func arc(_ lit: Int, of n: Int, _ color: PixelColor) -> [PixelColor] {
    (0..<n).map { $0 < lit ? color : .black }
}

/// Keeps every byte written.
final class RecordingBus: PixelBus {
    let writes = Mutex<[[UInt8]]>([])
    func write(_ bytes: [UInt8]) throws(BoardError) { writes.withLock { $0.append(bytes) } }
    var all: [[UInt8]] { writes.withLock { $0 } }
}

struct FailingBus: PixelBus {
    func write(_ bytes: [UInt8]) throws(BoardError) { throw BoardError("bus gone") }
}

@Suite struct APA102FrameTests {
    @Test func threePixelFrameByteForByte() {
        let pixels = [PixelColor(red: 255, green: 0, blue: 0), PixelColor(red: 0, green: 255, blue: 0), PixelColor(red: 1, green: 2, blue: 3)]
        // Typed apart from the comparison: a long literal inside #expect is slow to type-check.
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x00,
            0xFF, 0x00, 0x00, 0xFF,   // brightness, blue, green, red
            0xFF, 0x00, 0xFF, 0x00,
            0xFF, 0x03, 0x02, 0x01,
            0x00, 0x00, 0x00, 0x00,
        ]
        #expect(APA102.frame(pixels, brightness: 31) == expected)
    }

    @Test func twelvePixelFrameByteForByte() {
        let pixels = (0..<12).map { (i: Int) -> PixelColor in PixelColor(red: UInt8(i), green: UInt8(2 * i), blue: UInt8(3 * i)) }
        let expected: [UInt8] = [
            0x00, 0x00, 0x00, 0x00,
            0xE5, 0, 0, 0,
            0xE5, 3, 2, 1,
            0xE5, 6, 4, 2,
            0xE5, 9, 6, 3,
            0xE5, 12, 8, 4,
            0xE5, 15, 10, 5,
            0xE5, 18, 12, 6,
            0xE5, 21, 14, 7,
            0xE5, 24, 16, 8,
            0xE5, 27, 18, 9,
            0xE5, 30, 20, 10,
            0xE5, 33, 22, 11,
            0x00, 0x00, 0x00, 0x00,
        ]
        #expect(APA102.frame(pixels, brightness: 5) == expected)
    }

    @Test func brightnessIsClampedToFiveBits() {
        #expect(APA102.pixelHeader(brightness: 0) == 0xE0)
        #expect(APA102.pixelHeader(brightness: 17) == 0xF1)
        #expect(APA102.pixelHeader(brightness: 31) == 0xFF)
        #expect(APA102.pixelHeader(brightness: 32) == 0xFF)
        #expect(APA102.pixelHeader(brightness: -1) == 0xE0)
        #expect(APA102.pixelHeader(brightness: .max) == 0xFF)
        #expect(APA102.pixelHeader(brightness: .min) == 0xE0)
        #expect(APA102.frame([.black], brightness: 99)[4] == 0xFF)
        #expect(APA102.frame([.black], brightness: -99)[4] == 0xE0)
    }

    @Test(arguments: [(1, 4), (3, 4), (12, 4), (16, 4), (17, 4), (60, 4), (64, 4), (65, 5), (255, 16), (0, 4), (-3, 4)])
    func endFrameLength(pixels: Int, bytes: Int) {
        #expect(APA102.endFrameLength(pixelCount: pixels) == bytes)
        let n = max(pixels, 0)
        let frame = APA102.frame([PixelColor](repeating: Look.white, count: n), brightness: 31)
        #expect(frame.count == 4 + 4 * n + bytes)
        #expect(frame.suffix(bytes).allSatisfy { $0 == 0 })
    }

    /// The rule: at least n/2 extra clock edges (a bit each) after the last pixel's data.
    @Test func endFrameGivesHalfAClockEdgePerPixel() {
        for n in 0...2000 {
            #expect(8 * APA102.endFrameLength(pixelCount: n) * 2 >= n, "n = \(n)")
            #expect(APA102.endFrameLength(pixelCount: n) >= 4)
        }
    }

    @Test func colorsClampAndScale() {
        #expect(PixelColor(clamping: -5, 300, 128) == PixelColor(red: 0, green: 255, blue: 128))
        #expect(Look.white.scaled(64) == PixelColor(red: 64, green: 64, blue: 64))
        #expect(Look.white.scaled(999) == Look.white)
        #expect(Look.white.scaled(-1) == .black)
        #expect(PixelColor(red: 1, green: 171, blue: 255).description == "#01abff")
    }
}

@Suite struct RingAnimationTests {
    @Test(arguments: [3, 12])
    func steadyStatesNeverRedraw(n: Int) {
        let steady: [(LEDState, [PixelColor])] = [
            (.off, arc(0, of: n, Look.listening)),
            (.ready, [Look.readyGlow] + [PixelColor](repeating: .black, count: n - 1)),
            (.listening, arc(n, of: n, Look.listening)),
            (.muted, arc(n, of: n, Look.mutedRed)),
        ]
        for (state, expected) in steady {
            let a = ring(state, n)
            for ms in [0, 1, 39, 40, 999, 5_000, 3_600_000] {
                #expect(a.at(ms) == expected, "\(state) at \(ms) ms")
                #expect(a.next(ms) == nil, "\(state) at \(ms) ms")
            }
        }
    }

    @Test func listeningIsBrightAndMutedIsDim() {
        let listening = ring(.listening, 12).at(0)[0]
        let muted = ring(.muted, 12).at(0)[0]
        #expect(max(listening.red, listening.green, listening.blue) == 255)
        #expect(muted.green == 0 && muted.blue == 0 && muted.red > 0 && muted.red < 64)
    }

    @Test func thinkingSpinsRoundTwelvePixels() {
        let a = ring(.searching, 12)
        func expected(head: Int) -> [PixelColor] {
            (0..<12).map { $0 == head ? Look.thinking : $0 == (head + 11) % 12 ? Look.thinkingTail : .black }
        }
        #expect(a.at(0) == expected(head: 0))
        #expect(a.at(79) == expected(head: 0))
        #expect(a.at(80) == expected(head: 1))   // one step: 80 ms
        #expect(a.at(880) == expected(head: 11))
        #expect(a.at(960) == expected(head: 0))  // round in 960 ms, and again
        #expect(a.at(960 * 1000 + 160) == expected(head: 2))
        #expect(a.next(0) == .milliseconds(80))
        #expect(a.next(80) == .milliseconds(160))
        #expect(a.next(959) == .milliseconds(960))
    }

    @Test func thinkingSpinsRoundThreePixels() {
        let a = ring(.searching, 3)
        #expect(a.at(0) == [Look.thinking, .black, Look.thinkingTail])
        #expect(a.at(319) == [Look.thinking, .black, Look.thinkingTail])
        #expect(a.at(320) == [Look.thinkingTail, Look.thinking, .black])
        #expect(a.at(640) == [.black, Look.thinkingTail, Look.thinking])
        #expect(a.at(960) == [Look.thinking, .black, Look.thinkingTail])
        #expect(a.next(0) == .milliseconds(320))
        #expect(a.next(700) == .milliseconds(960))
    }

    @Test func speakingBreathesEveryFrame() {
        let a = ring(.speaking, 12)
        #expect(a.at(0) == arc(12, of: 12, Look.white))
        #expect(a.at(40) == arc(12, of: 12, PixelColor(red: 243, green: 243, blue: 243)))
        #expect(a.at(600) == arc(12, of: 12, PixelColor(red: 64, green: 64, blue: 64)))  // a quarter, then back up
        #expect(a.at(1200) == a.at(0))
        // Down for 600 ms, up for 600 ms, a new level every 40 ms.
        var levels: [UInt8] = []
        for ms in stride(from: 0, through: 1200, by: 40) { levels.append(a.at(ms)[5].red) }
        #expect(Array(levels[0...15]) == levels[0...15].sorted(by: >))
        #expect(Array(levels[15...30]) == levels[15...30].sorted())
        #expect(Set(levels).count == 16)
        #expect(a.next(0) == .milliseconds(40))
        #expect(a.next(21) == .milliseconds(40))
        #expect(ring(.speaking, 3).at(600) == arc(3, of: 3, PixelColor(red: 64, green: 64, blue: 64)))
    }

    @Test(arguments: [3, 12])
    func errorFlashesRedInThrees(n: Int) {
        let a = ring(.error, n)
        let red = arc(n, of: n, Look.red), dark = arc(0, of: n, Look.red)
        for (ms, expected) in [(0, red), (119, red), (120, dark), (240, red), (360, dark), (480, red), (599, red),
                               (600, dark), (1599, dark), (1600, red), (1600 * 50 + 250, red)] {
            #expect(a.at(ms) == expected, "\(ms) ms")
        }
        #expect(flashes(a, in: 1600) == 3)
        #expect(a.next(0) == .milliseconds(120))
        #expect(a.next(600) == .milliseconds(1600))
    }

    @Test(arguments: [3, 12])
    func offlineBlinksAmberSlowly(n: Int) {
        let a = ring(.offline, n)
        #expect(a.at(0) == arc(n, of: n, Look.amber))
        #expect(a.at(999) == arc(n, of: n, Look.amber))
        #expect(a.at(1000) == arc(0, of: n, Look.amber))
        #expect(a.at(2000) == arc(n, of: n, Look.amber))
        #expect(a.next(0) == .milliseconds(1000))
        #expect(a.next(1000) == .milliseconds(2000))
    }

    @Test(arguments: [3, 12])
    func ringingStrobes(n: Int) {
        let a = ring(.ringing, n)
        let on = arc(n, of: n, Look.white), off = arc(0, of: n, Look.white)
        for (ms, expected) in [(0, on), (69, on), (70, off), (140, on), (700, on), (769, on), (770, off), (1069, off), (1070, on)] {
            #expect(a.at(ms) == expected, "\(ms) ms")
        }
        #expect(flashes(a, in: 1070) == 6)
        #expect(a.next(0) == .milliseconds(70))
        #expect(a.next(770) == .milliseconds(1070))
    }

    @Test func timerArcShowsTheTimeLeft() {
        // 100 %, 50 %, 10 %, 0 %: 12 pixels light 12, 6, 2 (1.2 rounded up), 0; 3 pixels 3, 2, 1, 0.
        for (left, twelve, three) in [(100, 12, 3), (50, 6, 2), (10, 2, 1), (0, 0, 0)] {
            let timer = RingTimer(length: .seconds(100), left: .seconds(left))
            #expect(timer.arc(of: 12, after: .zero) == twelve)
            #expect(timer.arc(of: 3, after: .zero) == three)
            #expect(ring(.timer, 12, timer: timer).at(0) == arc(twelve, of: 12, Look.timer), "\(left) %")
            #expect(ring(.timer, 3, timer: timer).at(0) == arc(three, of: 3, Look.timer), "\(left) %")
        }
        // Any time left keeps a pixel lit; time up, none.
        #expect(RingTimer(length: .seconds(600), left: .milliseconds(1)).arc(of: 3, after: .zero) == 1)
        #expect(RingTimer(length: .seconds(60), left: .seconds(90)).arc(of: 12, after: .zero) == 12)
        #expect(RingTimer(length: .zero, left: .zero).arc(of: 12, after: .zero) == 0)
        // No timer given: a full ring.
        #expect(ring(.timer, 12).at(0) == arc(12, of: 12, Look.timer))
    }

    @Test func timerArcShrinksAsTheStateGoesOn() {
        // 60.5 s of 120 s on 12 pixels: 7 lit (6.05 rounded up), 6 from 500 ms on (60 s left), 5 at 10.5 s.
        let timer = RingTimer(length: .seconds(120), left: .milliseconds(60_500))
        let a = ring(.timer, 12, timer: timer)
        #expect(a.at(0) == arc(7, of: 12, Look.timer))
        #expect(a.next(0) == .milliseconds(500))
        #expect(a.at(500) == arc(6, of: 12, Look.timer))
        #expect(timer.arc(of: 12, after: .milliseconds(10_499)) == 6)
        #expect(timer.arc(of: 12, after: .milliseconds(10_500)) == 5)
        #expect(timer.arc(of: 12, after: .seconds(60)) == 1)
        #expect(timer.arc(of: 12, after: .milliseconds(60_500)) == 0)
        #expect(a.at(60_500) == arc(0, of: 12, Look.timer))
        #expect(a.next(60_500) == nil)  // time up: nothing left to tick
    }

    @Test func timerTicksItsLeadingPixelOnceASecond() {
        let timer = RingTimer(length: .seconds(100), left: .seconds(50))
        let a = ring(.timer, 12, timer: timer)
        #expect(a.at(899) == arc(6, of: 12, Look.timer))
        #expect(a.at(900) == arc(5, of: 12, Look.timer))   // the sixth goes dark for 100 ms
        #expect(a.at(1000) == arc(6, of: 12, Look.timer))
        #expect(a.next(0) == .milliseconds(900))
        #expect(a.next(950) == .milliseconds(1000))
        #expect(ring(.timer, 3, timer: timer).at(1950) == arc(1, of: 3, Look.timer))
    }

    @Test func timerEndingBlinksTheArcQuickly() {
        let timer = RingTimer(length: .seconds(100), left: .seconds(50))
        for n in [3, 12] {
            let a = ring(.timerEnding, n, timer: timer)
            let lit = n == 3 ? 2 : 6
            #expect(a.at(0) == arc(lit, of: n, Look.timer))
            #expect(a.at(299) == arc(lit, of: n, Look.timer))
            #expect(a.at(300) == arc(0, of: n, Look.timer))
            #expect(a.at(500) == arc(lit, of: n, Look.timer))
            #expect(a.next(0) == .milliseconds(300))
            #expect(a.next(300) == .milliseconds(500))
        }
        let done = ring(.timerEnding, 12, timer: RingTimer(length: .seconds(60), left: .zero))
        #expect(done.at(0) == arc(0, of: 12, Look.timer))
        #expect(done.next(0) == nil)
    }

    @Test func setupTurnsTwoTonesSlowly() {
        let twelve = ring(.setup, 12)
        #expect(twelve.at(0) == arc(6, of: 12, Look.setupA).map { $0 == .black ? Look.setupB : $0 })
        #expect(twelve.at(240) == [Look.setupB] + [PixelColor](repeating: Look.setupA, count: 6) + [PixelColor](repeating: Look.setupB, count: 5))
        #expect(twelve.at(2880) == twelve.at(0))
        #expect(twelve.next(0) == .milliseconds(240))
        let three = ring(.setup, 3)
        #expect(three.at(0) == [Look.setupA, Look.setupA, Look.setupB])
        #expect(three.at(1000) == [Look.setupB, Look.setupA, Look.setupA])
        #expect(three.at(2000) == [Look.setupA, Look.setupB, Look.setupA])
        #expect(three.at(3000) == three.at(0))
        #expect(three.next(0) == .milliseconds(1000))
    }

    /// A person can tell every pair of states apart: they differ somewhere within their first 2 s.
    @Test(arguments: [3, 12])
    func everyPairOfStatesDiffersWithinTwoSeconds(n: Int) {
        let timer = RingTimer(length: .seconds(100), left: .seconds(50))
        let states = LEDState.allCases
        let frames = states.map { state in stride(from: 0, through: 2000, by: 10).map { ring(state, n, timer: timer).at($0) } }
        for i in states.indices {
            for j in states.indices where j > i {
                #expect(frames[i] != frames[j], "\(states[i]) and \(states[j]) look the same on \(n) pixels")
            }
        }
    }

    /// Every animated state repeats after a whole period of milliseconds.
    @Test func periodsAreWhole() {
        let periods: [(LEDState, Int, Int)] = [(.searching, 12, 960), (.searching, 3, 960), (.speaking, 12, 1200), (.error, 12, 1600),
                                               (.offline, 3, 2000), (.ringing, 12, 1070), (.setup, 12, 2880), (.setup, 3, 3000),
                                               (.timer, 12, 1000), (.timerEnding, 3, 500)]
        for (state, n, period) in periods {
            let a = ring(state, n)
            for ms in stride(from: 0, to: period, by: 10) {
                #expect(a.at(ms) == a.at(ms + period), "\(state) at \(ms) ms")
                #expect(a.at(ms) == a.at(ms + 1000 * period), "\(state) at \(ms) ms")
            }
        }
    }

    /// `nextChange` says exactly when the frame changes: nothing changes before it and something does at it.
    @Test(arguments: [1, 2, 3, 12])
    func nextChangeIsExact(n: Int) {
        let timer = RingTimer(length: .seconds(10), left: .milliseconds(4_321))
        for state in LEDState.allCases {
            let a = ring(state, n, timer: timer)
            var t = 0
            var changes = 0
            while t < 6_000 {
                guard let next = a.next(t) else {
                    // Steady from here on.
                    let changed = stride(from: t, through: t + 3_000, by: 7).first { a.at($0) != a.at(t) }
                    #expect(changed == nil, "\(state) changed at \(changed ?? 0) ms with no next change after \(t) ms")
                    break
                }
                let nextMs = Int(next / .milliseconds(1))
                #expect(nextMs > t, "\(state) at \(t) ms")
                let early = (t..<nextMs).first { a.at($0) != a.at(t) }
                #expect(early == nil, "\(state) changed at \(early ?? 0) ms, before the next change at \(nextMs) ms")
                #expect(a.at(nextMs) != a.at(t), "\(state) at \(nextMs) ms")
                t = nextMs
                changes += 1
            }
            if [.off, .ready, .listening, .muted].contains(state) { #expect(changes == 0, "\(state)") }
            else { #expect(changes > 0, "\(state) on \(n) pixels") }
        }
    }

    /// Animated states redraw at no more than 25 frames a second; steady ones not at all.
    @Test func animationsRunAtAFixedCadence() {
        for state in LEDState.allCases {
            let a = ring(state, 12, timer: RingTimer(length: .seconds(100), left: .seconds(50)))
            var t = 0
            while t < 4_000, let next = a.next(t) {
                let gap = Int(next / .milliseconds(1)) - t
                #expect(gap >= 40, "\(state) at \(t) ms: \(gap) ms")
                t += gap
            }
        }
    }

    @Test func outOfRangeInputIsClampedNotACrash() {
        for state in LEDState.allCases {
            let a = ring(state, 12, timer: RingTimer(length: .seconds(-5), left: .seconds(Int64.max)))
            #expect(a.colors(at: .milliseconds(-500)) == a.at(0))
            #expect(a.colors(at: .seconds(-1)) == a.at(0))
            let huge = a.colors(at: .seconds(Int64.max))
            #expect(huge.count == 12)
            #expect(a.nextChange(after: .seconds(Int64.max)) == nil)
            if let next = a.nextChange(after: .seconds(-3)) { #expect(next > .zero) }
        }
        #expect(ring(.listening, 0).at(0).isEmpty)
        #expect(ring(.searching, -4).at(100).isEmpty)
        #expect(ring(.searching, -4).next(0) == nil)
        #expect(RingAnimation(state: .listening, pixelCount: .max).pixelCount == 4096)
        #expect(RingTimer(length: .seconds(10), left: .seconds(5)).arc(of: -1, after: .zero) == 0)
        #expect(RingTimer(length: .seconds(10), left: .seconds(5)).arc(of: 12, after: .seconds(-100)) == 6)
    }

    /// Separate flashes in one period, sampled every 10 ms.
    private func flashes(_ a: RingAnimation, in period: Int) -> Int {
        var count = 0
        var wasLit = false
        for ms in stride(from: 0, to: period, by: 10) {
            let lit = a.at(ms).contains { !$0.isDark }
            if lit && !wasLit { count += 1 }
            wasLit = lit
        }
        return count
    }
}

@Suite struct LEDRingProfileTests {
    @Test func presets() {
        let two = LEDRingProfile.respeaker2Mic
        #expect(two.devicePath == "/dev/spidev0.1")
        #expect(two.pixelCount == 3)
        #expect(two.powerLine == nil)
        #expect(two.problems.isEmpty)
        let four = LEDRingProfile.respeaker4Mic
        #expect(four.devicePath == "/dev/spidev0.1")
        #expect(four.pixelCount == 12)
        #expect(four.powerLine == "GPIO5")
        #expect(four.speedHz == 8_000_000)
        #expect(four.problems.isEmpty)
    }

    @Test func everyBadFieldIsNamed() {
        func problems(_ change: (inout LEDRingProfile) -> Void) -> [String] {
            var p = LEDRingProfile.respeaker4Mic
            change(&p)
            return p.problems
        }
        #expect(problems { $0.pixelCount = 0 } == ["the pixel count must be 1 to 255, not 0"])
        #expect(problems { $0.pixelCount = 256 } == ["the pixel count must be 1 to 255, not 256"])
        #expect(problems { $0.speedHz = 50 } == ["the SPI speed must be 100000 to 32000000 Hz, not 50"])
        #expect(problems { $0.speedHz = 40_000_000 }.first?.contains("SPI speed") == true)
        #expect(problems { $0.brightness = 32 } == ["the brightness must be 0 to 31 (the APA102's 5-bit global brightness), not 32"])
        #expect(problems { $0.brightness = -1 }.first?.contains("brightness") == true)
        #expect(problems { $0.spiBus = -1 } == ["the SPI bus must be 0 to 255, not -1"])
        #expect(problems { $0.chipSelect = 300 } == ["the SPI chip select must be 0 to 255, not 300"])
        #expect(problems { $0.powerLine = "" } == ["the power line must be a GPIO line name such as \"GPIO5\", not \"\""])
        #expect(problems { $0.powerLine = "GPIO 5" }.count == 1)
        #expect(problems { $0.pixelCount = 0; $0.brightness = 99; $0.speedHz = 0 }.count == 3)
        #expect(problems { $0.brightness = 0; $0.pixelCount = 255; $0.speedHz = 100_000 }.isEmpty)
    }

    @Test func aBadProfileOpensNothing() {
        var p = LEDRingProfile.respeaker2Mic
        p.pixelCount = 0
        p.spiBus = 250
        #expect(throws: BoardError("LED ring (ReSpeaker 2-Mics Pi HAT): the pixel count must be 1 to 255, not 0", isConfiguration: true)) {
            try APA102Ring(profile: p)
        }
    }
}

@Suite struct APA102RingTests {
    @Test func writesEachFrameWhole() throws {
        let bus = RecordingBus()
        let ring = APA102Ring(profile: .respeaker2Mic, bus: bus)
        try ring.show([Look.red, Look.timer, Look.white])
        try ring.show([Look.red])                                       // the rest dark
        try ring.show([Look.red, Look.red, Look.red, Look.white])       // the fourth dropped
        try ring.clear()
        let h: UInt8 = 0xE0 | 10
        let expected: [[UInt8]] = [
            [0, 0, 0, 0, h, 0, 0, 255, h, 60, 200, 0, h, 255, 255, 255, 0, 0, 0, 0],
            [0, 0, 0, 0, h, 0, 0, 255, h, 0, 0, 0, h, 0, 0, 0, 0, 0, 0, 0],
            [0, 0, 0, 0, h, 0, 0, 255, h, 0, 0, 255, h, 0, 0, 255, 0, 0, 0, 0],
            [0, 0, 0, 0, h, 0, 0, 0, h, 0, 0, 0, h, 0, 0, 0, 0, 0, 0, 0],
        ]
        #expect(bus.all == expected)
    }

    @Test func showsAnAnimationAndSaysWhenItNextChanges() throws {
        let bus = RecordingBus()
        var profile = LEDRingProfile.respeaker4Mic
        profile.brightness = 40  // clamped in the frame
        let ring = APA102Ring(profile: profile, bus: bus)
        let next = try ring.show(RingAnimation(state: .searching, pixelCount: 12), at: .milliseconds(100))
        #expect(next == .milliseconds(160))
        #expect(try ring.show(RingAnimation(state: .listening, pixelCount: 12), at: .zero) == nil)
        let frames = bus.all
        #expect(frames.count == 2)
        #expect(frames[0].count == 4 + 48 + 4)
        // Head on pixel 1 (100 ms is the second step), tail on pixel 0; brightness 31.
        #expect(Array(frames[0][4..<12]) == [0xFF, 52, 44, 0, 0xFF, 255, 220, 0])
        #expect(frames[0][12..<52].allSatisfy { $0 == 0xFF || $0 == 0 })
        #expect(frames[1][4..<52] == ArraySlice((0..<12).flatMap { _ in [UInt8(0xFF), 255, 150, 90] }))
    }

    @Test func aFailingBusIsReported() {
        let ring = APA102Ring(profile: .respeaker2Mic, bus: FailingBus())
        #expect(throws: BoardError("bus gone")) { try ring.clear() }
    }
}

@Suite struct SPIDeviceTests {
    @Test func aMissingDeviceNamesThePathAndHowToEnableSPI() {
        do {
            _ = try SPIDevice(bus: 97, chipSelect: 3, speedHz: 8_000_000)
            Issue.record("opened /dev/spidev97.3")
        } catch {
            #expect(error.message == "/dev/spidev97.3: No such file or directory (enable SPI: dtparam=spi=on in /boot/firmware/config.txt, then reboot)")
            #expect(error.isConfiguration)
        }
    }

    /// Made without its device; each frame tries to open it and says why it cannot, and one that is there later
    /// (a regular file here stands for it: opened, then refused as not SPI) is opened then.
    @Test func aRingWhoseDeviceIsMissingSaysSoAtEachFrame() throws {
        var p = LEDRingProfile.respeaker4Mic
        p.spiBus = 201
        let ring = try APA102Ring(profile: p)
        for _ in 0..<2 {
            do { try ring.clear(); Issue.record("wrote to /dev/spidev201.1") } catch {
                #expect(error.message.hasPrefix("/dev/spidev201.1: No such file or directory"))
            }
        }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spidev-\(getpid())-late").path
        let late = APA102Ring(profile: p, bus: ReopeningSPIDevice(path: path, speedHz: 8_000_000))
        do { try late.clear() } catch { #expect(error.message.hasPrefix("\(path): No such file or directory")) }
        #expect(FileManager.default.createFile(atPath: path, contents: Data()))
        defer { try? FileManager.default.removeItem(atPath: path) }
        do { try late.clear() } catch { #expect(error.message == "\(path): not an SPI device (Inappropriate ioctl for device)") }
    }

    @Test func aRegularFileIsNotAnSPIDevice() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("spidev-\(getpid())-\(UInt32.random(in: 0 ... .max))").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data([1, 2, 3])))
        defer { try? FileManager.default.removeItem(atPath: path) }
        for p in [path, "/dev/null"] {
            do {
                _ = try SPIDevice(path: p, speedHz: 8_000_000)
                Issue.record("\(p) configured as an SPI device")
            } catch {
                #expect(error.message == "\(p): not an SPI device (Inappropriate ioctl for device)")
                #expect(error.isConfiguration)
            }
        }
    }
}
