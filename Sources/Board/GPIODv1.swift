#if !LIBGPIOD_V2
import BoardCore
import CGPIOD
import Glibc

/// libgpiod 1.6 (Debian 12, Raspberry Pi OS bookworm): lines looked up on chips opened by name, path, label or
/// number, each requested on its own. The library's flags import as Int (design notes, "C interop").
final class GPIODLines: GPIOLineBackend {
    private var chips: [String: OpaquePointer] = [:]
    private var button: OpaquePointer?
    private var muteSwitch: OpaquePointer?
    private var leds: [LEDRole: OpaquePointer] = [:]

    static let generation = 1
    static var libraryVersion: String { String(cString: gpiod_version_string()) }

    /// libgpiod 1.6 has no debounce setting: `debounce` is the board's own (ButtonGestures).
    init(button buttonSpec: GPIOLineSpec?, leds ledSpecs: [LEDRole: GPIOLineSpec], muteSwitch switchSpec: GPIOLineSpec?,
         debounce: Duration?) throws(BoardError) {
        do throws(BoardError) {
            if let spec = buttonSpec { button = try requestInput(spec, role: "button") }
            if let spec = switchSpec { muteSwitch = try requestInput(spec, role: "mute switch") }
            for (role, spec) in ledSpecs.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                let line = try lookup(spec)
                let flags = spec.activeLow ? Int32(GPIOD_LINE_REQUEST_FLAG_ACTIVE_LOW) : 0
                guard gpiod_line_request_output_flags(line, GPIODBoard.consumer, flags, 0) == 0 else {
                    throw BoardError.cannotRequest(spec, role: role.lineName, errno: errno)
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
        guard gpiod_line_request_both_edges_events_flags(line, GPIODBoard.consumer, flags) == 0 else {
            throw BoardError.cannotRequest(spec, role: role, errno: errno)
        }
        return line
    }

    private func lookup(_ spec: GPIOLineSpec) throws(BoardError) -> OpaquePointer {
        let chip: OpaquePointer
        if let open = chips[spec.chip] {
            chip = open
        } else {
            guard let opened = gpiod_chip_open_lookup(spec.chip) else { throw BoardError.chipCannotOpen(spec, errno: errno) }
            chips[spec.chip] = opened
            chip = opened
        }
        if let offset = UInt32(spec.line) {
            guard let line = gpiod_chip_get_line(chip, offset) else {
                throw BoardError.noSuchOffset(spec, offset: offset, lines: Int(gpiod_chip_num_lines(chip)))
            }
            return line
        }
        guard let line = gpiod_chip_find_line(chip, spec.line) else { throw BoardError.noSuchName(spec) }
        return line
    }

    var buttonFileDescriptor: Int32? { button.map { gpiod_line_event_get_fd($0) } }

    func readButtonEdges() -> [GPIOEdge] {
        guard let line = button else { return [] }
        var edges: [GPIOEdge] = []
        var event = gpiod_line_event()
        var pending = pollfd(fd: gpiod_line_event_get_fd(line), events: Int16(POLLIN), revents: 0)
        while poll(&pending, 1, 0) > 0, gpiod_line_event_read(line, &event) == 0 {
            let stamp = UInt64(max(0, event.ts.tv_sec)) &* 1_000_000_000 &+ UInt64(max(0, event.ts.tv_nsec))
            edges.append(GPIOEdge(pressed: event.event_type == Int32(GPIOD_LINE_EVENT_RISING_EDGE), monotonicNanoseconds: stamp))
        }
        return edges
    }

    var muteSwitchFileDescriptor: Int32? { muteSwitch.map { gpiod_line_event_get_fd($0) } }

    func readMuteSwitch() -> Bool? {
        guard let line = muteSwitch else { return nil }
        var event = gpiod_line_event()
        var pending = pollfd(fd: gpiod_line_event_get_fd(line), events: Int16(POLLIN), revents: 0)
        while poll(&pending, 1, 0) > 0, gpiod_line_event_read(line, &event) == 0 {}
        // The level, not the edges: a bouncing contact ends where it rests.
        let value = gpiod_line_get_value(line)
        return value < 0 ? nil : value == 1
    }

    func setLEDs(_ levels: [LEDRole: Bool]) -> Bool {
        var allSet = true
        for (role, on) in levels { if let line = leds[role], gpiod_line_set_value(line, on ? 1 : 0) < 0 { allSet = false } }
        return allSet
    }

    func close() {
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
#endif
