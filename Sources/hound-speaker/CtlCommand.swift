import ArgumentParser
import JSONKit
import SpeakerApp

struct Ctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Talk to a running speaker's control API ([control] listen in the config).",
        discussion: """
            Commands: \(ControlClient.commands). `text` prints the answer (and, in brackets, what the speaker did, \
            for a command it carries out itself); `status` prints the speaker's state as JSON; `timers` lists the \
            timers and alarms, one a line; `voices` (and `forget`) the household's phrases with their takes and its \
            false wakes; `enroll` runs the spoken enrollment ("Say OK Hound", three takes) and prints each step until \
            it ends (exit 1 when it kept nothing); the others print nothing and exit 0 once the speaker has taken them. A \
            refusal (a question while someone asks one by voice, a timer that is not there) exits 1 with the reason.
            """)
    // Every word that is not one of this command's options (so --config may come before or after them).
    @Argument(parsing: .allUnrecognized, help: "The command and its words, e.g. say dinner is ready.")
    var words: [String] = []
    @OptionGroup var options: ConfigOption

    func run() async throws {
        try await reporting {
            let request = try ControlClient.request(words)
            let context = try AppContext(configPath: options.config)
            let reply = try await ControlClient.send(request, config: context.config)
            switch request["command"]?.stringValue {
            case "text": for line in ControlClient.answerLines(reply) { printLine(line) }
            case "timers": for line in ControlClient.timerLines(reply) { printLine(line) }
            case "status": printLine(reply.asciiJSON())
            case "voices", "forget": for line in ControlClient.voiceLines(reply) { printLine(line) }
            case "enroll":
                guard try await ControlClient.followEnrollment(reply["enrollment"] ?? .null, config: context.config, print: printLine) else {
                    throw CommandFailure(message: "nothing was kept", exitCode: 1)
                }
            default: break
            }
        }
    }
}
