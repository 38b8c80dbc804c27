import ArgumentParser
import CommandSupport
import DeviceCommands
import SearchCommands
import SpeakerCommands

// The argument parsers of the commands that DeviceCommands, SearchCommands and SpeakerCommands carry out: options and help here, the work there.

struct OfflineCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "offline",
        abstract: "What the on-device recogniser understands in a WAV: the speaker's own commands, without the internet.",
        discussion: """
            Any sample rate or channel count (converted to 16 kHz mono). The recogniser (PocketSphinx with Debian's \
            pocketsphinx-en-us) hears only the speaker's own commands: timers, alarms, the time and date, volume, stop, \
            the IP address. With --json, one object: {"heard": words or null, "command": {"kind": ..., ...} or null}.
            """)
    @Argument(help: "The recording.") var wav: String
    @Flag(help: "One JSON object.") var json = false

    func run() async throws {
        try await reporting { try await OfflineScan(wav: wav, json: json).run() }
    }
}

struct EndpointCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "endpoint",
        abstract: "Run the end-of-speech detector over a WAV and print when it would end the query.")
    @Argument(help: "The recording (any rate and channel count).") var wav: String
    @Option(help: "short (0.5 s of silence), long (1.2 s) or none.") var mode: String = "short"
    @Flag(help: "One JSON object: {\"decision\":…,\"time\":s,\"lastSpeech\":s}.") var json = false

    func run() async throws {
        try await reporting { try await EndpointScan(wav: wav, mode: mode, json: json).run() }
    }
}

struct HotPhraseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hotphrase",
        abstract: "Run the \"OK Hound\" detector over a WAV file.",
        discussion: """
            Any sample rate or channel count (converted to 16 kHz mono). One line per detection; with --json, \
            {"time":seconds,"score":0..1}. With --household, the detector as the speaker runs it with that household's \
            enrolled voices (docs/household.md): --json lines are {"time":seconds,"score":x,"phrase":"..."}, the score \
            the generic model's probability or, when the templates woke it, their z-score. With --keep-false-wakes \
            (and --household), every detection is kept as a household negative, as the speaker keeps a wake that heard \
            nothing: written to the household's file and applied from the next 80 ms step on, so a recording plays one \
            household's life (the file is changed; use a copy to measure).
            """)

    @Argument(help: "The WAV file.") var wav: String
    @Option(help: "Detection threshold, 0 to 1 (default: from [hotphrase] sensitivity).") var threshold: Double?
    @Flag(help: "One JSON line per detection.") var json = false
    @Option(help: ArgumentHelp("Model file (default: [hotphrase] model, else the installed ok-hound.hpm).", valueName: "FILE"))
    var model: String?
    @Option(help: ArgumentHelp("Folder of the household's household.json (`enroll`): detect as the speaker does with it.", valueName: "DIR"))
    var household: String?
    @Option(help: ArgumentHelp("Negative bank, with --household (default: the installed negative-bank.hpm).", valueName: "FILE"))
    var bank: String?
    @Flag(help: "With --household: keep every detection as a household negative in its file, as the speaker keeps a false wake.")
    var keepFalseWakes = false
    @OptionGroup var options: ConfigOption

    func validate() throws {
        if let threshold, !(0...1).contains(threshold) { throw ValidationError("--threshold must be between 0 and 1, not \(threshold)") }
        if keepFalseWakes && household == nil { throw ValidationError("--keep-false-wakes needs --household DIR (the household that keeps them)") }
    }

    func run() async throws {
        try await reporting {
            try await HotPhraseScan(wav: wav, threshold: threshold, json: json, model: model, household: household,
                                    bank: bank, configPath: options.config, keepFalseWakes: keepFalseWakes).run()
        }
    }
}

struct EnrollCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enroll",
        abstract: "Teach the speaker the household's voices: add recordings of the hot phrase (or another phrase).",
        discussion: """
            Each recording (any sample rate or channel count) is one take of the phrase; its verdict is printed: kept, \
            or why it was not (clipped, too quiet, no speech, too long, unlike the other takes of this run). Only embeddings are \
            kept, in DIR/household.json (mode 0600). Needs the speech-embedding model (format 2). Exit 1 when no take \
            was kept, 66 when a recording could not be read (the others are still kept).

            With no recordings it asks aloud: "Say OK Hound" (or --phrase), three takes, each checked the same way, \
            and prints each step. A speaker running with this config ([control] listen answers) runs it, with its \
            microphone, speech and LEDs (as `ctl enroll`); otherwise it runs here on [audio] input and output. The \
            takes are saved only once three are kept; exit 1 when it ended keeping nothing (Ctrl-C stops it so).
            """)

    @Argument(help: "The recordings, one take each (none: the spoken enrollment).") var wavs: [String] = []
    @Option(help: ArgumentHelp("Folder of household.json (default: [hotphrase] household, else the state directory).", valueName: "DIR"))
    var household: String?
    @Option(help: ArgumentHelp("The phrase the recordings say (default: the model's, \"OK Hound\"); another becomes an extra wake phrase, except \"stop\", which stops a ring or an answer.", valueName: "TEXT"))
    var phrase: String?
    @Option(help: ArgumentHelp("Model file (default: [hotphrase] model, else the installed ok-hound.hpm).", valueName: "FILE"))
    var model: String?
    @Option(help: ArgumentHelp("Negative bank (default: the installed negative-bank.hpm).", valueName: "FILE"))
    var bank: String?
    @OptionGroup var options: ConfigOption

    func validate() throws {
        if let phrase, phrase.allSatisfy(\.isWhitespace) { throw ValidationError("--phrase must not be empty") }
    }

    func run() async throws {
        try await reporting {
            try await Enroll(wavs: wavs, household: household, phrase: phrase, model: model, bank: bank,
                             configPath: options.config).run()
        }
    }
}

struct Say: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Speak TEXT with espeak-ng through [audio] output, or into a WAV file.")
    @Argument(help: "What to say.") var text: String
    @OptionGroup var options: ConfigOption
    @Option(help: ArgumentHelp("Write the speech to this WAV file instead.", valueName: "WAV")) var output: String?

    func run() async throws {
        try await reporting { try await SayText(text: text, output: output, configPath: options.config).run() }
    }
}

struct Text: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Ask Houndify a text query and print the spoken answer.")

    @Argument(help: "The query, e.g. \"what time is it\".") var query: String
    @OptionGroup var options: ConfigOption
    @Flag(help: "Print Houndify's raw HoundServer JSON instead.") var json = false
    @Flag(help: "Start a new conversation (forget what the last queries said).") var newConversation = false

    func run() async throws {
        try await reporting {
            try await TextQuery(query: query, json: json, newConversation: newConversation,
                                configPath: options.config).run()
        }
    }
}

struct Voice: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stream a WAV file to Houndify as a voice query, printing partial transcripts and the answer.",
        discussion: "The WAV may have any rate and channel count; it is converted to 16 kHz mono. It is sent in real time unless --fast is given.")

    @Argument(help: "The recording.") var wav: String
    @OptionGroup var options: ConfigOption
    @Flag(help: "Print each message Houndify sends as one JSON line.") var json = false
    @Flag(help: "Send the audio as fast as possible instead of in real time.") var fast = false
    @Flag(help: "Start a new conversation (forget what the last queries said).") var newConversation = false

    func run() async throws {
        try await reporting {
            try await VoiceQuery(wav: wav, json: json, fast: fast, newConversation: newConversation,
                                 configPath: options.config).run()
        }
    }
}

struct BoardCheck: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "board",
        abstract: "Try the button and LEDs: each press shows the next LED state; Ctrl-C to stop.",
        discussion: "With the simulated board: Space or Enter clicks, h holds and releases, l long-presses (on a terminal); or lines press/release/click/long on stdin.")
    @OptionGroup var options: ConfigOption

    func run() async throws {
        try await reporting { try await BoardTrial(configPath: options.config).run() }
    }
}

struct SetupCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "setup",
        abstract: "Take settings from the SD card's boot partition into the config.",
        discussion: """
            --import FILE (e.g. /boot/firmware/hound-speaker.toml, which any computer can write): its keys are \
            checked as the config's own and written into the config (mode 0600, its owner kept, comments kept), then \
            the file is overwritten with zeros and removed, since anyone can read the card. A file with a mistake is \
            refused (exit 78, naming its line and key), changes nothing and stays on the card; the speaker says so \
            when it starts. No file: nothing is done. The service runs this before the speaker, as root.
            """)
    @Option(name: .customLong("import"), help: ArgumentHelp("The settings file.", valueName: "FILE")) var file: String
    @OptionGroup var options: ConfigOption

    func run() async throws {
        try await reporting { try SetupImport(file: file, configPath: options.config).run() }
    }
}
