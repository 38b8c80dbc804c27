import HoundifyAssembly
import Assembly
import DeviceAssembly
import BoardCore
import Logging
import SpeakerConfig
import Speech
import Testing
import AudioCore

/// The assembly says whose a failure is (AssemblyError's kind) instead of choosing an exit code: the config's
/// mistakes are `.configuration`, each naming the key. (CLITests' runExits78OnEveryConfigMistake checks that `run`
/// turns these into exit 78.)
@Suite struct AssemblyErrorTests {
    @Test func aVoiceEspeakLacksIsTheConfigs() throws {
        var config = SpeakerConfiguration()
        config.speech.voice = "xx-nonexistent"
        let volume = try DeviceAssembly.outputVolume(config, for: .device(config.audio.output))
        let error = #expect(throws: AssemblyError.self) { try DeviceAssembly.speechEngine(config, volume: volume) }
        #expect(error?.kind == .configuration)
        #expect(error?.message.contains("[speech] voice") == true)
    }

    @Test func aGPIOChipThisMachineLacksIsTheConfigs() {
        var config = SpeakerConfiguration()
        config.board.driver = .gpiod
        config.board.chip = "gpiochip-nonexistent"
        config.board.button = "GPIO27"
        let error = #expect(throws: AssemblyError.self) { try DeviceAssembly.board(config.board) }
        #expect(error?.kind == .configuration)
        #expect(error?.message.contains("gpiochip-nonexistent") == true)
    }

    @Test func missingCredentialsAreTheConfigs() {
        let config = SpeakerConfiguration()  // no client ID or key (unless the environment gives them: not read here)
        let error = #expect(throws: AssemblyError.self) {
            try HoundifyAssembly.client(config, logger: .init(label: "test"))
        }
        #expect(error?.kind == .configuration)
        #expect(error?.message.contains("client_id") == true)
    }
}
