import FoundationEssentials
import Synchronization

/// What the board tells the speaker.
public enum BoardEvent: Sendable, Equatable, CustomStringConvertible {
    case button(ButtonGestures.Event)
    case intent(TalkIntent)
    /// The simulated button's input ended (stdin closed); the LEDs go on.
    case inputEnded

    public var description: String {
        switch self {
        case .button(.pressed): "button pressed"
        case .button(.released(let held)): "button released after \(Int(held / .milliseconds(1))) ms"
        case .button(.longPress): "button long press"
        case .button(.doublePress): "button double press"
        case .button(.setupHold): "button held to the set-up hold"
        case .intent(let intent): "intent \(intent)"
        case .inputEnded: "button input ended"
        }
    }
}

/// The board's logic without threads or devices: button gestures, the talk-mode mapping and the LED
/// animation, all on times passed in. `BoardRunner` drives it with the real clock; tests with a manual one.
public struct BoardLogic: Sendable {
    private var gestures: ButtonGestures
    private var mapper: TalkIntentMapper
    private var animator: LEDAnimator
    private var shown: [LEDRole: Bool] = [:]

    public init(gestures settings: ButtonGestures.Settings, talkMode: TalkMode, roles: [LEDRole], now: ContinuousClock.Instant) {
        gestures = ButtonGestures(settings: settings)
        mapper = TalkIntentMapper(mode: talkMode)
        animator = LEDAnimator(roles: roles, now: now)
    }

    public var ledState: LEDState { animator.state }
    public var isPressed: Bool { gestures.isPressed }

    public mutating func edge(pressed: Bool, at now: ContinuousClock.Instant) -> [BoardEvent] {
        expand(gestures.edge(pressed: pressed, at: now))
    }

    /// Timers: gesture deadlines. Returns the events due by `now`.
    public mutating func tick(at now: ContinuousClock.Instant) -> [BoardEvent] {
        expand(gestures.tick(at: now))
    }

    public mutating func show(_ state: LEDState, at now: ContinuousClock.Instant) {
        animator.set(state: state, at: now)
    }

    /// The LED levels that differ from what was last applied (empty when nothing changed).
    public mutating func ledChanges(at now: ContinuousClock.Instant) -> [LEDRole: Bool] {
        let levels = animator.levels(at: now).levels
        let changed = levels.filter { shown[$0.key] != $0.value }
        for (role, on) in changed { shown[role] = on }
        return changed
    }

    public func ledLevels(at now: ContinuousClock.Instant) -> [LEDRole: Bool] { animator.levels(at: now).levels }

    /// When the core next needs time to pass: a gesture timer or an LED change.
    public func nextDeadline(after now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        [gestures.nextDeadline, animator.levels(at: now).nextChange].compactMap { $0 }.min()
    }

    private mutating func expand(_ events: [ButtonGestures.Event]) -> [BoardEvent] {
        var out: [BoardEvent] = []
        for event in events {
            out.append(.button(event))
            out += mapper.intents(for: event).map(BoardEvent.intent)
        }
        return out
    }
}

/// Reads the simulated button from a keyboard or from lines of text.
///
/// On a terminal (raw mode), Space or Enter is a click (press, then release after `clickLength`) and `h` holds
/// the button down until the next `h`, since a terminal reports no key releases. Without a terminal, each line is
/// a command: `press`, `release`, `click`, or `long` (held past the long-press time), and `mute on` / `mute off`
/// for the mute switch (`m` flips it on a terminal).
public struct SimulatedButtonParser: Sendable {
    public enum Action: Sendable, Equatable {
        case press
        case release
        /// Press now, release after the given time.
        case pressFor(Duration)
        /// The mute switch moved (on: muted).
        case muteSwitch(Bool)
    }

    public let terminal: Bool
    public let clickLength: Duration
    public let longLength: Duration
    private var line: [UInt8] = []
    private var holding = false
    private var switchOn = false

    public init(terminal: Bool, clickLength: Duration = .milliseconds(120), longLength: Duration = .milliseconds(1500)) {
        self.terminal = terminal
        self.clickLength = clickLength
        self.longLength = longLength
    }

    /// Bytes read from the input; returns the actions they complete and any lines it did not understand.
    public mutating func feed(_ bytes: [UInt8]) -> (actions: [Action], unknown: [String]) {
        var actions: [Action] = []
        var unknown: [String] = []
        for byte in bytes {
            if terminal {
                switch byte {
                case UInt8(ascii: " "), UInt8(ascii: "\r"), UInt8(ascii: "\n"): actions.append(.pressFor(clickLength))
                case UInt8(ascii: "h"), UInt8(ascii: "H"):
                    holding.toggle()
                    actions.append(holding ? .press : .release)
                case UInt8(ascii: "l"), UInt8(ascii: "L"): actions.append(.pressFor(longLength))
                case UInt8(ascii: "m"), UInt8(ascii: "M"):
                    switchOn.toggle()
                    actions.append(.muteSwitch(switchOn))
                default: break
                }
                continue
            }
            guard byte == UInt8(ascii: "\n") else { line.append(byte); continue }
            let command = String(decoding: line, as: UTF8.self).split(whereSeparator: \.isWhitespace).joined(separator: " ").lowercased()
            line.removeAll()
            switch command {
            case "": break
            case "press", "down": actions.append(.press)
            case "release", "up": actions.append(.release)
            case "click", "tap": actions.append(.pressFor(clickLength))
            case "long": actions.append(.pressFor(longLength))
            case "mute on", "mute": actions.append(.muteSwitch(true))
            case "mute off", "unmute": actions.append(.muteSwitch(false))
            default: unknown.append(command)
            }
        }
        return (actions, unknown)
    }
}

/// The simulated LEDs as one status line, e.g. `[listening ● ○ ○]` or `[searching ●]`.
public enum SimulatedLEDs {
    /// Draws on a terminal by rewriting one line in place; elsewhere (a pipe, the journal) prints a line per
    /// change.
    /// Elsewhere only state changes are written, not every blink.
    public static func drawer(terminal: Bool, write: @escaping @Sendable (String) -> Void) -> @Sendable (LEDState, String) -> Void {
        if terminal {
            return { _, line in write("\r\u{1B}[2K" + line) }
        }
        let last = Mutex<LEDState?>(nil)
        return { state, line in
            let changed = last.withLock { previous -> Bool in
                defer { previous = state }
                return previous != state
            }
            if changed { write(line + "\n") }
        }
    }

    public static func render(state: LEDState, levels: [LEDRole: Bool], roles: [LEDRole]) -> String {
        let dots = roles.map { levels[$0] == true ? "●" : "○" }.joined(separator: " ")
        return "[\(state.rawValue) \(dots)]"
    }
}
