import FoundationEssentials
public import BoardCore
import Glibc
import Platform
public import Board
public import Houndify
import HoundifyCore
public import Logging
public import SpeakerConfig
import Synchronization
import Systemd

/// Loads the config and sets up logging; the subcommands share this.
public struct AppContext: Sendable {
    public let config: SpeakerConfiguration
    public let logger: Logger

    public init(config: SpeakerConfiguration, logger: Logger) {
        self.config = config
        self.logger = logger
    }

    public init(configPath: String?) throws {
        let path = ConfigLoader.resolvePath(explicit: configPath)
        do { config = try ConfigLoader.load(path: path) } catch {
            throw CommandFailure(message: error.description, exitCode: 78)  // EX_CONFIG
        }
        let level = config.logging.level
        LoggingBootstrap.once(level: level, secrets: [config.houndify.clientKey])
        var logger = Logger(label: "hound-speaker")
        logger.logLevel = level
        self.logger = logger
        for warning in config.warnings { logger.warning("\(warning)") }
    }

    /// The Houndify client, with the conversation kept in the configured state file. `forSpeaker`: the speaker
    /// carries out client actions and keeps the state of the branch it took.
    public func houndifyClient(newConversation: Bool = false, forSpeaker: Bool = false) throws -> HoundifyClient {
        var settings: HoundifyClientConfiguration
        do { settings = try config.houndifyClientConfiguration() } catch {
            throw CommandFailure(message: error.description, exitCode: 78)
        }
        settings.callerKeepsActionState = forSpeaker
        let file = config.houndify.conversationStateFile ?? ""
        let store = ConversationStore(fileURL: file.isEmpty ? nil : URL(fileURLWithPath: file))
        if let problem = store.loadProblem { logger.warning("conversation state: \(problem)") }
        if newConversation {
            do { try store.clear() } catch { logger.warning("conversation state: \(error)") }
        }
        do {
            return try HoundifyClient(configuration: settings, conversation: store, logger: logger)
        } catch {
            throw CommandFailure(message: "\(config.path ?? "config"): [houndify] client_key: \(error)", exitCode: 78)
        }
    }
}

public enum LoggingBootstrap {
    private static let done = Mutex(false)

    /// swift-log allows one bootstrap per process: log lines go to stderr. When stderr is the journal (under
    /// systemd) they are journald's lines: `<N>` priority, no timestamp, one line per event, `secrets` redacted.
    public static func once(level: Logger.Level, secrets: [String] = []) {
        // Held while bootstrapping: a second caller waits until the first has finished, then does nothing.
        done.withLock { done in
            guard !done else { return }
            done = true
            bootstrap(level: level, secrets: secrets)
        }
    }

    private static func bootstrap(level: Logger.Level, secrets: [String]) {
        let journal = JournalStream.isStandardError()
        LoggingSystem.bootstrap { label in
            if journal {
                // Structured entries where journald's socket is there; its stderr lines otherwise.
                var handler = JournalLogHandler.nativeJournalAvailable
                    ? JournalLogHandler(secrets: secrets, send: { JournalLogHandler.sendToJournal($0) })
                    : JournalLogHandler(secrets: secrets, write: JournalLogHandler.standardError)
                handler.logLevel = level
                return handler
            }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}

public func printLine(_ text: String) { writeAll(STDOUT_FILENO, text + "\n") }

public func printError(_ text: String) { writeAll(STDERR_FILENO, text + "\n") }

/// write(2) until all of `text` is out (a pipe may take part of it); unbuffered, so lines from the loop and
/// from the owned threads never sit in a buffer when the process is killed.
public func writeAll(_ fd: Int32, _ text: String) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if written < 0 {
            if errno == EINTR { continue }
            return  // a closed stdout (a reader that quit): nothing useful to do with the line
        }
        bytes = bytes.dropFirst(written)
    }
}

/// The board from config: which lines, which LEDs, the gesture settings.
public enum BoardSetup {
    /// The mute switch's line, if the board has one.
    public static func muteSwitch(_ board: SpeakerConfiguration.BoardSection) -> GPIOLineSpec? {
        board.muteSwitch.isEmpty ? nil : GPIOLineSpec(chip: board.chip, line: board.muteSwitch, activeLow: board.muteSwitchActiveLow)
    }

    public static func specs(_ board: SpeakerConfiguration.BoardSection) -> (button: GPIOLineSpec?, leds: [LEDRole: GPIOLineSpec]) {
        let button = board.button.isEmpty ? nil : GPIOLineSpec(chip: board.chip, line: board.button, activeLow: board.buttonActiveLow)
        var leds: [LEDRole: GPIOLineSpec] = [:]
        if !board.led.isEmpty {
            leds[.status] = GPIOLineSpec(chip: board.chip, line: board.led, activeLow: board.ledsActiveLow)
        } else {
            for (role, line) in board.leds { leds[role] = GPIOLineSpec(chip: board.chip, line: line, activeLow: board.ledsActiveLow) }
        }
        return (button, leds)
    }
}
