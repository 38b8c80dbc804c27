public import Board
public import BoardCore
public import SpeakerConfig

/// The board from config: which lines, which LEDs, the gesture settings.
public enum BoardSetup {
    /// The mute switch's line, if the board has one.
    public static func muteSwitch(_ board: SpeakerConfiguration.BoardSection) -> GPIOLineSpec? {
        board.muteSwitch.isEmpty ? nil : GPIOLineSpec(chip: board.chip, line: board.muteSwitch, activeLow: board.muteSwitchActiveLow)
    }

    public static func specs(_ board: SpeakerConfiguration.BoardSection) -> (button: GPIOLineSpec?, leds: [LEDRole: GPIOLineSpec]) {
        let button = board.button.isEmpty ? nil : GPIOLineSpec(chip: board.chip, line: board.button, activeLow: board.buttonActiveLow)
        var leds: [LEDRole: GPIOLineSpec] = [:]
        if !board.led.isEmpty {
            leds[.status] = GPIOLineSpec(chip: board.chip, line: board.led, activeLow: board.ledsActiveLow)
        } else {
            for (role, line) in board.leds { leds[role] = GPIOLineSpec(chip: board.chip, line: line, activeLow: board.ledsActiveLow) }
        }
        if board.hasRing, let line = board.ring.powerLine {
            leds[.ringPower] = GPIOLineSpec(chip: board.chip, line: line, activeLow: false)
        }
        return (button, leds)
    }
}
