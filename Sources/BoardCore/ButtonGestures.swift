/// Turns raw button edges into presses, releases, long presses and double presses. Pure: time is passed in,
/// so tests drive it with a manual clock and the driver with the real one.
///
/// Debounce is leading-edge with a lockout: the first edge is taken at once (a push-to-talk button must feel
/// immediate), edges within `debounce` of an accepted change are ignored, and when the lockout ends the raw
/// level is checked again so a release that bounced is not lost.
public struct ButtonGestures: Sendable {
    public struct Settings: Sendable, Equatable {
        public var debounce: Duration = .milliseconds(30)
        public var longPress: Duration = .seconds(1)
        /// A second press starting within this time after the first release is a double press.
        public var doublePressGap: Duration = .milliseconds(400)
        /// Held this long (longer than `longPress`): the set-up hold, which starts "Teach it my voice" in tap mode.
        public var setupHold: Duration = .seconds(5)
        /// Each value not given keeps its default (written once, above).
        public init(debounce: Duration? = nil, longPress: Duration? = nil, doublePressGap: Duration? = nil, setupHold: Duration? = nil) {
            if let debounce { self.debounce = debounce }
            if let longPress { self.longPress = longPress }
            if let doublePressGap { self.doublePressGap = doublePressGap }
            if let setupHold { self.setupHold = setupHold }
        }
    }

    public enum Event: Sendable, Equatable {
        case pressed
        /// `held` is how long the button was down.
        case released(held: Duration)
        /// Still held `longPress` after the press (sent once per press).
        case longPress
        /// A press that follows a short press within `doublePressGap`.
        case doublePress
        /// Still held `setupHold` after the press (sent once per press, after its long press).
        case setupHold
    }

    public let settings: Settings
    private(set) public var isPressed = false
    private var rawPressed = false
    private var lockoutUntil: ContinuousClock.Instant?
    private var pressedAt: ContinuousClock.Instant?
    private var longPressSent = false
    private var setupHoldSent = false
    private var lastShortReleaseAt: ContinuousClock.Instant?
    /// The current press completed a double press: its release must not arm another.
    private var pressIsSecondOfDouble = false

    public init(settings: Settings = Settings()) { self.settings = settings }

    /// A raw edge from the line (`pressed` is the logical level, active-low already applied).
    public mutating func edge(pressed: Bool, at now: ContinuousClock.Instant) -> [Event] {
        rawPressed = pressed
        if let until = lockoutUntil, now < until { return [] }
        return accept(at: now)
    }

    /// Advances time: ends the debounce lockout and fires the long press. Call at `nextDeadline`.
    public mutating func tick(at now: ContinuousClock.Instant) -> [Event] {
        var events: [Event] = []
        if let until = lockoutUntil, now >= until {
            lockoutUntil = nil
            events += accept(at: now)
        }
        if isPressed, !longPressSent, let at = pressedAt, now >= at + settings.longPress {
            longPressSent = true
            events.append(.longPress)
        }
        if isPressed, longPressSent, !setupHoldSent, let at = pressedAt, now >= at + settings.setupHold {
            setupHoldSent = true
            events.append(.setupHold)
        }
        return events
    }

    /// When `tick` must next be called, if anything is pending.
    public var nextDeadline: ContinuousClock.Instant? {
        var deadlines: [ContinuousClock.Instant] = []
        if let until = lockoutUntil { deadlines.append(until) }
        if isPressed, !longPressSent, let at = pressedAt { deadlines.append(at + settings.longPress) }
        if isPressed, !setupHoldSent, let at = pressedAt { deadlines.append(at + max(settings.setupHold, settings.longPress)) }
        return deadlines.min()
    }

    private mutating func accept(at now: ContinuousClock.Instant) -> [Event] {
        guard rawPressed != isPressed else { return [] }
        isPressed = rawPressed
        lockoutUntil = now + settings.debounce
        if isPressed {
            pressedAt = now
            longPressSent = false
            setupHoldSent = false
            var events: [Event] = [.pressed]
            pressIsSecondOfDouble = false
            if let released = lastShortReleaseAt, now - released <= settings.doublePressGap {
                events.append(.doublePress)
                pressIsSecondOfDouble = true  // a third press starts over
            }
            lastShortReleaseAt = nil
            return events
        }
        let held = pressedAt.map { now - $0 } ?? .zero
        lastShortReleaseAt = longPressSent || pressIsSecondOfDouble ? nil : now
        pressedAt = nil
        return [.released(held: held)]
    }
}

/// How a person uses the button to talk (config `[board] talk_mode`).
public enum TalkMode: String, Sendable, CaseIterable {
    /// A tap starts listening; end of speech or another tap ends it.
    case tap
    /// Listening while held; releasing ends the query.
    case hold
}

/// What a button gesture asks of the speaker, given the talk mode. The speaker's state decides what to do
/// with it (issue #6); this only says what the person meant.
public enum TalkIntent: Sendable, Equatable {
    /// Hold mode, the button went down: start listening; while speaking: stop speaking.
    case talk
    /// Tap mode, the button went down: start listening, or (while listening) stop; while speaking: stop speaking.
    /// A `tapEnded` or a `cancel` (long press) always follows.
    case press
    /// Tap mode: the button came up before a long press.
    case tapEnded
    /// Hold mode: the button went up, so the query is over.
    case endTalk
    /// Long press: cancel whatever is going on.
    case cancel
    /// Double press.
    case doublePress
    /// Tap mode: the button held on past the long press to the set-up hold (`[board] setup_hold_ms`): teach the
    /// speaker the household's voice ("Teach it my voice", as `ctl enroll`). Hold mode has none: a long hold there
    /// is a long question.
    case teachVoice
    /// The mute switch (a line of its own) was moved: on is muted. Also its position when the board starts.
    case muteSwitch(on: Bool)
}

public struct TalkIntentMapper: Sendable {
    public let mode: TalkMode
    private var cancelledThisPress = false

    public init(mode: TalkMode) { self.mode = mode }

    public mutating func intents(for event: ButtonGestures.Event) -> [TalkIntent] {
        switch event {
        case .pressed:
            cancelledThisPress = false
            return [mode == .tap ? .press : .talk]
        case .doublePress:
            return [.doublePress]
        case .longPress:
            // In hold mode a long hold is a long question, not a cancel.
            guard mode == .tap else { return [] }
            cancelledThisPress = true
            return [.cancel]
        case .setupHold:
            return mode == .tap ? [.teachVoice] : []
        case .released:
            // After a long-press cancel, the release means nothing more.
            guard !cancelledThisPress else { return [] }
            return [mode == .hold ? .endTalk : .tapEnded]
        }
    }
}

/// What drives the button and LEDs (`[board] driver`).
public enum BoardDriver: String, Sendable, CaseIterable {
    /// The real GPIO lines, through libgpiod.
    case gpiod
    /// A keyboard button and LEDs drawn on the terminal (a desk with no board).
    case simulated
}
