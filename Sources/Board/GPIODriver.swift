import CGPIOD
public import BoardCore
import FoundationEssentials
import Glibc

/// Where a GPIO line is: a chip (name such as `gpiochip0`, a path, a label or a number, as libgpiod's
/// lookup takes) and a line (a name such as `GPIO17`, or an offset).
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
}

/// The real board through libgpiod 1.6 (Raspberry Pi OS bookworm, Debian 12). The button is requested for
/// both edges and read from the line's event file descriptor (no polling); LEDs are output lines. Everything
/// libgpiod-specific lives in this file, so a libgpiod 2.x backend (Pi OS trixie) can sit beside it.
public final class GPIODBoard: @unchecked Sendable {
    private var chips: [String: OpaquePointer] = [:]
    private var button: OpaquePointer?
    private var muteSwitch: OpaquePointer?
    private var leds: [LEDRole: OpaquePointer] = [:]
    private static let consumer = "hound-speaker"

    /// Requests the lines; every failure names the chip and line and says how to check.
    public init(button buttonSpec: GPIOLineSpec?, leds ledSpecs: [LEDRole: GPIOLineSpec], muteSwitch switchSpec: GPIOLineSpec? = nil) throws(BoardError) {
        do throws(BoardError) {
            if let spec = buttonSpec { button = try requestInput(spec, role: "button") }
            if let spec = switchSpec { muteSwitch = try requestInput(spec, role: "mute switch") }
            for (role, spec) in ledSpecs.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                let line = try lookup(spec)
                let flags = spec.activeLow ? Int32(GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW) : 0
                guard gpiod_line_request_output_flags(line, Self.consumer, flags, 0) == 0 else {
                    throw Self.requestError(spec, role: "\(role.rawValue) LED")
                }
                leds[role] = line
            }
        } catch {
            close()
            throw error
        }
    }

    deinit { close() }

    /// A contact to ground (active low, pulled up) or to 3.3 V (pulled down), both edges as events.
    private func requestInput(_ spec: GPIOLineSpec, role: String) throws(BoardError) -> OpaquePointer {
        let line = try lookup(spec)
        var flags = Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_UP)
        if !spec.activeLow { flags = Int32(GPIOD_LINE_REQUEST_FLAG_BIAS_PULL_DOWN) }
        if spec.activeLow { flags |= Int32(GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW) }
        guard gpiod_line_request_both_edges_events_flags(line, Self.consumer, flags) == 0 else {
            throw Self.requestError(spec, role: role)
        }
        return line
    }

    private func lookup(_ spec: GPIOLineSpec) throws(BoardError) -> OpaquePointer {
        let chip: OpaquePointer
        if let open = chips[spec.chip] {
            chip = open
        } else {
            guard let opened = gpiod_chip_open_lookup(spec.chip) else {
                let code = errno
                let reason = String(cString: strerror(code))
                let devices = (try? FileManager.default.contentsOfDirectory(atPath: "/dev"))?.filter { $0.hasPrefix("gpiochip") }.sorted() ?? []
                throw BoardError("GPIO chip \"\(spec.chip)\" (for \(spec)) cannot be opened: \(reason); "
                    + (devices.isEmpty ? "this machine has no /dev/gpiochip*" : "chips here: \(devices.joined(separator: ", "))")
                    + "; \(BoardError.howToCheck)", isConfiguration: code == ENOENT || code == EACCES || code == EPERM)
            }
            chips[spec.chip] = opened
            chip = opened
        }
        if let offset = UInt32(spec.line) {
            guard let line = gpiod_chip_get_line(chip, offset) else {
                throw BoardError("GPIO chip \"\(spec.chip)\" has no line \(offset) (it has \(gpiod_chip_num_lines(chip))); \(BoardError.howToCheck)",
                                 isConfiguration: true)
            }
            return line
        }
        guard let line = gpiod_chip_find_line(chip, spec.line) else {
            throw BoardError("GPIO chip \"\(spec.chip)\" has no line named \"\(spec.line)\"; \(BoardError.howToCheck)", isConfiguration: true)
        }
        return line
    }

    private static func requestError(_ spec: GPIOLineSpec, role: String) -> BoardError {
        let code = errno
        let hint = code == EBUSY ? " (another program holds it: see the consumer in `gpioinfo`)" :
            code == EACCES || code == EPERM ? " (permission: add the user to the gpio group)" : ""
        return BoardError("cannot request \(spec) for the \(role): \(String(cString: strerror(code)))\(hint); \(BoardError.howToCheck)",
                          isConfiguration: code == EACCES || code == EPERM)
    }

    /// The button's event descriptor, readable when an edge is waiting.
    public var buttonFileDescriptor: Int32? { button.map { gpiod_line_event_get_fd($0) } }

    /// Reads the waiting edges: (pressed, when). Active-low is already applied by the kernel.
    public func readButtonEdges() -> [Bool] {
        guard let line = button else { return [] }
        var edges: [Bool] = []
        var event = gpiod_line_event()
        var pending = pollfd(fd: gpiod_line_event_get_fd(line), events: Int16(POLLIN), revents: 0)
        while poll(&pending, 1, 0) > 0, gpiod_line_event_read(line, &event) == 0 {
            edges.append(event.event_type == Int32(GPIOD_LINE_EVENT_RISING_EDGE))
        }
        return edges
    }

    /// The mute switch's event descriptor, readable when it has moved.
    public var muteSwitchFileDescriptor: Int32? { muteSwitch.map { gpiod_line_event_get_fd($0) } }

    /// Where the mute switch is now (true: muted), after taking its waiting edges; nil without one.
    public func readMuteSwitch() -> Bool? {
        guard let line = muteSwitch else { return nil }
        var event = gpiod_line_event()
        var pending = pollfd(fd: gpiod_line_event_get_fd(line), events: Int16(POLLIN), revents: 0)
        while poll(&pending, 1, 0) > 0, gpiod_line_event_read(line, &event) == 0 {}
        // The level, not the edges: a bouncing contact ends where it rests.
        let value = gpiod_line_get_value(line)
        return value < 0 ? nil : value == 1
    }

    public func setLEDs(_ levels: [LEDRole: Bool]) {
        for (role, on) in levels { if let line = leds[role] { gpiod_line_set_value(line, on ? 1 : 0) } }
    }

    /// LEDs off, lines released, chips closed. Safe to call twice.
    public func close() {
        for line in leds.values { gpiod_line_set_value(line, 0); gpiod_line_release(line) }
        leds.removeAll()
        if let line = button { gpiod_line_release(line) }
        button = nil
        if let line = muteSwitch { gpiod_line_release(line) }
        muteSwitch = nil
        for chip in chips.values { gpiod_chip_close(chip) }
        chips.removeAll()
    }
}
