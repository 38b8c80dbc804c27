import ArgumentParser
import CommandSupport
import SpeakerCommands

/// `hound-speaker serve` is the local service's own program (`houndify-local`, beside this one), with the same
/// options: the speaker's binary does not carry the service.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the local Houndify-compatible service (for tests, the demo and development without an account).",
        discussion: """
            It is the program houndify-local, installed beside hound-speaker by development builds. It checks \
            requests against the config's client ID and key, answers text queries about the time, the date, the \
            weather and timers, and answers voice queries with the transcript given in RequestInfo \
            "LocalServiceTranscript" (or [serve] transcript): it does not recognise speech.
            """)

    @Option(help: "Port on 127.0.0.1 (0 picks a free one). Default: [serve] port.") var port: Int?
    @Option(help: "Address to listen on.") var host: String?
    @Option(help: ArgumentHelp("Misbehave for client tests.", visibility: .hidden)) var fault: String?
    @OptionGroup var options: ConfigOption

    func run() async throws {
        try await reporting {
            var arguments: [String] = []
            if let port { arguments += ["--port", String(port)] }
            if let host { arguments += ["--host", host] }
            if let fault { arguments += ["--fault", fault] }
            if let config = options.config { arguments += ["--config", config] }
            try LocalServiceProgram.exec(arguments: arguments)
        }
    }
}
