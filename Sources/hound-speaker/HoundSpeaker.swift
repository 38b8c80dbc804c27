import ArgumentParser
import CommandSupport
import SpeakerCommands

@main
struct HoundSpeaker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hound-speaker",
        abstract: "Open firmware for a Raspberry Pi smart speaker that talks to SoundHound's Houndify.",
        version: "0.1.0",
        subcommands: [Run.self, Demo.self, Text.self, Voice.self, Say.self, HotPhraseCommand.self, EnrollCommand.self, OfflineCommand.self, SetupCommand.self, Serve.self, Doctor.self, Ctl.self, BoardCheck.self, EndpointCommand.self])
}
