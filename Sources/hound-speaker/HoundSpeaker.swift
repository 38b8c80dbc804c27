import ArgumentParser
import FoundationEssentials
import Glibc
import Logging

@main
struct HoundSpeaker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hound-speaker",
        abstract: "Open firmware for a Raspberry Pi smart speaker that talks to SoundHound's Houndify.",
        version: "0.1.0",
        subcommands: [Run.self, Demo.self, Text.self, Voice.self, Say.self, HotPhraseCommand.self, Serve.self, Doctor.self, BoardCheck.self, EndpointCommand.self])
}

struct ConfigOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("TOML config file.", discussion:
        "Default: /etc/hound-speaker/speaker.toml, else config/speaker.toml.", valueName: "FILE"))
    var config: String?
}

/// A failure to report as one line and a non-zero exit, without ArgumentParser's usage text.
struct CommandFailure: Error, CustomStringConvertible {
    var message: String
    var exitCode: Int32 = 1
    var description: String { message }
}

extension AsyncParsableCommand {
    /// Runs `body`, turning errors into one line on stderr (`hound-speaker: error: …`) and an exit code.
    func reporting(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch let failure as CommandFailure {
            writeAll(STDERR_FILENO, "hound-speaker: error: \(failure.message)\n")
            throw ExitCode(failure.exitCode)
        } catch let error as ExitCode {
            throw error
        } catch {
            writeAll(STDERR_FILENO, "hound-speaker: error: \(error)\n")
            throw ExitCode(1)
        }
    }
}


