public import BoardCore
import FoundationEssentials
import Glibc

/// Where a GPIO line is: a chip (name such as `gpiochip0`, a path, a label or a number, as libgpiod 1.6's
/// lookup took them) and a line (a name such as `GPIO17`, or an offset).
public struct GPIOLineSpec: Sendable, Equatable, CustomStringConvertible {
    public var chip: String
    public var line: String
    public var activeLow: Bool

    public init(chip: String, line: String, activeLow: Bool) {
        self.chip = chip
        self.line = line
        self.activeLow = activeLow
    }

    public var description: String { "line \(line) on \(chip)" }
}

public struct BoardError: Error, CustomStringConvertible, Equatable {
    public var message: String
    /// The config names lines or a chip this machine does not have, or that the service may not use: a restart
    /// cannot mend it (a line another program holds is not this: it may be let go).
    public var isConfiguration: Bool
    public init(_ message: String, isConfiguration: Bool = false) {
        self.message = message
        self.isConfiguration = isConfiguration
    }
    public var description: String { message }

    static let howToCheck = "check with `gpiodetect` (chips) and `gpioinfo` (lines and who holds them)"

    /// A chip that would not open, with the chips this machine has.
    static func chipCannotOpen(_ spec: GPIOLineSpec, errno code: Int32, devices: [String] = GPIOChipName.devices()) -> BoardError {
        let reason = String(cString: strerror(code))
        return BoardError("GPIO chip \"\(spec.chip)\" (for \(spec)) cannot be opened: \(reason); "
            + (devices.isEmpty ? "this machine has no /dev/gpiochip*" : "chips here: \(devices.joined(separator: ", "))")
            + "; \(howToCheck)", isConfiguration: code == ENOENT || code == EACCES || code == EPERM)
    }

    static func noSuchOffset(_ spec: GPIOLineSpec, offset: UInt32, lines: Int) -> BoardError {
        BoardError("GPIO chip \"\(spec.chip)\" has no line \(offset) (it has \(lines)); \(howToCheck)", isConfiguration: true)
    }

    static func noSuchName(_ spec: GPIOLineSpec) -> BoardError {
        BoardError("GPIO chip \"\(spec.chip)\" has no line named \"\(spec.line)\"; \(howToCheck)", isConfiguration: true)
    }

    /// A line the kernel would not give: errno says whether another program holds it or the user may not.
    static func cannotRequest(_ spec: GPIOLineSpec, role: String, errno code: Int32) -> BoardError {
        let hint = code == EBUSY ? " (another program holds it: see the consumer in `gpioinfo`)" :
            code == EACCES || code == EPERM ? " (permission: add the user to the gpio group)" : ""
        return BoardError("cannot request \(spec) for the \(role): \(String(cString: strerror(code)))\(hint); \(howToCheck)",
                          isConfiguration: code == EACCES || code == EPERM)
    }
}

/// One change of the button's line, as the kernel saw it: pressed or released (active-low already applied) and
/// the kernel's timestamp of the edge on CLOCK_MONOTONIC.
public struct GPIOEdge: Sendable, Equatable {
    public var pressed: Bool
    public var monotonicNanoseconds: UInt64

    public init(pressed: Bool, monotonicNanoseconds: UInt64) {
        self.pressed = pressed
        self.monotonicNanoseconds = monotonicNanoseconds
    }

    /// When the edge happened on the board's clock: `now` less the edge's age on the kernel's clock, so a board
    /// thread that ran late still measures a press from when the finger moved. An age that cannot be right (from
    /// the future, or older than `maximumAge`: a kernel that stamps with another clock) is taken as now.
    public func instant(now: ContinuousClock.Instant, monotonicNow: UInt64,
                        maximumAge: Duration = .seconds(2)) -> ContinuousClock.Instant {
        guard monotonicNow >= monotonicNanoseconds else { return now }
        let age = Duration.nanoseconds(Int64(clamping: monotonicNow - monotonicNanoseconds))
        return age <= maximumAge ? now - age : now
    }

    /// CLOCK_MONOTONIC now, in nanoseconds: the clock both libgpiod generations stamp edges with on the kernels
    /// Raspberry Pi OS ships (5.7 and later).
    public static func monotonicNow() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }
}

/// How a config's chip names a GPIO chip device, as libgpiod 1.6's `gpiod_chip_open_lookup` took it: a path, a
/// number, a device name (`gpiochip4`) or the chip's label (`pinctrl-rp1`). libgpiod 2 opens paths only, so its
/// backend resolves names here; both backends say the same thing about a chip that is not there.
public enum GPIOChipName: Equatable, Sendable {
    case path(String)
    case label(String)

    public init(_ chip: String) {
        if chip.contains("/") {
            self = .path(chip)
        } else if let number = UInt32(chip) {
            self = .path("/dev/gpiochip\(number)")
        } else if chip.hasPrefix("gpiochip") {
            self = .path("/dev/\(chip)")
        } else {
            self = .label(chip)
        }
    }

    /// The GPIO chip devices this machine has, by name (`gpiochip0`, ...), in number order.
    public static func devices(in directory: String = "/dev") -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.filter { $0.hasPrefix("gpiochip") && UInt32($0.dropFirst(8)) != nil }
            .sorted { UInt32($0.dropFirst(8))! < UInt32($1.dropFirst(8))! }
    }
}

/// What the speaker needs of a GPIO library: the button's and mute switch's edges on a descriptor it can poll,
/// the switch's level, the LEDs' levels. One implementation per libgpiod generation (GPIODv1.swift for 1.6 on
/// Debian 12, GPIODv2.swift for 2.x on Debian 13), chosen at build time from pkg-config's libgpiod version
/// (Package.swift), so that nothing above this file knows which.
protocol GPIOLineBackend: AnyObject {
    /// Requests the lines; every failure names the chip and line and says how to check.
    init(button: GPIOLineSpec?, leds: [LEDRole: GPIOLineSpec], muteSwitch: GPIOLineSpec?, debounce: Duration?) throws(BoardError)
    var buttonFileDescriptor: Int32? { get }
    func readButtonEdges() -> [GPIOEdge]
    var muteSwitchFileDescriptor: Int32? { get }
    func readMuteSwitch() -> Bool?
    /// False when a line would not take its level (its chip went away).
    func setLEDs(_ levels: [LEDRole: Bool]) -> Bool
    /// LEDs off, lines released. Safe to call twice.
    func close()
    static var libraryVersion: String { get }
    /// Which libgpiod generation this backend speaks: 1 or 2.
    static var generation: Int { get }
}

/// The real board: the button and mute switch as input lines with both edges as events (read from their
/// descriptors, never polled), pulled up when active low and down otherwise; the LEDs as output lines.
/// @unchecked: it owns libgpiod's chip and line requests (C handles), used from the board's thread only.
public final class GPIODBoard: @unchecked Sendable {
    // The lines are used from the board's thread only (BoardRunner), which also reopens them.
    private var lines: any GPIOLineBackend
    private let button: GPIOLineSpec?
    private let leds: [LEDRole: GPIOLineSpec]
    private let muteSwitch: GPIOLineSpec?
    private let debounce: Duration?
    static let consumer = "hound-speaker"

    /// Requests the lines; every failure names the chip and line and says how to check. `debounce` is asked of
    /// the kernel for the button and the switch where the library can (libgpiod 2); the board's own debounce
    /// (ButtonGestures) stays either way.
    public init(button: GPIOLineSpec?, leds: [LEDRole: GPIOLineSpec], muteSwitch: GPIOLineSpec? = nil,
                debounce: Duration? = nil) throws(BoardError) {
        self.button = button
        self.leds = leds
        self.muteSwitch = muteSwitch
        self.debounce = debounce
        lines = try GPIODLines(button: button, leds: leds, muteSwitch: muteSwitch, debounce: debounce)
        try powerRing()
    }

    deinit { lines.close() }

    /// Lets go of the lines and requests them again, from the chip as it is now (a chip that went away and came
    /// back is a new device, maybe under another number: a label finds it again). The descriptors change.
    public func reopen() throws(BoardError) {
        lines.close()
        lines = try GPIODLines(button: button, leds: leds, muteSwitch: muteSwitch, debounce: debounce)
        try powerRing()
    }

    /// An LED ring's power line is high from the request on (lines start low); `close` takes it low with the LEDs.
    private func powerRing() throws(BoardError) {
        guard let spec = leds[.ringPower], !lines.setLEDs([.ringPower: true]) else { return }
        let reason = String(cString: strerror(errno))
        lines.close()
        throw BoardError("cannot drive \(spec) high for the \(LEDRole.ringPower.lineName): \(reason); \(BoardError.howToCheck)")
    }

    /// The chips the lines are on, for messages.
    public var chips: [String] {
        Array(Set([button, muteSwitch].compactMap { $0?.chip } + leds.values.map(\.chip))).sorted()
    }

    /// The button's event descriptor, readable when an edge is waiting.
    public var buttonFileDescriptor: Int32? { lines.buttonFileDescriptor }
    /// The waiting edges, oldest first.
    public func readButtonEdges() -> [GPIOEdge] { lines.readButtonEdges() }
    /// The mute switch's event descriptor, readable when it has moved.
    public var muteSwitchFileDescriptor: Int32? { lines.muteSwitchFileDescriptor }
    /// Where the mute switch is now (true: muted), after taking its waiting edges; nil without one.
    public func readMuteSwitch() -> Bool? { lines.readMuteSwitch() }
    /// False when a line would not take its level (its chip went away).
    @discardableResult public func setLEDs(_ levels: [LEDRole: Bool]) -> Bool { lines.setLEDs(levels) }
    /// LEDs off, lines released, chips closed. Safe to call twice.
    public func close() { lines.close() }

    /// The libgpiod this binary was built for and runs with.
    public static var libraryVersion: String { GPIODLines.libraryVersion }
    public static var libraryGeneration: Int { GPIODLines.generation }
}
