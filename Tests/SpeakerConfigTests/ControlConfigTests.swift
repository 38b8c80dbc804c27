import Foundation
import SpeakerConfig
import SpeakerCore
import Testing

@Suite struct ControlConfigTests {
    func problem(_ text: String) -> ConfigError? {
        do throws(ConfigError) { _ = try ConfigLoader.parse(text: text, file: "c.toml"); return nil } catch { return error }
    }

    @Test func loopbackByDefaultAndOffWhenEmpty() throws {
        let defaults = try ConfigLoader.parse(text: "", file: "c.toml")
        #expect(defaults.control.listen == ControlAddress(host: "127.0.0.1", port: 8780))
        #expect(try ConfigLoader.parse(text: "[control]\nlisten = \"\"\n", file: "c.toml").control.listen == nil)
        #expect(try ConfigLoader.parse(text: "[control]\nlisten = \"localhost:9000\"\n", file: "c.toml").control.listen
                == ControlAddress(host: "127.0.0.1", port: 9000))
        let open = try ConfigLoader.parse(text: "[control]\nlisten = \"0.0.0.0:8780\"\ntoken = \"0123456789abcdef\"\n", file: "c.toml")
        #expect(open.control.listen?.isLoopback == false && open.control.token == "0123456789abcdef")
    }

    @Test func beyondLoopbackOnlyWithAToken() throws {
        let error = try #require(problem("[control]\n\nlisten = \"0.0.0.0:8780\"\n"))
        #expect(error.line == 3 && error.key == "[control] listen")
        #expect(error.problem.contains("set [control] token too"))
    }

    @Test func badValuesAreNamedWithTheirLine() throws {
        let host = try #require(problem("[control]\nlisten = \"speaker.local:8780\"\n"))
        #expect(host.line == 2 && host.problem.contains("IP address or localhost"))
        let port = try #require(problem("[control]\nlisten = \"127.0.0.1:99999\"\n"))
        #expect(port.problem.contains("0 to 65535"))
        let noPort = try #require(problem("[control]\nlisten = \"127.0.0.1\"\n"))
        #expect(noPort.problem.contains("HOST:PORT"))
        let short = try #require(problem("[control]\ntoken = \"secret\"\n"))
        #expect(short.line == 2 && short.problem.contains("at least 16"))
    }
}

@Suite struct ScreenConfigTests {
    func problem(_ text: String) -> ConfigError? {
        do throws(ConfigError) { _ = try ConfigLoader.parse(text: text, file: "c.toml"); return nil } catch { return error }
    }

    @Test func dimsAfterTwoMinutesToATenthByDefault() throws {
        let screen = try ConfigLoader.parse(text: "", file: "c.toml").screen
        #expect(screen == .init(dimAfter: 120, dimLevel: 10, backlight: ""))
        let set = try ConfigLoader.parse(text: "[screen]\ndim_after = 0\ndim_level = 30\nbacklight = \"/sys/class/backlight/10-0045\"\n",
                                         file: "c.toml").screen
        #expect(set == .init(dimAfter: 0, dimLevel: 30, backlight: "/sys/class/backlight/10-0045"))
    }

    @Test func badValuesAreNamedWithTheirLine() throws {
        let off = try #require(problem("[screen]\n\ndim_level = 0\n"))
        #expect(off.line == 3 && off.key == "[screen] dim_level" && off.problem.contains("1 to 100"))
        let negative = try #require(problem("[screen]\ndim_after = -5\n"))
        #expect(negative.line == 2 && negative.key == "[screen] dim_after")
        let relative = try #require(problem("[screen]\nbacklight = \"10-0045\"\n"))
        #expect(relative.line == 2 && relative.problem.contains("/sys/class/backlight"))
        let unknown = try #require(problem("[screen]\nbrightness = 5\n"))
        #expect(unknown.line == 2)
    }
}

@Suite struct HomeAssistantConfigTests {
    func problem(_ text: String) -> ConfigError? {
        do throws(ConfigError) { _ = try ConfigLoader.parse(text: text, file: "c.toml"); return nil } catch { return error }
    }

    @Test func offUntilABrokerIsGiven() throws {
        let defaults = try ConfigLoader.parse(text: "", file: "c.toml").homeAssistant
        #expect(defaults.mqtt == nil && defaults.discoveryPrefix == "homeassistant" && defaults.name == "Hound Speaker" && defaults.nodeID == "")
        let set = try ConfigLoader.parse(text: """
            [home_assistant]
            mqtt = "mqtt://homeassistant.local"
            username = "speaker"
            password = "pw"
            discovery_prefix = "ha/discovery"
            name = "Kitchen"
            node_id = "kitchen_1"
            """, file: "c.toml").homeAssistant
        #expect(set.mqtt == MQTTAddress(host: "homeassistant.local", port: 1883, tls: false))
        #expect(set.username == "speaker" && set.password == "pw" && set.discoveryPrefix == "ha/discovery")
        #expect(set.name == "Kitchen" && set.nodeID == "kitchen_1")
        func broker(_ text: String) throws -> MQTTAddress? {
            try ConfigLoader.parse(text: "[home_assistant]\nmqtt = \"\(text)\"\n", file: "c.toml").homeAssistant.mqtt
        }
        #expect(try broker("mqtts://broker.example:8884") == MQTTAddress(host: "broker.example", port: 8884, tls: true))
        #expect(try broker("mqtts://broker.example") == MQTTAddress(host: "broker.example", port: 8883, tls: true))
        #expect(try broker("mqtt://192.168.1.5:1884/") == MQTTAddress(host: "192.168.1.5", port: 1884, tls: false))
        #expect(try broker("mqtt://[fd00::5]:1883") == MQTTAddress(host: "fd00::5", port: 1883, tls: false))
        #expect(try broker("") == nil)
        #expect(MQTTAddress(host: "fd00::5", port: 1883, tls: false).description == "mqtt://[fd00::5]:1883")
    }

    @Test func badValuesAreNamedWithTheirLine() throws {
        let scheme = try #require(problem("[home_assistant]\n\nmqtt = \"http://ha.local:1883\"\n"))
        #expect(scheme.line == 3 && scheme.key == "[home_assistant] mqtt" && scheme.problem.contains("mqtt://HOST:PORT or mqtts://HOST:PORT"))
        // The password would be shown wherever the address is: refused, and the refusal does not repeat it.
        let inline = try #require(problem("[home_assistant]\nmqtt = \"mqtt://speaker:hunter2@ha.local\"\n"))
        #expect(inline.line == 2 && inline.problem.contains("must not hold a user or password") && !inline.problem.contains("hunter2"))
        let port = try #require(problem("[home_assistant]\nmqtt = \"mqtt://ha.local:0\"\n"))
        #expect(port.problem.contains("1 to 65535"))
        let path = try #require(problem("[home_assistant]\nmqtt = \"mqtt://ha.local:1883/x\"\n"))
        #expect(path.problem.contains("no path"))
        let host = try #require(problem("[home_assistant]\nmqtt = \"mqtt://ha local\"\n"))
        #expect(host.problem.contains("a name or an IP address"))
        let node = try #require(problem("[home_assistant]\nmqtt = \"mqtt://ha.local\"\nnode_id = \"kitchen/1\"\n"))
        #expect(node.line == 3 && node.key == "[home_assistant] node_id" && node.problem.contains("letters, digits, - and _"))
        let wildcard = try #require(problem("[home_assistant]\ndiscovery_prefix = \"home/#\"\n"))
        #expect(wildcard.line == 2 && wildcard.problem.contains("levels joined by /"))
        let name = try #require(problem("[home_assistant]\nname = \" \"\n"))
        #expect(name.problem.contains("1 to 64 characters"))
        let orphan = try #require(problem("[home_assistant]\nusername = \"speaker\"\n"))
        #expect(orphan.line == 2 && orphan.key == "[home_assistant] username" && orphan.problem.contains("is set, but mqtt is not"))
    }

    /// The broker's password is a secret like the client key: a file anyone can read that holds it is refused.
    @Test func aFileWithThePasswordMustBePrivate() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hs-ha-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = "\(dir)/speaker.toml"
        try "[home_assistant]\nmqtt = \"mqtt://127.0.0.1\"\nusername = \"s\"\npassword = \"hunter2\"\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o644)
        do throws(ConfigError) {
            _ = try ConfigLoader.load(path: path, environment: [:])
            Issue.record("a world-readable file with the broker's password was taken")
        } catch {
            #expect(error.problem.contains("holds [home_assistant] password but is readable by other users"))
            #expect(!error.description.contains("hunter2"))
        }
        chmod(path, 0o640)
        let config = try ConfigLoader.load(path: path, environment: [:])
        #expect(config.warnings.contains { $0.contains("holds the MQTT broker's password and is group-readable") })
        chmod(path, 0o600)
        #expect(try ConfigLoader.load(path: path, environment: [:]).homeAssistant.password == "hunter2")
    }

    /// The conversation hand-off (`url`, `token`, `agent_id`): off by default, taken as given when set.
    @Test func conversationHandOffIsOffUntilAURLIsGiven() throws {
        let defaults = try ConfigLoader.parse(text: "", file: "c.toml").homeAssistant
        #expect(defaults.url == "" && defaults.token == "" && defaults.agentID == "")
        let set = try ConfigLoader.parse(text: """
            [home_assistant]
            url = "http://homeassistant.local:8123"
            token = "eyJhbGciOiJIUzI1NiJ9.e30.abc-_"
            agent_id = "conversation.home_assistant"
            """, file: "c.toml").homeAssistant
        #expect(set.url == "http://homeassistant.local:8123" && set.token == "eyJhbGciOiJIUzI1NiJ9.e30.abc-_")
        #expect(set.agentID == "conversation.home_assistant")
        // Without MQTT: the two halves of [home_assistant] are independent.
        #expect(set.mqtt == nil)
        func url(_ text: String) throws -> String {
            try ConfigLoader.parse(text: "[home_assistant]\nurl = \"\(text)\"\ntoken = \"t\"\n", file: "c.toml").homeAssistant.url
        }
        #expect(try url("https://ha.example.org/") == "https://ha.example.org/")
        #expect(try url("http://192.168.1.5:8123") == "http://192.168.1.5:8123")
        #expect(try url("http://[fd00::5]:8123") == "http://[fd00::5]:8123")
        #expect(try url("https://example.org/homeassistant") == "https://example.org/homeassistant")
        let off = try ConfigLoader.parse(text: "[home_assistant]\nurl = \"\"\n", file: "c.toml").homeAssistant
        #expect(off.url == "")
    }

    @Test func badConversationValuesAreNamedWithTheirLine() throws {
        let scheme = try #require(problem("[home_assistant]\n\nurl = \"mqtt://ha.local:8123\"\ntoken = \"t\"\n"))
        #expect(scheme.line == 3 && scheme.key == "[home_assistant] url")
        #expect(scheme.problem.contains("http://HOST:PORT or https://HOST:PORT"))
        let bare = try #require(problem("[home_assistant]\nurl = \"homeassistant.local:8123\"\ntoken = \"t\"\n"))
        #expect(bare.line == 2 && bare.problem.contains("http://homeassistant.local:8123"))
        let noHost = try #require(problem("[home_assistant]\nurl = \"http://\"\ntoken = \"t\"\n"))
        #expect(noHost.line == 2 && noHost.problem.contains("with a host"))
        // A password in the address would be shown wherever the address is: refused, and not repeated.
        let inline = try #require(problem("[home_assistant]\nurl = \"http://me:hunter2@ha.local:8123\"\ntoken = \"t\"\n"))
        #expect(inline.line == 2 && inline.problem.contains("must not hold a user or password"))
        #expect(!inline.problem.contains("hunter2"))
        let query = try #require(problem("[home_assistant]\nurl = \"http://ha.local:8123/?x=1\"\ntoken = \"t\"\n"))
        #expect(query.problem.contains("no query"))
        // The token goes into a header as it is; the refusal does not repeat it.
        let spaced = try #require(problem("[home_assistant]\nurl = \"http://ha.local:8123\"\ntoken = \"abc def\"\n"))
        #expect(spaced.line == 3 && spaced.key == "[home_assistant] token" && !spaced.problem.contains("abc def"))
        let broken = try #require(problem("[home_assistant]\nurl = \"http://ha.local:8123\"\ntoken = \"abc\\r\\nX-Evil: 1\"\n"))
        #expect(broken.key == "[home_assistant] token" && !broken.problem.contains("X-Evil"))
        let orphan = try #require(problem("[home_assistant]\ntoken = \"abc\"\n"))
        #expect(orphan.line == 2 && orphan.key == "[home_assistant] token" && orphan.problem.contains("is set, but url is not"))
        let agent = try #require(problem("[home_assistant]\nagent_id = \"conversation.x\"\n"))
        #expect(agent.key == "[home_assistant] agent_id" && agent.problem.contains("is set, but url is not"))
        let tokenless = try #require(problem("[home_assistant]\nurl = \"http://ha.local:8123\"\n"))
        #expect(tokenless.line == 2 && tokenless.key == "[home_assistant] url" && tokenless.problem.contains("token is not"))
        let type = try #require(problem("[home_assistant]\nurl = 8123\n"))
        #expect(type.line == 2 && type.key == "[home_assistant] url")
    }

    /// Home Assistant's token is a secret like the broker's password: a file anyone can read that holds it is refused.
    @Test func aFileWithTheTokenMustBePrivate() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hs-ha-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = "\(dir)/speaker.toml"
        try "[home_assistant]\nurl = \"http://127.0.0.1:8123\"\ntoken = \"s3cr3t-token\"\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o644)
        do throws(ConfigError) {
            _ = try ConfigLoader.load(path: path, environment: [:])
            Issue.record("a world-readable file with Home Assistant's token was taken")
        } catch {
            #expect(error.problem.contains("holds [home_assistant] token but is readable by other users"))
            #expect(!error.description.contains("s3cr3t-token"))
        }
        chmod(path, 0o640)
        let config = try ConfigLoader.load(path: path, environment: [:])
        #expect(config.warnings.contains { $0.contains("holds Home Assistant's access token and is group-readable") })
        chmod(path, 0o600)
        #expect(try ConfigLoader.load(path: path, environment: [:]).homeAssistant.token == "s3cr3t-token")
    }
}
