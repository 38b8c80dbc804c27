import ArgumentParser
import Board
import CALSA
import CEspeakNG
import CGPIOD
import Foundation
import Houndify
import SpeakerConfig

struct Doctor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Check the config, the credentials and the libraries, with advice.")
    @OptionGroup var options: ConfigOption

    func run() async throws {
        var failures = 0
        func check(_ ok: Bool, _ what: String, advice: String = "") {
            report(ok, what, advice)
        }
        func report(_ ok: Bool, _ what: String, _ advice: String) {
            printLine("\(ok ? "ok  " : "FAIL") \(what)\(ok || advice.isEmpty ? "" : "\n     -> \(advice)")")
            if !ok { failures += 1 }
        }
        let path = ConfigLoader.resolvePath(explicit: options.config)
        var config: SpeakerConfiguration? = nil
        do {
            config = try ConfigLoader.load(path: path)
            check(true, "config \(path ?? "(none found: built-in defaults)") is valid")
        } catch {
            check(false, "config: \(error)", advice: "fix the line named above; config/speaker.toml documents every key")
        }
        if let config {
            for warning in config.warnings { printLine("warn \(warning)") }
            check(!config.houndify.clientID.isEmpty, "Houndify client ID (from \(config.clientIDSource))",
                  advice: "set [houndify] client_id or HOUNDIFY_CLIENT_ID (from the Houndify dashboard)")
            // The key is never shown: only where it came from.
            check(!config.houndify.clientKey.isEmpty, "Houndify client key (from \(config.clientKeySource))",
                  advice: "set [houndify] client_key or HOUNDIFY_CLIENT_KEY, in a file of mode 0600")
            check(config.location.latitude != nil, "location set",
                  advice: "set [location] latitude and longitude so Houndify can answer local questions")
            printLine("info endpoint \(config.houndify.endpoint)")
            checkBoard(config.board, check: report)
        }
        printLine("info libcurl \(HoundifyClient.transportVersion)")
        printLine("info libasound \(String(cString: snd_asoundlib_version()))")
        printLine("info libgpiod \(String(cString: gpiod_version_string()))")
        printLine("info espeak-ng \(String(cString: espeak_Info(nil)))")
        if failures > 0 { throw ExitCode(1) }
    }
}

extension Doctor {
    /// Reports the configured lines and whether they can be requested now (they are released at once).
    func checkBoard(_ board: SpeakerConfiguration.BoardSection, check: (Bool, String, String) -> Void) {
        let origin = board.profile.isEmpty ? "" : " (profile \(board.profile))"
        guard board.driver == "gpiod" else {
            printLine("info board: simulated\(origin): keyboard button, LEDs drawn on the terminal")
            return
        }
        let (button, leds) = BoardSetup.specs(board)
        printLine("info board\(origin): button \(button.map { "\($0.line)\($0.activeLow ? " (active low)" : "")" } ?? "none"), "
            + "LEDs \(leds.isEmpty ? "none" : leds.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue)=\($0.value.line)" }.joined(separator: " ")) on \(board.chip)")
        do {
            let gpio = try GPIODBoard(button: button, leds: leds)
            gpio.close()
            check(true, "GPIO lines can be requested", "")
        } catch {
            check(false, "GPIO: \(error.message)", "set [board] chip/button/led(s) to match the board, or driver = \"simulated\"")
        }
    }
}
