import ArgumentParser
import CommandSupport
import SpeakerCommands

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the speaker: the button (or keyboard), microphone, Houndify, speech and LEDs.")
    @OptionGroup var options: ConfigOption
    @Option(help: ArgumentHelp("\"json\": one JSON object per event on stdout (states, transcripts, answers, timings).", valueName: "FORMAT"))
    var events: String?

    func run() async throws {
        try await reporting {
            if let events, events != "json" { throw CommandFailure(message: "--events takes \"json\", not \(events)", exitCode: 64) }
            try await RunSpeaker.run(configPath: options.config, eventsJSON: events == "json")
        }
    }
}
