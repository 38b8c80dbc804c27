import ArgumentParser
import Board
import CALSA
import CEspeakNG
import CGPIOD
import Foundation
import Houndify
import Audio
import Speech
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
            checkAudio(config, check: report)
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

extension Doctor {
    /// Lists the ALSA devices, opens the configured ones as the speaker will, and checks the voice and earcons.
    func checkAudio(_ config: SpeakerConfiguration, check: (Bool, String, String) -> Void) {
        let devices = ALSADevices.list()
        printLine("info capture devices: \(devices.capture.isEmpty ? "none" : devices.capture.joined(separator: ", "))")
        printLine("info playback devices: \(devices.playback.isEmpty ? "none" : devices.playback.joined(separator: ", "))")
        var capture = CaptureSettings(device: config.audio.input)
        capture.rate = config.audio.inputRate
        capture.channels = config.audio.inputChannels
        capture.channel = config.audio.inputChannel
        do throws(AudioDeviceError) {
            let opened = try ALSACapture(settings: capture, onFrame: { _, _ in })
            check(true, "microphone \"\(config.audio.input)\" opens (\(opened.deviceRate) Hz, \(capture.channels) channel(s), converted to 16 kHz mono)", "")
            opened.close()
        } catch {
            check(false, "microphone: \(error.description)", "set [audio] input to one of the capture devices above")
        }
        do throws(AudioDeviceError) {
            let playback = try ALSAPlayback(device: config.audio.output, sampleRate: 22050)
            playback.close()
            check(true, "speaker \"\(config.audio.output)\" opens", "")
        } catch {
            check(false, "speaker: \(error.description)", "set [audio] output to one of the playback devices above")
        }
        do throws(SpeechError) {
            _ = try SpeechEngine(settings: config.speech.voiceSettings)
            check(true, "espeak-ng voice \"\(config.speech.voice)\"", "")
        } catch {
            check(false, error.message, "apt install espeak-ng-data, or choose a voice from `espeak-ng --voices`")
        }
        do throws(SpeechError) {
            _ = try Earcons.load(overrides: config.audio.earcons)
            check(true, "earcons", "")
        } catch {
            check(false, error.message, "")
        }
    }
}
