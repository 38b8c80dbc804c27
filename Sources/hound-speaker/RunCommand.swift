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
import SpeakerCore
import SpeakerConfig
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
            var speaker = try SpeakerAssembly(context: context, client: try context.houndifyClient(),
                                              output: .device(context.config.audio.output))
            speaker.board = try SpeakerAssembly.board(context.config.board)
            if events == "json" { speaker.observers.append { printLine($0.json) } }
            let prompt = context.config.board.driver == "simulated" ? "press Space or Enter to talk" : "press the button to talk"
            // Under systemd (Type=notify): READY=1 and then WATCHDOG=1 come from inside the loop (deploy/hound-speaker.service).
            let notifier = ServiceNotifier()
            if notifier.isActive {
                let interval = notifier.watchdogInterval.map { $0 / 2 }
                if let interval { context.logger.info("systemd watchdog: the loop reports every \(interval)") }
                speaker.settings.heartbeat = LoopHeartbeat(interval: interval) { notifier.loopAlive(status: "ready: \(prompt)") }
            }
            let loop = speaker.makeLoop()
            speaker.board?.start()
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
