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
