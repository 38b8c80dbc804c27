#if LIBGPIOD_V2
import BoardCore
import CGPIOD
import Glibc

/// libgpiod 2.x (Debian 13, Raspberry Pi OS trixie): a chip opened by path (names, numbers and labels resolved
/// by GPIOChipName), then one request per line from line settings, a line config and a request config. Edges are
/// read from the request's descriptor into an event buffer, with the kernel's CLOCK_MONOTONIC timestamps.
final class GPIODLines: GPIOLineBackend {
    private struct Line {
        var request: OpaquePointer
        var offset: UInt32
    }
    private var button: Line?
    private var muteSwitch: Line?
    private var leds: [LEDRole: Line] = [:]
    private let events: OpaquePointer?
    private static let eventCapacity = 16

    static let generation = 2
    static var libraryVersion: String { String(cString: gpiod_api_version()) }

    init(button buttonSpec: GPIOLineSpec?, leds ledSpecs: [LEDRole: GPIOLineSpec], muteSwitch switchSpec: GPIOLineSpec?,
         debounce: Duration?) throws(BoardError) {
        events = gpiod_edge_event_buffer_new(Self.eventCapacity)
        // A request outlives its chip handle: the chips are closed once every line is requested (or one fails).
        var chips: [String: OpaquePointer] = [:]
        defer { for chip in chips.values { gpiod_chip_close(chip) } }
        do throws(BoardError) {
            if let spec = buttonSpec { button = try Self.requestInput(spec, role: "button", debounce: debounce, chips: &chips) }
            if let spec = switchSpec { muteSwitch = try Self.requestInput(spec, role: "mute switch", debounce: debounce, chips: &chips) }
            for (role, spec) in ledSpecs.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                leds[role] = try Self.request(spec, role: role.lineName, chips: &chips) { settings in
                    gpiod_line_settings_set_direction(settings, GPIOD_LINE_DIRECTION_OUTPUT)
                    gpiod_line_settings_set_output_value(settings, GPIOD_LINE_VALUE_INACTIVE)
                    gpiod_line_settings_set_active_low(settings, spec.activeLow)
                }
            }
        } catch {
            close()
            throw error
        }
    }

    deinit {
        close()
        if let events { gpiod_edge_event_buffer_free(events) }
    }

    /// A contact to ground (active low, pulled up) or to 3.3 V (pulled down), both edges as events, debounced by
    /// the kernel where it can (gpiolib debounces in software on chips that cannot in hardware).
    private static func requestInput(_ spec: GPIOLineSpec, role: String, debounce: Duration?,
                                     chips: inout [String: OpaquePointer]) throws(BoardError) -> Line {
        try request(spec, role: role, chips: &chips) { settings in
            gpiod_line_settings_set_direction(settings, GPIOD_LINE_DIRECTION_INPUT)
            gpiod_line_settings_set_edge_detection(settings, GPIOD_LINE_EDGE_BOTH)
            gpiod_line_settings_set_bias(settings, spec.activeLow ? GPIOD_LINE_BIAS_PULL_UP : GPIOD_LINE_BIAS_PULL_DOWN)
            gpiod_line_settings_set_active_low(settings, spec.activeLow)
            gpiod_line_settings_set_event_clock(settings, GPIOD_LINE_CLOCK_MONOTONIC)
            if let debounce {
                let micros = (debounce / .microseconds(1)).rounded()
                gpiod_line_settings_set_debounce_period_us(settings, micros > 0 && micros < 10_000_000 ? UInt(micros) : 0)
            }
        }
    }

    /// One line of `spec`, requested with the settings `configure` makes.
    private static func request(_ spec: GPIOLineSpec, role: String, chips: inout [String: OpaquePointer],
                                configure: (OpaquePointer) -> Void) throws(BoardError) -> Line {
        let chip = try open(spec, chips: &chips)
        let offset = try lookup(spec, on: chip)
        guard let settings = gpiod_line_settings_new(), let lineConfig = gpiod_line_config_new(),
              let requestConfig = gpiod_request_config_new() else {
            throw BoardError.cannotRequest(spec, role: role, errno: ENOMEM)
        }
        defer {
            gpiod_line_settings_free(settings)
            gpiod_line_config_free(lineConfig)
            gpiod_request_config_free(requestConfig)
        }
        configure(settings)
        var offsets = [offset]
        guard gpiod_line_config_add_line_settings(lineConfig, &offsets, 1, settings) == 0 else {
            throw BoardError.cannotRequest(spec, role: role, errno: errno)
        }
        gpiod_request_config_set_consumer(requestConfig, GPIODBoard.consumer)
        var request = gpiod_chip_request_lines(chip, requestConfig, lineConfig)
        var code = errno
        if request == nil, code == EINVAL || code == EOPNOTSUPP, gpiod_line_settings_get_debounce_period_us(settings) > 0 {
            // A kernel that refuses the debounce itself: the board's own debounce (ButtonGestures) does it alone.
            gpiod_line_settings_set_debounce_period_us(settings, 0)
            gpiod_line_config_reset(lineConfig)
            if gpiod_line_config_add_line_settings(lineConfig, &offsets, 1, settings) == 0 {
                request = gpiod_chip_request_lines(chip, requestConfig, lineConfig)
                code = errno
            }
        }
        guard let request else { throw BoardError.cannotRequest(spec, role: role, errno: code) }
        return Line(request: request, offset: offset)
    }

    /// The chip `spec` names, opened once for all the lines on it.
    private static func open(_ spec: GPIOLineSpec, chips: inout [String: OpaquePointer]) throws(BoardError) -> OpaquePointer {
        if let chip = chips[spec.chip] { return chip }
        let chip: OpaquePointer
        switch GPIOChipName(spec.chip) {
        case .path(let path):
            guard let opened = gpiod_chip_open(path) else { throw BoardError.chipCannotOpen(spec, errno: errno) }
            chip = opened
        case .label(let label):
            // As libgpiod 1.6's lookup did: the first chip whose label (or name) is this one.
            var refused: Int32 = 0
            var found: OpaquePointer?
            for device in GPIOChipName.devices() where found == nil {
                guard let candidate = gpiod_chip_open("/dev/\(device)") else { refused = errno; continue }
                if let info = gpiod_chip_get_info(candidate) {
                    let matches = String(cString: gpiod_chip_info_get_label(info)) == label
                        || String(cString: gpiod_chip_info_get_name(info)) == label
                    gpiod_chip_info_free(info)
                    if matches { found = candidate; continue }
                }
                gpiod_chip_close(candidate)
            }
            guard let opened = found else {
                throw BoardError.chipCannotOpen(spec, errno: refused == EACCES || refused == EPERM ? refused : ENOENT)
            }
            chip = opened
        }
        chips[spec.chip] = chip
        return chip
    }

    /// The line's offset: a number is checked against the chip's count, a name looked up.
    private static func lookup(_ spec: GPIOLineSpec, on chip: OpaquePointer) throws(BoardError) -> UInt32 {
        if let offset = UInt32(spec.line) {
            var count = 0
            if let info = gpiod_chip_get_info(chip) {
                count = gpiod_chip_info_get_num_lines(info)
                gpiod_chip_info_free(info)
            }
            guard Int(offset) < count else { throw BoardError.noSuchOffset(spec, offset: offset, lines: count) }
            return offset
        }
        let offset = gpiod_chip_get_line_offset_from_name(chip, spec.line)
        guard offset >= 0 else { throw BoardError.noSuchName(spec) }
        return UInt32(offset)
    }

    var buttonFileDescriptor: Int32? { button.map { gpiod_line_request_get_fd($0.request) } }

    /// Every edge waiting on `line`, oldest first, without blocking.
    private func drain(_ line: Line) -> [GPIOEdge] {
        guard let events else { return [] }
        var edges: [GPIOEdge] = []
        var pending = pollfd(fd: gpiod_line_request_get_fd(line.request), events: Int16(POLLIN), revents: 0)
        while poll(&pending, 1, 0) > 0 {
            let count = gpiod_line_request_read_edge_events(line.request, events, Self.eventCapacity)
            guard count > 0 else { break }
            for index in 0..<Int(count) {
                guard let event = gpiod_edge_event_buffer_get_event(events, UInt(index)) else { continue }
                edges.append(GPIOEdge(pressed: gpiod_edge_event_get_event_type(event) == GPIOD_EDGE_EVENT_RISING_EDGE,
                                      monotonicNanoseconds: gpiod_edge_event_get_timestamp_ns(event)))
            }
        }
        return edges
    }

    func readButtonEdges() -> [GPIOEdge] { button.map(drain) ?? [] }

    var muteSwitchFileDescriptor: Int32? { muteSwitch.map { gpiod_line_request_get_fd($0.request) } }

    func readMuteSwitch() -> Bool? {
        guard let line = muteSwitch else { return nil }
        _ = drain(line)
        // The level, not the edges: a bouncing contact ends where it rests.
        let value = gpiod_line_request_get_value(line.request, line.offset)
        return value == GPIOD_LINE_VALUE_ERROR ? nil : value == GPIOD_LINE_VALUE_ACTIVE
    }

    func setLEDs(_ levels: [LEDRole: Bool]) -> Bool {
        var allSet = true
        for (role, on) in levels {
            guard let line = leds[role] else { continue }
            if gpiod_line_request_set_value(line.request, line.offset, on ? GPIOD_LINE_VALUE_ACTIVE : GPIOD_LINE_VALUE_INACTIVE) < 0 { allSet = false }
        }
        return allSet
    }

    func close() {
        for line in leds.values {
            gpiod_line_request_set_value(line.request, line.offset, GPIOD_LINE_VALUE_INACTIVE)
            gpiod_line_request_release(line.request)
        }
        leds.removeAll()
        if let line = button { gpiod_line_request_release(line.request) }
        button = nil
        if let line = muteSwitch { gpiod_line_request_release(line.request) }
        muteSwitch = nil
    }
}
#endif
