import Assembly
import HoundifyAssembly
import DeviceAssembly
import Audio
import CommandSupport
import AudioCore
import Board
import BoardCore
import FoundationEssentials
import HotPhrase
import OfflineRecognition
import Houndify
import HoundifyCore
import Platform
import Speech
import SpeakerConfig
import SpeakerCore

/// `hound-speaker doctor`: every check a person setting up a speaker needs, each line "ok", "FAIL" with advice,
/// "warn" or "info". Each subsystem checks itself (its `diagnostics()`); this only puts them in order and prints.
public struct Doctor {
    let configPath: String?

    public init(configPath: String?) { self.configPath = configPath }

    /// Runs every check, printing as it goes; the number of failures.
    public func run() async -> Int {
        var failures = 0
        func show(_ diagnostics: [Diagnostic]) {
            for diagnostic in diagnostics {
                printLine(diagnostic.description)
                if diagnostic.status == .fail { failures += 1 }
            }
        }
        let path = ConfigLoader.resolvePath(explicit: configPath)
        var config: SpeakerConfiguration? = nil
        do {
            config = try ConfigLoader.load(path: path)
            show([path.map { Diagnostic.check(true, "config \($0) is valid") }
                  ?? Diagnostic(.warn, "no config file (looked for \(ConfigLoader.systemPath) and \(ConfigLoader.repositoryPath)): built-in defaults")])
        } catch {
            show([.check(false, "config: \(error)", advice: "fix the line named above; config/speaker.toml documents every key")])
        }
        if let config { show(config.diagnostics(serviceUser: Service.user)) }
        show([HoundifyDiagnostics.clock()])
        if let config {
            let endpoint = await HoundifyDiagnostics.endpoint(config.houndify.endpoint, timeoutMS: max(1000, Int(config.houndify.connectTimeout * 1000)))
            show([endpoint.diagnostic])
            if endpoint.reached { show(await credentials(config)) }
            show(board(config.board))
            show(AudioDiagnostics.diagnostics(capture: config.audio.capture, output: config.audio.output))
            if config.audio.echo.enabled {
                show([AudioDiagnostics.echoDelay(capture: config.audio.capture, output: config.audio.output, settings: config.audio.echo)])
            }
            show(SpeechEngine.diagnostics(voice: config.speech, earcons: config.audio.earcons))
            show(HotPhraseModel.diagnostics(config.hotphrase))
            show([OfflineRecogniser.diagnostic(enabled: config.speaker.machine.offlineCommands)])
        }
        show([HoundifyDiagnostics.libraryVersion, AudioDiagnostics.libraryVersion, GPIODBoard.libraryDiagnostic, SpeechEngine.libraryVersion])
        return failures
    }

    /// One signed query, when there are credentials to sign with; conversation state is neither sent nor kept.
    func credentials(_ config: SpeakerConfiguration) async -> [Diagnostic] {
        guard !config.houndify.clientID.isEmpty, !config.houndify.clientKey.isEmpty else { return [] }
        do {
            let client = try HoundifyClient(configuration: try config.houndifyClientConfiguration(), conversation: ConversationStore())
            return [await HoundifyDiagnostics.credentials(client)]
        } catch {
            return [.check(false, "Houndify credentials: \(error)", advice: "copy the Client ID and Client Key from the Houndify dashboard again")]
        }
    }

    func board(_ board: SpeakerConfiguration.BoardSection) -> [Diagnostic] {
        let origin = board.profile.isEmpty ? "" : " (profile \(board.profile))"
        switch board.driver {
        case .simulated:
            return [Diagnostic(.info, "board: simulated\(origin): keyboard button, LEDs drawn on the terminal")] + ring(board)
        case .gpiod:
            let (button, leds) = BoardSetup.specs(board)
            return GPIODBoard.diagnostics(button: button, leds: leds, muteSwitch: BoardSetup.muteSwitch(board)).map { line in
                guard line.status == .info else { return line }
                return Diagnostic(.info, "board\(origin): \(line.summary)")
            } + ring(board)
        }
    }

    /// The LED ring's spidev device opens and takes SPI mode 0 at its clock (nothing is sent: the ring keeps what it shows).
    func ring(_ board: SpeakerConfiguration.BoardSection) -> [Diagnostic] {
        guard board.hasRing else { return [] }
        let ring = board.ring
        let what = "LED ring: \(ring.pixelCount) APA102 pixels on \(ring.devicePath) at \(ring.speedHz) Hz"
            + (ring.powerLine.map { ", powered by \($0)" } ?? "")
        if !ring.problems.isEmpty { return [.check(false, "\(what): \(ring.problems.joined(separator: "; "))")] }
        do throws(BoardError) {
            try SPIDevice(path: ring.devicePath, speedHz: ring.speedHz).close()
            return [.check(true, what)]
        } catch {
            return [.check(false, "\(what): \(error.message)")]
        }
    }
}

/// The system user deploy/install.sh creates and deploy/hound-speaker.service runs as; HOUND_SPEAKER_SERVICE_USER
/// names another (a unit edited to run as someone else).
enum Service {
    static var user: String { ProcessInfo.processInfo.environment["HOUND_SPEAKER_SERVICE_USER"] ?? "hound-speaker" }
}
