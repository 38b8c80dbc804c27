import ArgumentParser
import CommandSupport
import SpeakerCommands

struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "One whole interaction with no hardware and no credentials.")
    @Option(help: ArgumentHelp("Write the spoken answer to this WAV file (default: the sound card, else hound-speaker-demo.wav).", valueName: "WAV"))
    var output: String?

    func run() async throws {
        try await reporting { try await SpeakerCommands.Demo(output: output).run() }
    }
}
