/// A kitchen timer as the ring shows it: how long it was set for and how much was left when the state began, so
/// the arc shrinks by itself as the state goes on.
public struct RingTimer: Sendable, Equatable {
    public var length: Duration
    public var left: Duration

    public init(length: Duration, left: Duration) {
        self.length = length
        self.left = left
    }

    /// How many of `pixelCount` pixels the arc lights `elapsed` after the state began: the fraction of time left,
    /// rounded up, so a pixel stays lit while any of its share is left and the last goes out when time is up
    /// (3 pixels: 50 % lights 2, 10 % lights 1, 0 % none). At most all of them, even if `left` > `length`.
    public func arc(of pixelCount: Int, after elapsed: Duration) -> Int {
        arc(of: min(max(pixelCount, 0), RingAnimation.maximumPixels), atMilliseconds: RingAnimation.milliseconds(elapsed))
    }

    var lengthMs: Int64 { max(1, RingAnimation.milliseconds(length)) }
    var leftMs: Int64 { RingAnimation.milliseconds(left) }

    func arc(of n: Int, atMilliseconds t: Int64) -> Int {
        let remaining = max(0, leftMs - t)
        guard remaining > 0, n > 0 else { return 0 }
        // remaining <= 10^12 and n <= 4096: no overflow.
        return Int(min(Int64(n), (remaining * Int64(n) + lengthMs - 1) / lengthMs))
    }

    /// When the arc next loses a pixel (ms since the state began), nil once it is dark.
    func arcChange(of n: Int, after t: Int64) -> Int64? {
        let lit = arc(of: n, atMilliseconds: t)
        guard lit > 0 else { return nil }
        // ceil(r·n/L) falls to lit-1 when r <= (lit-1)·L/n.
        return leftMs - (Int64(lit - 1) * lengthMs) / Int64(n)
    }
}

/// What an APA102 ring shows for each LED state: a pure function of the state, the time since it began and the
/// timer it shows, for any number of pixels. As in `LEDScheme`, states differ by rhythm and not only by speed
/// (steady, spinning, breathing, flashes in groups, slow blink, ticking, strobe, slow turn), and by colour.
///
/// Time is whole milliseconds, clamped to 0...10^12 ms (about 31 years): a negative or huge duration shows the
/// frame at the clamp. Continuous looks change on a 40 ms grid (25 frames a second); steady ones never, so a
/// driver sleeps until `nextChange(after:)` and an idle speaker draws nothing.
public struct RingAnimation: Sendable, Equatable {
    /// The cadence of continuous looks (the breathing) and the unit every step is a whole number of.
    public static let frameInterval: Duration = .milliseconds(40)
    static let tick: Int64 = 40
    /// Time is clamped here (ms): every product below stays far inside Int64.
    static let latest: Int64 = 1_000_000_000_000
    /// More pixels than any ring has (the profile allows 255): a bigger count is taken as this, never a crash.
    static let maximumPixels = 4096

    public let state: LEDState
    public let pixelCount: Int
    /// The timer the arc shows in `timer` and `timerEnding`; nil there shows a full ring.
    public let timer: RingTimer?

    /// `pixelCount` is clamped to 0...4096.
    public init(state: LEDState, pixelCount: Int, timer: RingTimer? = nil) {
        self.state = state
        self.pixelCount = min(max(pixelCount, 0), Self.maximumPixels)
        self.timer = timer
    }

    /// The colours, first pixel first, `elapsed` after the state began.
    public func colors(at elapsed: Duration) -> [PixelColor] {
        colors(atMilliseconds: Self.milliseconds(elapsed))
    }

    /// The time since the state began at which the colours next differ from those at `elapsed` (always later
    /// than `elapsed`); nil when they never change by themselves.
    public func nextChange(after elapsed: Duration) -> Duration? {
        var t = Self.milliseconds(elapsed)
        guard let rhythm = rhythm else { return nil }
        let now = colors(atMilliseconds: t)
        // Between candidates nothing changes; a candidate where nothing shows a change (a spinner of one pixel,
        // an arc going out while it is blinked off) is passed over. A whole period with no change: steady.
        var candidates = 2 * rhythm.stepsPerPeriod + 4
        while candidates > 0, let next = candidate(after: t, rhythm: rhythm), next <= Self.latest {
            if colors(atMilliseconds: next) != now { return .milliseconds(next) }
            t = next
            candidates -= 1
        }
        return nil
    }

    // MARK: The looks

    enum Palette {
        static let readyGlow = PixelColor(red: 10, green: 10, blue: 10)
        static let listening = PixelColor(red: 90, green: 150, blue: 255)
        static let thinking = PixelColor(red: 0, green: 220, blue: 255)
        static let thinkingTail = PixelColor(red: 0, green: 44, blue: 52)
        static let speaking = PixelColor(red: 255, green: 255, blue: 255)
        static let error = PixelColor(red: 255, green: 0, blue: 0)
        static let offline = PixelColor(red: 255, green: 110, blue: 0)
        static let muted = PixelColor(red: 48, green: 0, blue: 0)
        static let timer = PixelColor(red: 0, green: 200, blue: 60)
        static let ringing = PixelColor(red: 255, green: 255, blue: 255)
        static let setupA = PixelColor(red: 140, green: 0, blue: 255)
        static let setupB = PixelColor(red: 160, green: 160, blue: 160)
    }

    /// The thinking spinner goes round in about a second, the setup pattern in about three, on any ring: a step
    /// is a whole number of 40 ms ticks (3 pixels: 320 ms and 1 s; 12 pixels: 80 ms and 240 ms).
    var spinnerStep: Int64 { Self.tick * Int64(max(1, 25 / max(pixelCount, 1))) }
    var setupStep: Int64 { Self.tick * Int64(max(1, 75 / max(pixelCount, 1))) }
    /// Speaking breathes: down from full to a quarter and back in 1.2 s, a frame every 40 ms.
    static let breathTicks: Int64 = 30
    static let breathFloor = 64
    /// The timer ticks: the arc's leading pixel goes dark for the last 100 ms of every second.
    static let timerTick: (period: Int64, dip: Int64) = (1000, 900)
    /// The last minute: the whole arc blinks, 300 ms on, 200 ms off.
    static let endingBlink: (period: Int64, off: Int64) = (500, 300)

    func colors(atMilliseconds t: Int64) -> [PixelColor] {
        let n = pixelCount
        guard n > 0 else { return [] }
        let dark = [PixelColor](repeating: .black, count: n)
        func all(_ c: PixelColor) -> [PixelColor] { [PixelColor](repeating: c, count: n) }
        func flashing(_ c: PixelColor) -> [PixelColor] { Self.flashLit(state, at: t) ? all(c) : dark }
        switch state {
        case .off:
            return dark
        case .ready:
            // One very dim pixel, steady: a running speaker is told from one that is off without lighting the
            // room at night, and with no wake-ups (one GPIO LED needs its blip; a pixel can be dim instead).
            var c = dark
            c[0] = Palette.readyGlow
            return c
        case .listening:
            return all(Palette.listening)
        case .searching:
            // A bright dot with a dim tail going round; one pixel alone blinks at the same step.
            let step = Int(t / spinnerStep)
            if n == 1 { return step % 2 == 0 ? all(Palette.thinking) : dark }
            var c = dark
            let head = step % n
            c[(head + n - 1) % n] = Palette.thinkingTail
            c[head] = Palette.thinking
            return c
        case .speaking:
            let phase = (t / Self.tick) % Self.breathTicks
            let half = Self.breathTicks / 2
            let depth = phase <= half ? phase : Self.breathTicks - phase  // 0 at full, `half` at the floor
            return all(Palette.speaking.scaled(255 - Int(depth) * (255 - Self.breathFloor) / Int(half)))
        case .error:
            return flashing(Palette.error)  // three quick red flashes, then a pause
        case .offline:
            return flashing(Palette.offline)  // slow even amber blink, 1 s on, 1 s off
        case .muted:
            return all(Palette.muted)
        case .ringing:
            return flashing(Palette.ringing)  // six white flashes 70 ms apart, a short pause, again
        case .timer, .timerEnding:
            let lit = timer?.arc(of: n, atMilliseconds: t) ?? n
            var c = dark
            for i in 0..<lit { c[i] = Palette.timer }
            if state == .timer {
                if lit > 0, t % Self.timerTick.period >= Self.timerTick.dip { c[lit - 1] = .black }
                return c
            }
            return t % Self.endingBlink.period < Self.endingBlink.off ? c : dark
        case .setup:
            // Two tones, half the ring each, turning slowly.
            let step = Int(t / setupStep)
            if n == 1 { return step % 2 == 0 ? all(Palette.setupA) : all(Palette.setupB) }
            let firstHalf = (n + 1) / 2
            return (0..<n).map { i in (i - step % n + n) % n < firstHalf ? Palette.setupA : Palette.setupB }
        }
    }

    // MARK: When frames change

    /// Where a state's frames can change within its period (ms from the period's start, the first 0); nil:
    /// steady (a timer's arc changes too: `candidate` adds that).
    struct Rhythm {
        var period: Int64
        var boundaries: [Int64]
        var stepsPerPeriod: Int { boundaries.count }

    }

    var rhythm: Rhythm? {
        let n = Int64(max(pixelCount, 1))
        switch state {
        case .off, .ready, .listening, .muted: return nil
        // Equal steps: a boundary at the start of each.
        case .searching: return Rhythm(period: spinnerStep, boundaries: [0]).repeating(Int(n))
        case .setup: return Rhythm(period: setupStep, boundaries: [0]).repeating(Int(n))
        case .speaking: return Rhythm(period: Self.tick, boundaries: [0]).repeating(Int(Self.breathTicks))
        case .error, .offline, .ringing:
            let steps = Self.flashSteps(state)
            var boundaries: [Int64] = []
            var at: Int64 = 0
            for step in steps {
                boundaries.append(at)
                at += step.ms
            }
            return Rhythm(period: max(at, 1), boundaries: boundaries)
        case .timer: return Rhythm(period: Self.timerTick.period, boundaries: [0, Self.timerTick.dip])
        case .timerEnding: return Rhythm(period: Self.endingBlink.period, boundaries: [0, Self.endingBlink.off])
        }
    }

    /// The flashing states take the single LED's patterns (`LEDScheme`), in whole milliseconds so that the
    /// phase is exact at any time.
    static func flashSteps(_ state: LEDState) -> [(on: Bool, ms: Int64)] {
        LEDScheme.singleLED(state).steps.map { ($0.on, milliseconds($0.duration)) }
    }

    static func flashLit(_ state: LEDState, at t: Int64) -> Bool {
        let steps = flashSteps(state)
        let period = steps.reduce(0) { $0 + $1.ms }
        guard period > 0 else { return false }
        var phase = t % period
        for step in steps {
            if phase < step.ms { return step.on }
            phase -= step.ms
        }
        return false
    }

    /// The first time after `t` where the frame may change.
    func candidate(after t: Int64, rhythm: Rhythm) -> Int64? {
        let phase = t % rhythm.period
        let start = t - phase
        let next = rhythm.boundaries.first { $0 > phase }.map { start + $0 } ?? start + rhythm.period
        if state == .timer || state == .timerEnding, let change = timer?.arcChange(of: pixelCount, after: t) {
            return min(next, change)
        }
        return next
    }

    /// Whole milliseconds of `d`, clamped to 0...`latest`.
    static func milliseconds(_ d: Duration) -> Int64 {
        let (seconds, attoseconds) = d.components
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        guard seconds < latest / 1000 else { return latest }
        return min(latest, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}

extension RingAnimation.Rhythm {
    /// A period of `count` equal steps: each step's start is a boundary, the period `count` steps.
    func repeating(_ count: Int) -> RingAnimation.Rhythm {
        let step = period
        let count = max(count, 1)
        return RingAnimation.Rhythm(period: step * Int64(count), boundaries: (0..<Int64(count)).map { $0 * step })
    }
}
