import ArgumentParser
import BoardCore
import AudioCore
import SpeakerApp
import Audio
import Board
import CShims
import FoundationEssentials
import Platform
import Glibc
import HotPhrase
import Houndify
import Logging
import Speaker
import SpeakerConfig
import SpeakerRuntime
import Speech
import Systemd

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the speaker: the button (or keyboard), microphone, Houndify, speech and LEDs.")
    @OptionGroup var options: ConfigOption
    @Option(help: ArgumentHelp("\"json\": one JSON object per event on stdout (states, transcripts, answers, timings).", valueName: "FORMAT"))
    var events: String?

    func run() async throws {
        // A speaker runs for months: large passing buffers (a long answer, a big response) must go back to the
        // system when freed. glibc would raise its mmap threshold after the first such buffer is freed and keep
        // the later ones in its heap for good (the soak saw a 5 MB step after the second 12 MB answer);
        // fixing the threshold at its default keeps every allocation over 128 kB in its own mapping.
        _ = hs_malloc_fix_mmap_threshold(128 * 1024)
        try await reporting {
            let context = try AppContext(configPath: options.config)
            if let events, events != "json" { throw CommandFailure(message: "--events takes \"json\", not \(events)", exitCode: 64) }
            var parts = try SpeakerAssembly.parts(context: context, client: try context.houndifyClient(),
                                                  output: .device(context.config.audio.output))
            parts.board = try SpeakerAssembly.board(context.config.board)
            if events == "json" { parts.eventSink = { printLine($0) } }
            let prompt = context.config.board.driver == "simulated" ? "press Space or Enter to talk" : "press the button to talk"
            // Under systemd (Type=notify): READY=1 and then WATCHDOG=1 come from inside the loop (deploy/hound-speaker.service).
            let notifier = ServiceNotifier()
            if notifier.isActive {
                let interval = notifier.watchdogInterval.map { $0 / 2 }
                if let interval { context.logger.info("systemd watchdog: the loop reports every \(interval)") }
                parts.heartbeat = LoopHeartbeat(interval: interval) { notifier.loopAlive(status: "ready: \(prompt)") }
            }
            let loop = SpeakerLoop(parts: parts)
            parts.board?.start()
            let stopper = Task {
                await Signals.waitForTermination()
                context.logger.notice("stopping (signal)")
                notifier.stopping()
                loop.send(.shutdown)
            }
            context.logger.notice("hound-speaker running: \(prompt)")
            await loop.run()
            stopper.cancel()
        }
    }
}

/// Builds the speaker's parts from the config (wiring only; every behaviour lives in its module).
enum SpeakerAssembly {
    static func parts(context: AppContext, client: HoundifyClient, output: SpeechOutput) throws -> SpeakerParts {
        let config = context.config
        let volume: OutputVolume
        do throws(AudioDeviceError) {
            volume = try OutputVolume(percent: config.audio.volume, device: config.audio.output, mixerControl: config.audio.mixerControl)
        } catch {
            // A control the card lacks is the config's (exit 78: systemd does not restart); a card not there yet is
            // not, and the unit's restarts find it once it is plugged in.
            if error.isConfiguration { throw CommandFailure(message: "\(config.path ?? "config"): [audio] mixer_control: \(error)", exitCode: 78) }
            throw CommandFailure(message: error.description)
        }
        let speech: SpeechEngine
        let earcons: [Earcon: MonoAudio]
        do throws(SpeechError) {
            speech = try SpeechEngine(settings: config.speech.voiceSettings, volume: volume)
        } catch { throw CommandFailure(speech: error, config: config.path) }
        do throws(SpeechError) {
            earcons = try Earcons.load(overrides: config.audio.earcons)
        } catch {
            // A configured sound that is missing or not audio, or the shipped ones not installed: no restart mends it.
            throw CommandFailure(message: "\(config.path ?? "config"): [audio] earcons: \(error)", exitCode: 78)
        }
        var capture = CaptureSettings(device: config.audio.input)
        capture.rate = config.audio.inputRate
        capture.channels = config.audio.inputChannels
        capture.channel = config.audio.inputChannel
        capture.pacing = config.audio.inputPacing
        var endpointer = Endpointer.Settings()
        endpointer.mode = Endpointer.Mode(rawValue: config.listening.endOfSpeech) ?? .short
        endpointer.shortSilenceMS = config.listening.shortSilenceMS
        endpointer.longSilenceMS = config.listening.longSilenceMS
        endpointer.noSpeechTimeoutMS = config.listening.noSpeechTimeoutMS
        endpointer.maxLengthMS = config.listening.maxLengthMS
        var machine = SpeakerMachine.Settings()
        machine.enableSpeech = config.speaker.speech
        machine.recordingLimitMS = config.speaker.recordingLimitMS
        machine.searchingLimitMS = config.speaker.searchingLimitMS
        machine.speakingLimitMS = config.speaker.speakingLimitMS
        var parts = SpeakerParts(client: client, speech: speech, output: output, earcons: earcons, volume: volume,
                                 capture: capture, endpointer: endpointer, machine: machine, logger: context.logger)
        parts.stateHook = config.speaker.stateHook
        if config.hotphrase.enabled {
            let model: HotPhraseModel
            do { model = try HotPhraseModel.locate(config.hotphrase.model) } catch {
                // The model is the config's (or the installation's) to fix: 78, so systemd does not restart for ever.
                throw CommandFailure(message: "\(config.path ?? "config"): [hotphrase] model: \(error) ([hotphrase] enabled = false turns the hot phrase off)",
                                     exitCode: 78)
            }
            let listener = HotPhraseListener(model: model, sensitivity: config.hotphrase.sensitivity,
                                             refractorySeconds: Double(config.hotphrase.refractoryMS) / 1000)
            parts.hotPhrase = listener
            context.logger.notice("listening for \"\(model.phrase)\" (model \(model.path), threshold \(String(cFormat: "%.6f", listener.threshold)))")
        }
        return parts
    }

    static func board(_ board: SpeakerConfiguration.BoardSection) throws -> BoardRunner {
        let hardware: BoardHardware
        let roles: [LEDRole]
        if board.driver == "simulated" {
            let draw = SimulatedLEDs.drawer(terminal: isatty(STDERR_FILENO) == 1) { writeAll(STDERR_FILENO, $0) }
            hardware = .simulated(input: STDIN_FILENO, terminal: isatty(STDIN_FILENO) == 1, draw: draw)
            roles = board.led.isEmpty ? [LEDRole.listening, .searching, .speaking].filter { board.leds[$0.rawValue] != nil } : [.status]
        } else {
            let (button, leds) = BoardSetup.specs(board)
            do throws(BoardError) { hardware = .gpio(try GPIODBoard(button: button, leds: leds)) } catch {
                // Lines or a chip this machine lacks (or may not use): 78; a line another program holds: 1, and the
                // unit tries again.
                throw CommandFailure(message: error.message, exitCode: error.isConfiguration ? 78 : 1)
            }
            roles = Array(leds.keys)
        }
        do throws(BoardError) {
            return try BoardRunner(hardware: hardware, gestures: BoardSetup.gestures(board),
                                   talkMode: TalkMode(rawValue: board.talkMode) ?? .tap, roles: roles.isEmpty ? [.status] : roles)
        } catch { throw CommandFailure(message: error.message) }
    }
}
