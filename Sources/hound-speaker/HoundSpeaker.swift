import ArgumentParser
import Audio
import FoundationEssentials
import Glibc
import Logging
import Speech

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

extension CommandFailure {
    /// A recording that is missing, unreadable or not audio is bad input: exit 66 (EX_NOINPUT), as README says.
    init(reading error: AudioFileError) {
        switch error {
        case .cannotOpen, .notPCM, .empty: self.init(message: error.description, exitCode: 66)
        case .resampler, .cannotWrite, .library: self.init(message: error.description)
        }
    }

    /// A voice espeak-ng lacks is the config's mistake: exit 78, which the service unit does not restart on
    /// (restarting cannot mend it).
    init(speech error: SpeechError, config path: String?) {
        if error.isConfiguration {
            self.init(message: "\(path ?? "config"): [speech] voice: \(error.message)", exitCode: 78)
        } else {
            self.init(message: error.message)
        }
    }
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


