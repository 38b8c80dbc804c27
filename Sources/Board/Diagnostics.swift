public import BoardCore
public import Platform

extension GPIODBoard {
    /// The doctor's board check: the configured lines, and whether they can be requested now (they are released at
    /// once, so a running speaker holding them shows here as "busy").
    public static func diagnostics(button: GPIOLineSpec?, leds: [LEDRole: GPIOLineSpec], muteSwitch: GPIOLineSpec? = nil) -> [Diagnostic] {
        let chip = button?.chip ?? leds.values.first?.chip ?? ""
        let lines = Diagnostic(.info, "button \(button.map { "\($0.line)\($0.activeLow ? " (active low)" : "")" } ?? "none"), LEDs "
            + (leds.isEmpty ? "none" : leds.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue)=\($0.value.line)" }.joined(separator: " "))
            + (muteSwitch.map { ", mute switch \($0.line)\($0.activeLow ? " (active low)" : "")" } ?? "")
            + " on \(chip)")
        do {
            let gpio = try GPIODBoard(button: button, leds: leds, muteSwitch: muteSwitch)
            gpio.close()
            return [lines, .check(true, "GPIO lines can be requested")]
        } catch {
            return [lines, .check(false, "GPIO: \(error.message)", advice: "set [board] chip/button/led(s)/mute_switch to match the board, or driver = \"simulated\"")]
        }
    }

    public static var libraryDiagnostic: Diagnostic { Diagnostic(.info, "libgpiod \(libraryVersion)") }
}
