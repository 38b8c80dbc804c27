/// What the LEDs show. The speaker's states (ready, recording = listening, searching, speaking:
/// docs/houndify-protocol.md, "Speaker states") plus error, offline and muted.
public enum LEDState: String, Sendable, CaseIterable {
    case off, ready, listening, searching, speaking, error, offline, muted
    /// Ready, with a kitchen timer counting down.
    case timer
    /// Ready, with a timer in its last minute: the ticks quicken.
    case timerEnding = "timer_ending"
    /// A timer has gone off: a press stops it.
    case ringing
    /// Ready, without Houndify credentials yet: setup mode, its page waiting for the owner's phone.
    case setup
}

/// The LEDs a board has, by role. Boards with one LED (Google AIY Voice HAT) show states as patterns on it;
/// boards with three give listening, searching and speaking their own LED.
public enum LEDRole: String, Sendable, CaseIterable {
    case status      // the single LED of a one-LED board
    case listening, searching, speaking
    /// Not a light: the line that powers an LED ring (the ReSpeaker 4-Mic's GPIO5), high while the board runs and
    /// low once it stops. No pattern drives it.
    case ringPower = "ring_power"

    /// What a message calls the line ("listening LED", "LED ring's power").
    public var lineName: String { self == .ringPower ? "LED ring's power" : "\(rawValue) LED" }
}

/// One step of a blink pattern: the level for a duration.
public struct LEDStep: Sendable, Equatable {
    public var on: Bool
    public var duration: Duration
    public init(_ on: Bool, _ duration: Duration) { self.on = on; self.duration = duration }
}

/// A repeating (or one-shot, then steady) sequence of steps for one LED.
public struct LEDPattern: Sendable, Equatable {
    public var steps: [LEDStep]
    public var repeats: Bool
    /// The level after a one-shot pattern ends.
    public var after: Bool

    public static let off = LEDPattern(steps: [], repeats: false, after: false)
    public static let on = LEDPattern(steps: [], repeats: false, after: true)

    public static func blink(on: Duration, off: Duration) -> LEDPattern {
        LEDPattern(steps: [LEDStep(true, on), LEDStep(false, off)], repeats: true, after: false)
    }

    /// `count` short flashes, then a pause, repeated: told apart from a steady blink by its rhythm.
    public static func flashes(_ count: Int, flash: Duration, gap: Duration, pause: Duration) -> LEDPattern {
        var steps: [LEDStep] = []
        for i in 0..<count {
            steps.append(LEDStep(true, flash))
            steps.append(LEDStep(false, i == count - 1 ? pause : gap))
        }
        return LEDPattern(steps: steps, repeats: true, after: false)
    }

    public var period: Duration { steps.reduce(.zero) { $0 + $1.duration } }

    /// Level at `elapsed` since the pattern started, and how long that level lasts (nil: for ever).
    public func level(at elapsed: Duration) -> (on: Bool, remaining: Duration?) {
        guard !steps.isEmpty, period > .zero else { return (after, nil) }
        var t = elapsed
        if repeats {
            let p = period
            t = .nanoseconds(Int64(t / .nanoseconds(1)) % Int64(p / .nanoseconds(1)))
        } else if t >= period {
            return (after, nil)
        }
        for step in steps {
            if t < step.duration { return (step.on, step.duration - t) }
            t -= step.duration
        }
        return (after, nil)
    }

    /// Fraction of a period the LED is lit (1 for steady on).
    public var dutyCycle: Double {
        guard !steps.isEmpty else { return after ? 1 : 0 }
        let lit = steps.filter(\.on).reduce(Duration.zero) { $0 + $1.duration }
        return lit / period
    }

    /// Number of separate flashes in one period.
    public var flashesPerPeriod: Int { steps.filter(\.on).count }
}

/// The patterns each board layout uses for each state. Chosen so that a person can tell every pair apart at a
/// glance: different rhythm (steady, fast, slow, flashes in groups) and not just a different speed.
public enum LEDScheme {
    public static func singleLED(_ state: LEDState) -> LEDPattern {
        switch state {
        case .off: .off
        // A blip every 5 s: alive and waiting, told apart from a speaker that is off or not running.
        case .ready: .flashes(1, flash: .milliseconds(50), gap: .zero, pause: .milliseconds(4950))
        case .listening: .on
        case .searching: .blink(on: .milliseconds(100), off: .milliseconds(100))       // fast flicker
        case .speaking: .blink(on: .milliseconds(1500), off: .milliseconds(150))       // on, with a short dip
        case .error: .flashes(3, flash: .milliseconds(120), gap: .milliseconds(120), pause: .milliseconds(1000))
        case .offline: .blink(on: .seconds(1), off: .seconds(1))                       // slow even blink
        case .muted: .flashes(2, flash: .milliseconds(150), gap: .milliseconds(150), pause: .milliseconds(2500))
        // Ticks: four short flashes a second and a bit, then a pause.
        case .timer: .flashes(4, flash: .milliseconds(60), gap: .milliseconds(190), pause: .milliseconds(1000))
        // The last minute: quick double ticks, twice a second.
        case .timerEnding: .flashes(2, flash: .milliseconds(60), gap: .milliseconds(110), pause: .milliseconds(250))
        // A strobe that cannot be missed from across the kitchen.
        case .ringing: .flashes(6, flash: .milliseconds(70), gap: .milliseconds(70), pause: .milliseconds(300))
        // A long flash and a short one, every 2 s: a rhythm of its own, waiting for the owner.
        case .setup: LEDPattern(steps: [LEDStep(true, .milliseconds(900)), LEDStep(false, .milliseconds(200)),
                                        LEDStep(true, .milliseconds(200)), LEDStep(false, .milliseconds(700))], repeats: true, after: false)
        }
    }

    /// For boards with a listening, a searching and a speaking LED.
    public static func threeLEDs(_ state: LEDState) -> [LEDRole: LEDPattern] {
        var leds: [LEDRole: LEDPattern] = [.listening: .off, .searching: .off, .speaking: .off]
        switch state {
        case .off: break
        case .ready: leds[.listening] = singleLED(.ready)
        case .listening: leds[.listening] = .on
        case .searching: leds[.searching] = .blink(on: .milliseconds(100), off: .milliseconds(100))
        case .speaking: leds[.speaking] = .on
        case .error:
            for role in [LEDRole.listening, .searching, .speaking] { leds[role] = singleLED(.error) }
        case .offline: leds[.searching] = singleLED(.offline)
        case .muted: leds[.listening] = singleLED(.muted)
        case .timer, .timerEnding:
            leds[.listening] = singleLED(.ready)
            leds[.speaking] = singleLED(state)
        case .ringing:
            for role in [LEDRole.listening, .searching, .speaking] { leds[role] = singleLED(.ringing) }
        case .setup:
            // A light going round the three, 300 ms each: nothing else moves across them.
            let roles: [LEDRole] = [.listening, .searching, .speaking]
            for (i, role) in roles.enumerated() {
                var steps: [LEDStep] = []
                if i > 0 { steps.append(LEDStep(false, .milliseconds(300 * i))) }
                steps.append(LEDStep(true, .milliseconds(300)))
                if i < roles.count - 1 { steps.append(LEDStep(false, .milliseconds(300 * (roles.count - 1 - i)))) }
                leds[role] = LEDPattern(steps: steps, repeats: true, after: false)
            }
        }
        return leds
    }
}

/// Drives a board's LEDs through patterns on the app's clock: `set(state:at:)` starts a state's patterns and
/// `levels(at:)` says what every LED shows at a time and when it next changes, so the driver wakes only then.
public struct LEDAnimator: Sendable {
    public let roles: [LEDRole]
    private(set) public var state: LEDState = .off
    private var startedAt: ContinuousClock.Instant
    private var patterns: [LEDRole: LEDPattern] = [:]

    /// `roles`: the LEDs the board has (`.status` alone, or the three role LEDs).
    public init(roles: [LEDRole], now: ContinuousClock.Instant) {
        self.roles = roles
        startedAt = now
    }

    public mutating func set(state: LEDState, at now: ContinuousClock.Instant) {
        guard state != self.state else { return }
        self.state = state
        startedAt = now
        if roles.contains(.status) || roles.count == 1 {
            patterns = Dictionary(uniqueKeysWithValues: roles.map { ($0, LEDScheme.singleLED(state)) })
        } else {
            let scheme = LEDScheme.threeLEDs(state)
            patterns = Dictionary(uniqueKeysWithValues: roles.map { ($0, scheme[$0] ?? .off) })
        }
    }

    /// Every LED's level now, and the next time any of them changes (nil: nothing will change by itself).
    public func levels(at now: ContinuousClock.Instant) -> (levels: [LEDRole: Bool], nextChange: ContinuousClock.Instant?) {
        var levels: [LEDRole: Bool] = [:]
        var next: ContinuousClock.Instant? = nil
        let elapsed = now - startedAt
        for role in roles {
            let (on, remaining) = (patterns[role] ?? .off).level(at: elapsed)
            levels[role] = on
            if let remaining { next = min(next ?? now + remaining, now + remaining) }
        }
        return (levels, next)
    }
}
