import Foundation
import Testing
import BoardCore
@testable import SpeakerConfig

/// The repository's board/ directory, whatever the working directory.
let boardDirectory: String = {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let dir = root.appendingPathComponent("board").path
    setenv("HOUND_SPEAKER_BOARD_PATH", dir, 1)
    return dir
}()

@Suite struct BoardConfigTests {
    func load(_ text: String) throws -> SpeakerConfiguration {
        _ = boardDirectory
        let path = try configFile(text)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try ConfigLoader.load(path: path, environment: [:])
    }

    @Test func defaultsAreTheGenericBreadboard() throws {
        let board = try load("").board
        #expect(board.driver == .gpiod && board.chip == "gpiochip0" && board.button == "GPIO17" && board.buttonActiveLow)
        #expect(board.leds == [.listening: "GPIO22", .searching: "GPIO23", .speaking: "GPIO24"])
        #expect(board.led == "" && board.talkMode == .tap && board.gestures.debounce == .milliseconds(30))
    }

    @Test func everyShippedProfileLoads() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: boardDirectory).filter { $0.hasSuffix(".toml") }.map { String($0.dropLast(5)) }
        #expect(Set(names).isSuperset(of: ["generic-breadboard", "aiy-voice-hat", "respeaker-2mic", "respeaker-4mic", "simulated"]))
        for name in names {
            let config = try load("[board]\nprofile = \"\(name)\"\n")
            #expect(config.board.profile == name)
        }
    }

    @Test func aiyProfileHasOneLEDAndItsSoundCard() throws {
        let config = try load("[board]\nprofile = \"aiy-voice-hat\"\n")
        #expect(config.board.button == "GPIO23" && config.board.led == "GPIO25" && config.board.leds.isEmpty)
        #expect(config.audio.input == "plughw:CARD=sndrpigooglevoi,DEV=0")
    }

    @Test func respeakerHasNoGPIOLEDsUntilWired() throws {
        let config = try load("[board]\nprofile = \"respeaker-2mic\"\n")
        #expect(config.board.button == "GPIO17" && config.board.leds.isEmpty && config.board.led.isEmpty)
        let wired = try load("[board]\nprofile = \"respeaker-2mic\"\nleds = { listening = \"GPIO12\" }\n")
        #expect(wired.board.leds == [.listening: "GPIO12"])
    }

    @Test func theReSpeakerProfilesHaveTheirRings() throws {
        let two = try load("[board]\nprofile = \"respeaker-2mic\"\n").board
        #expect(two.hasRing && two.ring.pixelCount == 3 && two.ring.devicePath == "/dev/spidev0.1" && two.ring.powerLine == nil)
        let four = try load("[board]\nprofile = \"respeaker-4mic\"\n")
        #expect(four.board.ring == LEDRingProfile(name: "APA102 LED ring", spiBus: 0, chipSelect: 1, speedHz: 8_000_000,
                                                  pixelCount: 12, powerLine: "GPIO5", brightness: 10))
        #expect(four.board.button.isEmpty && four.audio.input == "plughw:CARD=seeed4micvoicec,DEV=0")
        // The owner's key wins over the profile's, one key at a time.
        let dimmer = try load("[board]\nprofile = \"respeaker-4mic\"\nring_brightness = 3\n").board.ring
        #expect(dimmer.brightness == 3 && dimmer.pixelCount == 12 && dimmer.powerLine == "GPIO5")
        let unpowered = try load("[board]\nprofile = \"respeaker-4mic\"\nring_power = \"\"\n").board.ring
        #expect(unpowered.powerLine == nil)
        #expect(try load("").board.hasRing == false)
    }

    @Test func badRingValuesAreNamed() throws {
        _ = boardDirectory
        #expect(try loadError("[board]\nring_pixels = 300\n")?.description.contains(":2: [board] ring_pixels: must be 0 to 255") == true)
        #expect(try loadError("[board]\nring_brightness = 32\n")?.problem.contains("must be 0 to 31") == true)
        #expect(try loadError("[board]\nring_speed_hz = 50\n")?.problem.contains("must be 100000 to 32000000 Hz") == true)
        #expect(try loadError("[board]\nring_spi_bus = -1\n")?.problem.contains("must be 0 to 255") == true)
        #expect(try loadError("[board]\nring_power = \"GPIO 5\"\n")?.problem.contains("must be a GPIO line name") == true)
        // The power line is the ring's, not a light with a pattern.
        #expect(try loadError("[board]\nleds = { ring_power = \"GPIO5\" }\n")?.problem.contains("unknown LED \"ring_power\"") == true)
    }

    @Test func configOverridesTheProfile() throws {
        let config = try load("[board]\nprofile = \"aiy-voice-hat\"\nchip = \"gpiochip4\"\ntalk_mode = \"hold\"\n[audio]\ninput = \"hw:1\"\n")
        #expect(config.board.chip == "gpiochip4" && config.board.button == "GPIO23" && config.board.talkMode == .hold)
        #expect(config.audio.input == "hw:1")
        #expect(config.audio.output == "plughw:CARD=sndrpigooglevoi,DEV=0")
    }

    @Test func badBoardValuesAreNamed() throws {
        _ = boardDirectory
        #expect(try loadError("[board]\nprofile = \"raspberry-toaster\"\n")?.problem.hasPrefix("no board profile \"raspberry-toaster\" in ") == true)
        #expect(try loadError("[board]\nprofile = \"raspberry-toaster\"\n")?.problem.contains("known: aiy-voice-hat") == true)
        #expect(try loadError("[board]\ntalk_mode = \"push\"\n")?.description.contains(":2: [board] talk_mode: must be \"tap\" or \"hold\"") == true)
        #expect(try loadError("[board]\ndebounce_ms = 900\n")?.problem == "must be 0 to 500 ms, not 900")
        #expect(try loadError("[board]\nsetup_hold_ms = 500\n")?.problem == "must be 2000 to 30000 ms, not 500")
        // the set-up hold comes after the long press: the key written is named, the other's value too
        #expect(try loadError("[board]\nlong_press_ms = 3000\nsetup_hold_ms = 2500\n")?.description
            .contains(":3: [board] setup_hold_ms: the set-up hold (setup_hold_ms, 2500 ms) must be longer than the long press (long_press_ms, 3000 ms)") == true)
        #expect(try loadError("[board]\nlong_press_ms = 6000\n")?.description.contains(":2: [board] long_press_ms: the set-up hold") == true)
        #expect(try loadError("[board]\nleds = { blinking = \"GPIO5\" }\n")?.problem.contains("unknown LED \"blinking\"") == true)
        #expect(try loadError("[board]\nbutton_active_low = \"yes\"\n")?.problem == "must be true or false, not string")
        #expect(try loadError("[board]\ndriver = \"spi\"\n")?.problem == "must be \"gpiod\" or \"simulated\", not \"spi\"")
    }

    @Test func aProfileMaySetOnlyBoardAndAudio() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hs-profiles-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data("[houndify]\nclient_key = \"x\"\n".utf8).write(to: URL(fileURLWithPath: dir + "/sneaky.toml"))
        let previous = ProcessInfo.processInfo.environment["HOUND_SPEAKER_BOARD_PATH"]
        _ = boardDirectory
        setenv("HOUND_SPEAKER_BOARD_PATH", "\(dir):\(boardDirectory)", 1)
        defer { setenv("HOUND_SPEAKER_BOARD_PATH", previous ?? boardDirectory, 1) }
        let error = try loadError("[board]\nprofile = \"sneaky\"\n")
        #expect(error?.file.hasSuffix("sneaky.toml") == true)
        #expect(error?.problem == "a board profile may only set [audio] and [board]")
    }
}
