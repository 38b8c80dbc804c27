import Foundation
import BoardCore
import Testing
@testable import Board

/// The real libgpiod driver against the kernel's gpio-sim (configfs), where a machine has it: a simulated chip
/// whose line levels the test sets through sysfs. These machines have no gpiochip and no gpio-sim, so the
/// suite is skipped here with that reason; the driver's error paths are tested in GPIODriverTests.
enum GPIOSim {
    static let root = "/sys/kernel/config/gpio-sim"
    static var available: Bool { FileManager.default.fileExists(atPath: root) && getuid() == 0 }

    struct Chip {
        let configDir: String
        let chipName: String
        let deviceDir: String

        /// A bank of 32 lines, with GPIO17 and GPIO22 named.
        static func make() throws -> Chip {
            let dir = "\(root)/hound-speaker-\(getpid())"
            let fm = FileManager.default
            try fm.createDirectory(atPath: "\(dir)/bank0", withIntermediateDirectories: true)
            try write("32", "\(dir)/bank0/num_lines")
            for (offset, name) in [(17, "GPIO17"), (22, "GPIO22")] {
                try fm.createDirectory(atPath: "\(dir)/bank0/line\(offset)", withIntermediateDirectories: true)
                try write(name, "\(dir)/bank0/line\(offset)/name")
            }
            try write("1", "\(dir)/live")
            let chip = try String(contentsOfFile: "\(dir)/bank0/chip_name", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            let device = try String(contentsOfFile: "\(dir)/dev_name", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            return Chip(configDir: dir, chipName: chip, deviceDir: "/sys/devices/platform/\(device)/\(chip)")
        }

        /// Pulls an input line, as a button closing to ground ("pull-down") or opening ("pull-up") does.
        func pull(_ offset: Int, _ direction: String) throws { try Self.write(direction, "\(deviceDir)/sim_gpio\(offset)/pull") }
        func value(_ offset: Int) throws -> String {
            try String(contentsOfFile: "\(deviceDir)/sim_gpio\(offset)/value", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        }

        func remove() {
            try? Self.write("0", "\(configDir)/live")
            for line in ["line17", "line22"] { rmdir("\(configDir)/bank0/\(line)") }
            rmdir("\(configDir)/bank0")
            rmdir(configDir)
        }

        static func write(_ text: String, _ path: String) throws { try Data(text.utf8).write(to: URL(fileURLWithPath: path)) }
    }
}

@Suite(.enabled(if: GPIOSim.available, "gpio-sim (configfs) is not available here (no /sys/kernel/config/gpio-sim, or not root): the real GPIO driver is tested only for its errors"))
struct GPIOSimTests {
    /// The 4-Mic Array's ring power: high from the request on, low once the board lets go.
    @Test func anLEDRingsPowerLineIsHighWhileTheBoardRuns() throws {
        let chip = try GPIOSim.Chip.make()
        defer { chip.remove() }
        let board = try GPIODBoard(button: nil, leds: [.ringPower: GPIOLineSpec(chip: chip.chipName, line: "5", activeLow: false)])
        #expect(try chip.value(5) == "1")
        board.close()
        #expect(try chip.value(5) == "0")
    }

    @Test func buttonEdgesAndLEDsThroughTheRealDriver() throws {
        let chip = try GPIOSim.Chip.make()
        defer { chip.remove() }
        try chip.pull(17, "pull-up")  // released: the line idles high
        let board = try GPIODBoard(button: GPIOLineSpec(chip: chip.chipName, line: "GPIO17", activeLow: true),
                                   leds: [.listening: GPIOLineSpec(chip: chip.chipName, line: "GPIO22", activeLow: false)])
        defer { board.close() }
        let fd = try #require(board.buttonFileDescriptor)
        try chip.pull(17, "pull-down")  // pressed: the button shorts the line to ground
        var fds = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
        #expect(poll(&fds, 1, 5000) == 1)
        let press = board.readButtonEdges()
        #expect(press.map(\.pressed) == [true])
        // The kernel's own timestamp, on CLOCK_MONOTONIC: in the past, and recent.
        let now = GPIOEdge.monotonicNow()
        #expect(press.allSatisfy { $0.monotonicNanoseconds <= now && now - $0.monotonicNanoseconds < 5_000_000_000 })
        try chip.pull(17, "pull-up")
        #expect(poll(&fds, 1, 5000) == 1)
        #expect(board.readButtonEdges().map(\.pressed) == [false])
        board.setLEDs([.listening: true])
        #expect(try chip.value(22) == "1")
        board.close()
        #expect(try chip.value(22) == "0")  // released with the LED off
    }
}
