import BoardCore
import Board
import CALSA
import CEspeakNG
import CGPIOD
import CShims
import FoundationEssentials
import Platform
import Glibc
import HotPhrase
import Houndify
import Audio
import Speech
import SpeakerConfig

/// `hound-speaker doctor`: every check a person setting up a speaker needs, each line "ok", "FAIL" with advice,
/// "warn" or "info".
public struct Doctor {
    let configPath: String?

    public init(configPath: String?) { self.configPath = configPath }

    /// Runs every check, printing as it goes; the number of failures.
    public func run() async -> Int {
        var failures = 0
        func check(_ ok: Bool, _ what: String, advice: String = "") {
            report(ok, what, advice)
        }
        func report(_ ok: Bool, _ what: String, _ advice: String) {
            printLine("\(ok ? "ok  " : "FAIL") \(what)\(ok || advice.isEmpty ? "" : "\n     -> \(advice)")")
            if !ok { failures += 1 }
        }
        let path = ConfigLoader.resolvePath(explicit: configPath)
        var config: SpeakerConfiguration? = nil
        do {
            config = try ConfigLoader.load(path: path)
            if let path {
                check(true, "config \(path) is valid")
            } else {
                printLine("warn no config file (looked for \(ConfigLoader.systemPath) and \(ConfigLoader.repositoryPath)): built-in defaults")
            }
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
            checkCredentialsFile(config, check: report)
            check(config.location.latitude != nil, "location set",
                  advice: "set [location] latitude and longitude so Houndify can answer local questions")
            printLine("info conversation state: \(config.houndify.conversationStateFile.map { $0.isEmpty ? "in memory only" : $0 } ?? "in memory only")")
        }
        checkClock(check: report)
        if let config {
            if await checkEndpoint(config, check: report) { await checkCredentials(config, check: report) }
            checkBoard(config.board, check: report)
            checkAudio(config, check: report)
            checkHotPhrase(config.hotphrase, check: report)
        }
        printLine("info libcurl \(HoundifyClient.transportVersion)")
        printLine("info libasound \(String(cString: snd_asoundlib_version()))")
        printLine("info libgpiod \(String(cString: gpiod_version_string()))")
        printLine("info espeak-ng \(String(cString: espeak_Info(nil)))")
        return failures
    }
}

extension Doctor {
    /// The model must load (what `run` does at start-up), and its threshold is shown for the sensitivity.
    func checkHotPhrase(_ settings: SpeakerConfiguration.HotPhraseSection, check: (Bool, String, String) -> Void) {
        guard settings.enabled else {
            printLine("info hot phrase off ([hotphrase] enabled = false): the button only")
            return
        }
        do {
            let model = try HotPhraseModel.locate(settings.model)
            let threshold = HotPhraseDetector.threshold(sensitivity: settings.sensitivity, model: model)
            check(true, "hot-phrase model \(model.path) loads (\"\(model.phrase)\", \(model.fileBytes) bytes; "
                               + String(cFormat: "sensitivity %.2f -> threshold %.6f)", settings.sensitivity, threshold), "")
        } catch {
            check(false, "\(error)", "install share/hotphrase/ok-hound.hpm to /usr/share/hound-speaker/hotphrase (deploy/install.sh does), set [hotphrase] model, or [hotphrase] enabled = false")
        }
    }

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

extension Doctor {
    /// The service runs as the `hound-speaker` user (deploy/hound-speaker.service): a config holding the key must
    /// be private (load() already refuses one readable by everyone) and readable by that user.
    func checkCredentialsFile(_ config: SpeakerConfiguration, check: (Bool, String, String) -> Void) {
        guard let path = config.path, config.clientKeySource == path else {
            if config.clientKeySource != "none" { printLine("info the client key comes from \(config.clientKeySource), not a file") }
            return
        }
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        let mode = Int(info.st_mode) & 0o777
        check(mode & 0o077 == 0, "credentials file \(path) is private (mode \(String(cFormat: "%03o", mode)))",
              "chmod 600 \(path): it holds the client key")
        if let user = getpwnam(Service.user) {
            let uid = user.pointee.pw_uid, gid = user.pointee.pw_gid
            let readable = uid == info.st_uid ? (mode & 0o400 != 0) : (gid == info.st_gid && mode & 0o040 != 0)
            let owner = getpwuid(info.st_uid).map { String(cString: $0.pointee.pw_name) } ?? "uid \(info.st_uid)"
            check(readable, "the service user \(Service.user) can read \(path) (owner \(owner))",
                  "sudo chown \(Service.user): \(path)   (keep mode 600)")
        }
    }

    /// Houndify signs each request with the time, and TLS certificates have validity dates: a clock that was never
    /// set (a Pi has no battery clock) breaks both. The kernel's NTP state (adjtimex(2), what timedatectl's
    /// NTPSynchronized reports) works with or without systemd.
    func checkClock(check: (Bool, String, String) -> Void) {
        var esterror = 0
        let state = hs_clock_synchronized(&esterror)
        let synchronized = state == 1
        check(synchronized, synchronized ? "clock synchronized (estimated error \(esterror / 1000) ms)"
                                         : state < 0 ? "clock: adjtimex failed (\(String(cString: strerror(errno))))" : "clock not synchronized (kernel NTP state: unsynchronized)",
              "enable NTP: sudo timedatectl set-ntp true (systemd-timesyncd), and check the network; `timedatectl` shows the state")
    }

    /// One signed text query ("what time is it"): the only way to know that Houndify accepts the client ID and key
    /// (a wrong key passes every other check). Conversation state is neither sent nor kept.
    func checkCredentials(_ config: SpeakerConfiguration, check: (Bool, String, String) -> Void) async {
        guard !config.houndify.clientID.isEmpty, !config.houndify.clientKey.isEmpty else { return }
        let client: HoundifyClient
        do {
            client = try HoundifyClient(configuration: try config.houndifyClientConfiguration(), conversation: ConversationStore())
        } catch {
            check(false, "Houndify credentials: \(error)", "copy the Client ID and Client Key from the Houndify dashboard again")
            return
        }
        let started = ContinuousClock.now
        do {
            let response = try await client.textSearch("what time is it")
            let ms = Int((ContinuousClock.now - started) / .milliseconds(1))
            let said = response.best?.textToSpeak ?? ""
            check(true, "Houndify accepted the client ID and key: a signed query was answered in \(ms) ms"
                        + (said.isEmpty ? "" : " (\"\(HoundifyError.clip(said))\")"), "")
        } catch {
            switch error {
            case .authenticationFailed:
                check(false, "Houndify refused the client ID or key: \(error) [\(error.code)]",
                      "copy both from the Houndify dashboard (the client's page) again; the key is 88 characters ending in =="
                          + "; a clock that is far off is refused too (see the clock check)")
            default:
                check(false, "a signed query to Houndify failed: \(error) [\(error.code)]",
                      "the endpoint answers but a search does not: check [houndify] endpoint, and `hound-speaker text \"what time is it\"` for the same error")
            }
        }
    }

    /// DNS, TCP, TLS, then any HTTP answer from the endpoint, each step named when it is the one that fails.
    /// True when the endpoint answered.
    @discardableResult
    func checkEndpoint(_ config: SpeakerConfiguration, check: (Bool, String, String) -> Void) async -> Bool {
        let endpoint = config.houndify.endpoint
        let host = URL(string: endpoint)?.host ?? endpoint
        let probe = await EndpointProbe.run(endpoint: endpoint, timeoutMS: max(1000, Int(config.houndify.connectTimeout * 1000)))
        let steps = [("DNS", probe.dnsMS), ("connect", probe.connectMS), ("TLS", probe.tlsMS)]
            .compactMap { name, ms in ms.map { "\(name) \($0) ms" } }.joined(separator: ", ")
        switch probe.outcome {
        case .reached:
            check(true, "Houndify endpoint \(endpoint) reached: HTTP \(probe.httpStatus)\(steps.isEmpty ? "" : " (\(steps))")", "")
            return true
        case .dnsFailed:
            check(false, "Houndify endpoint \(endpoint): DNS cannot resolve \(host) (\(probe.detail))",
                  "check the network and the DNS server (/etc/resolv.conf); `getent hosts \(host)` must print an address")
        case .connectFailed:
            check(false, "Houndify endpoint \(endpoint): TCP connection failed (\(probe.detail))",
                  "\(host) resolved but nothing accepted the connection: no route, a firewall, or a wrong port in [houndify] endpoint")
        case .tlsFailed:
            check(false, "Houndify endpoint \(endpoint): TLS failed (\(probe.detail))",
                  "a clock far off makes certificates look invalid (see the clock check); apt install ca-certificates; a proxy may be intercepting")
        case .noHTTPAnswer:
            check(false, "Houndify endpoint \(endpoint): connected but no HTTP answer (\(probe.detail))",
                  "something between the speaker and \(host) (a proxy or captive portal?) is in the way: try `curl -I \(endpoint)`")
        case .badURL:
            check(false, "Houndify endpoint \(endpoint): not a URL libcurl can use (\(probe.detail))", "set [houndify] endpoint to an https:// URL")
        }
        return false
    }
}

/// The system user deploy/install.sh creates and deploy/hound-speaker.service runs as; HOUND_SPEAKER_SERVICE_USER
/// names another (a unit edited to run as someone else).
enum Service {
    static var user: String { ProcessInfo.processInfo.environment["HOUND_SPEAKER_SERVICE_USER"] ?? "hound-speaker" }
}
