import Foundation
import Glibc
import JSONKit
import Testing
import TestSupport

/// `run` with `[home_assistant]` against Debian's mosquitto, with mosquitto_pub and mosquitto_sub in Home Assistant's
/// place: what an owner's Home Assistant sees of the speaker, and what it hears when the speaker dies.
@Suite(.ownThread) struct HomeAssistantCLITests {
    @Test func aRunningSpeakerInHomeAssistant() throws {
        let password = "correct-horse-7"
        let broker = try Broker(user: ("speaker", password))
        let (service, port, _) = try CLI.startService()
        defer { service.terminate(); service.waitUntilExit() }
        let fixture = try RunFixture(recording: "share/demo/what-time-is-it.wav", port: port, hotPhrase: false, extraConfig: """
            [home_assistant]
            mqtt = "mqtt://127.0.0.1:\(broker.port)"
            username = "speaker"
            password = "\(password)"
            node_id = "cli"
            name = "Test Speaker"
            """)
        defer { fixture.remove() }
        let log = "\(fixture.dir)/run.log"
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["run", "--config", fixture.config, "--events", "json"]
        process.currentDirectoryURL = RunFixture.root
        process.environment = fixture.environment(hotPhrase: false)
        let input = Pipe(), output = OutputWatcher()
        process.standardInput = input
        process.standardOutput = output.pipe
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL); process.waitUntilExit() } }
        #expect(output.wait(for: "\"to\":\"ready\""))

        #expect(try broker.retained("hound-speaker/cli/availability") { $0 == "online" } == "online")
        let configs = try broker.retained("homeassistant/#", seconds: 1)
        #expect(configs.count == 9)
        #expect(configs["homeassistant/switch/cli/mute/config"]?.contains("\"name\":\"Test Speaker\"") == true)
        #expect(try broker.retained("hound-speaker/cli/state") { $0 == "idle" } == "idle")

        // An announcement from Home Assistant is said, as `ctl say` would be.
        try broker.publish("hound-speaker/cli/announce/set", "The laundry is done")
        #expect(output.wait(for: "The laundry is done", seconds: 20))
        try broker.publish("hound-speaker/cli/volume/set", "30")
        #expect(output.wait(for: "\"percent\":30", seconds: 20))
        #expect(try broker.retained("hound-speaker/cli/volume") { $0 == "30" } == "30")
        try broker.publish("hound-speaker/cli/mute/set", "ON")
        #expect(try broker.retained("hound-speaker/cli/mute") { $0 == "ON" } == "ON")
        #expect(try broker.retained("hound-speaker/cli/state") { $0 == "muted" } == "muted")

        // Killed (no goodbye): the broker says "offline" for it, the will the speaker left.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(try broker.retained("hound-speaker/cli/availability") { $0 == "offline" } == "offline")
        let lines = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(lines.contains("Home Assistant: connected to the MQTT broker at mqtt://127.0.0.1:\(broker.port)"))
        #expect(!lines.contains(password))
    }
}

/// `run` handing home commands to Home Assistant's conversation API (a stand-in, Tests/support/ha_standin.py), with
/// the local Houndify service understanding the owner's phrase: what a person hears, asked through `ctl text`.
@Suite(.ownThread) struct HomeControlCLITests {
    @Test func homeCommandsAreHomeAssistantsAndItsRepliesAreSaid() throws {
        let token = "cli-token-5d1e"
        let ha = try HomeAssistantStandIn(token: token)
        let (service, port, _) = try CLI.startService()
        defer { service.terminate(); service.waitUntilExit() }
        let control = freePort()
        let fixture = try RunFixture(recording: "share/demo/what-time-is-it.wav", port: port, hotPhrase: false, extraConfig: """
            [[houndify.client_match]]
            expression = '("turn" | "switch") . ("on" | "off") . "the" . ("kitchen" | "hall") . "light"'
            home_assistant = true
            [control]
            listen = "127.0.0.1:\(control)"
            [home_assistant]
            url = "\(ha.url)"
            token = "\(token)"
            """)
        defer { fixture.remove() }
        let (process, _, output) = try fixture.startRun(hotPhrase: false)
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }
        #expect(output.wait(for: "\"to\":\"ready\""))
        func ctl(_ words: String...) throws -> CLI.Result { try CLI.run(["ctl"] + words + ["--config", fixture.config]) }

        let light = try ctl("text", "turn", "off", "the", "kitchen", "light")
        #expect(light.status == 0 && light.stdout == "Turned off the light\n", "\(light.stdout) \(light.stderr)")
        #expect(ha.body(0)?["text"] == "turn off the kitchen light")
        #expect(ha.requests.first?["authorization"]?.stringValue == "Bearer \(token)")
        // Words it does not know, for a phrase handed to it: its own sentence.
        let hall = try ctl("text", "switch", "on", "the", "hall", "light")
        #expect(hall.status == 0 && hall.stdout == "Sorry, I couldn't understand that\n", "\(hall.stdout) \(hall.stderr)")
        // The follow-up is one conversation with Home Assistant.
        #expect(ha.body(1)?["conversation_id"]?.stringValue?.isEmpty == false)
        // Houndify's own answers stay Houndify's: nothing more reaches Home Assistant.
        let time = try ctl("text", "what", "time", "is", "it")
        #expect(time.status == 0 && time.stdout.hasPrefix("It is "), "\(time.stdout)")
        #expect(ha.requests.count == 2)
        // This board has no LED ring: `ctl ring` says so.
        let ring = try ctl("ring", "off")
        #expect(ring.status == 1 && ring.stderr.contains("this speaker has no LED ring"), "\(ring.stderr)")
        // The token is the speaker's secret: never in its events.
        process.terminate()
        process.waitUntilExit()
        #expect(!output.seen.contains(token))
    }
}
