import ArgumentParser
import CommandSupport
import SpeakerCommands

struct Ctl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Talk to a running speaker's control API ([control] listen in the config).",
        discussion: """
            Commands: \(ControlClient.commands). `text` prints the answer (and, in brackets, what the speaker did, for \
            a command it carries out itself); `status` prints the speaker's state as JSON; `timers` lists the timers \
            and alarms, one a line; `voices` (and `forget`, and `reload-household`, which has the speaker read \
            household.json again) the household's phrases with their takes and its false wakes; `enroll` runs the \
            spoken enrollment ("Say OK Hound", three takes) and prints each step until it ends (exit 1 when it kept \
            nothing); the others print nothing and exit 0 once the speaker has taken them. A refusal (a question while \
            someone asks one by voice, a timer that is not there) exits 1 with the reason.
            """)
    // Every word that is not one of this command's options (so --config may come before or after them).
    @Argument(parsing: .allUnrecognized, help: "The command and its words, e.g. say dinner is ready.")
    var words: [String] = []
    @OptionGroup var options: ConfigOption

    func run() async throws {
        try await reporting { try await ControlClient.run(words, configPath: options.config) }
    }
}
