import ArgumentParser
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
        }
        printLine("info libcurl \(HoundifyClient.transportVersion)")
        printLine("info libasound \(String(cString: snd_asoundlib_version()))")
        printLine("info libgpiod \(String(cString: gpiod_version_string()))")
        printLine("info espeak-ng \(String(cString: espeak_Info(nil)))")
        if failures > 0 { throw ExitCode(1) }
    }
}
