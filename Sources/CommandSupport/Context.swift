import Glibc
import Platform
public import Logging
public import SpeakerConfig
import Synchronization
import Systemd
import HoundifyCore

/// Loads the config and sets up logging; the subcommands of both programs share this.
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
        LoggingBootstrap.once(level: level, secrets: [config.houndify.clientKey, config.homeAssistant.password, config.homeAssistant.token])
        var logger = Logger(label: "hound-speaker")
        logger.logLevel = level
        self.logger = logger
        for warning in config.warnings { logger.warning("\(warning)") }
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
