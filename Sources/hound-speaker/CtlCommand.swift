import ArgumentParser
import JSONKit
import SpeakerApp

struct Ctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Talk to a running speaker's control API ([control] listen in the config).",
        discussion: """
            Commands: \(ControlClient.commands). `text` prints the answer; `status` and `timers` print the speaker's \
            state as JSON; the others print nothing and exit 0 once the speaker has taken them.
            """)
    @Argument(parsing: .captureForPassthrough, help: "The command and its words, e.g. say dinner is ready.")
    var words: [String] = []
    @OptionGroup var options: ConfigOption

    func run() async throws {
        try await reporting {
            // --config may come after the words (captured with them).
            var words = words, configPath = options.config
            if let index = words.firstIndex(of: "--config"), index + 1 < words.count {
                configPath = words[index + 1]
                words.removeSubrange(index...(index + 1))
            }
            let request = try ControlClient.request(words)
            let context = try AppContext(configPath: configPath)
            let reply = try await ControlClient.send(request, config: context.config)
            switch request["command"]?.stringValue {
            case "text": printLine(reply["answer"]?.stringValue ?? "")
            case "status", "timers": printLine(reply.asciiJSON())
            default: break
            }
        }
    }
}
