import ArgumentParser
import CommandSupport
import SpeakerCommands

struct Doctor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Check the config, credentials, clock, network, devices and libraries, with advice.")
    @OptionGroup var options: ConfigOption

    func run() async throws {
        if await SpeakerCommands.Doctor(configPath: options.config).run() > 0 { throw ExitCode(1) }
    }
}
