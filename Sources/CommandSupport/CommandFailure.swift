public import ArgumentParser
import Glibc
import Platform

/// A failure to report as one line and a non-zero exit, without ArgumentParser's usage text.
public struct CommandFailure: Error, CustomStringConvertible {
    public var message: String
    public var exitCode: Int32 = 1
    public var description: String { message }

    public init(message: String, exitCode: Int32 = 1) {
        self.message = message
        self.exitCode = exitCode
    }
}

extension AsyncParsableCommand {
    /// Runs `body`, turning errors into one line on stderr (`PROGRAM: error: …`) and an exit code.
    public func reporting(_ program: String = "hound-speaker", _ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let failure as CommandFailure {
            writeAll(STDERR_FILENO, "\(program): error: \(failure.message)\n")
            throw ExitCode(failure.exitCode)
        } catch let error as ExitCode {
            throw error
        } catch {
            writeAll(STDERR_FILENO, "\(program): error: \(error)\n")
            throw ExitCode(1)
        }
    }
}

/// The `--config FILE` option every subcommand takes.
public struct ConfigOption: ParsableArguments, Sendable {
    @Option(name: .long, help: ArgumentHelp("TOML config file.", discussion:
        "Default: /etc/hound-speaker/speaker.toml, else config/speaker.toml.", valueName: "FILE"))
    public var config: String?

    public init() {}
}
