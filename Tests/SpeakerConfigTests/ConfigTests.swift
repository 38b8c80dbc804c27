import Foundation
import JSONKit
import Testing
import HoundifyCore
import Logging
import AudioCore
import SpeakerCore
@testable import SpeakerConfig

let key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-Pw=="

/// Writes `text` to a temporary file with `mode` and returns its path.
func configFile(_ text: String, mode: Int = 0o600) throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("hs-config-\(UUID().uuidString).toml").path
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
    return path
}

func loadError(_ text: String, mode: Int = 0o600, environment: [String: String] = [:]) throws -> ConfigError? {
    let path = try configFile(text, mode: mode)
    defer { try? FileManager.default.removeItem(atPath: path) }
    do { _ = try ConfigLoader.load(path: path, environment: environment); return nil } catch { return error }
}

@Suite struct ConfigTests {
    @Test func theShippedConfigIsValidAndHasTheDefaults() throws {
        // #filePath: Tests/SpeakerConfigTests/ConfigTests.swift -> the package root.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let config = try ConfigLoader.load(path: root.appendingPathComponent("config/speaker.toml").path, environment: [:])
        let defaults = SpeakerConfiguration()
        #expect(config.houndify == defaults.houndify)
        #expect(config.location == defaults.location)
        #expect(config.audio == defaults.audio)
        #expect(config.serve == defaults.serve)
        #expect(config.logging == defaults.logging)
    }

    @Test func readsEveryKey() throws {
        let path = try configFile("""
            [houndify]
            client_id = "AAECAwQFBgcICQoLDA0ODw=="
            client_key = "\(key)"
            endpoint = "http://127.0.0.1:9000"
            user_id = "kitchen"
            device_id = "pi-1"
            connect_timeout = 2
            response_timeout = 7.5
            audio_format = "speex"
            unit_preference = "METRIC"
            conversation_state_file = "/tmp/conv.json"
            [houndify.request_info]
            InputLanguageIETFTag = "fr-FR"
            Domains = { Only = { DomainNames = ["Weather"] } }
            [location]
            latitude = 48.85
            longitude = 2
            accuracy = 30.0
            timezone = "Europe/Paris"
            [audio]
            input = "plughw:CARD=seeed2micvoicec,DEV=0"
            output = "hw:0"
            input_rate = 48000
            input_channels = 2
            input_channel = 1
            input_pacing = "realtime"
            earcons = { error = "/opt/error.wav" }
            [serve]
            port = 9000
            transcript = "hello"
            [listening]
            end_of_speech = "long"
            long_silence_ms = 1500
            [speaker]
            speech = false
            recording_limit_ms = 9000
            offline_commands = false
            [speech]
            voice = "en-gb"
            rate = 150
            [logging]
            level = "debug"
            """)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let c = try ConfigLoader.load(path: path, environment: [:])
        // The tables land in the subsystems' own settings, typed: nothing for the assembly to copy or default.
        var capture = CaptureSettings(device: "plughw:CARD=seeed2micvoicec,DEV=0")
        (capture.rate, capture.channels, capture.channel, capture.pacing) = (48000, 2, 1, .realTime)
        #expect(c.audio.capture == capture && c.audio.earcons == [.error: "/opt/error.wav"])
        var endpointer = Endpointer.Settings()
        (endpointer.mode, endpointer.longSilenceMS) = (.long, 1500)
        #expect(c.listening == endpointer)
        var machine = SpeakerMachine.Settings()
        (machine.enableSpeech, machine.recordingLimitMS, machine.offlineCommands) = (false, 9000, false)
        #expect(c.speaker.machine == machine)
        // On unless turned off: a speaker that loses the internet still sets its timers (issue #63).
        #expect(SpeakerConfiguration().speaker.machine.offlineCommands)
        #expect(c.speech.voice == "en-gb" && c.speech.rate == 150 && c.speech.pitch == VoiceSettings().pitch)
        #expect(c.houndify.clientID == "AAECAwQFBgcICQoLDA0ODw==" && c.houndify.clientKey == key)
        #expect(c.houndify.endpoint == "http://127.0.0.1:9000" && c.houndify.userID == "kitchen" && c.houndify.deviceID == "pi-1")
        #expect(c.houndify.connectTimeout == 2 && c.houndify.responseTimeout == 7.5)
        #expect(c.houndify.audioFormat == .speex && c.houndify.unitPreference == "METRIC")
        #expect(c.houndify.conversationStateFile == "/tmp/conv.json")
        #expect(c.houndify.requestInfo == ["InputLanguageIETFTag": "fr-FR", "Domains": ["Only": ["DomainNames": ["Weather"]]]])
        #expect(c.location == .init(latitude: 48.85, longitude: 2, accuracy: 30, timezone: "Europe/Paris"))
        #expect(c.audio.input == "plughw:CARD=seeed2micvoicec,DEV=0" && c.audio.output == "hw:0")
        #expect(c.serve.port == 9000 && c.serve.transcript == "hello" && c.logging.level == .debug)
        // What the client is built from (Tests/SpeakerTests/HoundifyClientConfigTests.swift builds it).
        #expect(c.houndify.connectTimeoutMS == 2000 && c.houndify.responseTimeoutMS == 7500 && c.houndify.audioFormat == .speex)
        #expect(c.houndify.unitPreference == "METRIC" && c.houndify.conversationStateFile == "/tmp/conv.json")
        #expect(c.houndify.requestInfoExtra["InputLanguageIETFTag"] == "fr-FR")
    }

    @Test func unknownKeyNamesLineAndSuggests() throws {
        let error = try loadError("[houndify]\nendpoint = \"https://api.houndify.com\"\nclient_kye = \"x\"\n")
        #expect(error?.line == 3)
        #expect(error?.key == "[houndify] client_kye")
        #expect(error?.problem == "unknown key; did you mean 'client_key'?")
        #expect(error?.description.hasSuffix(".toml:3: [houndify] client_kye: unknown key; did you mean 'client_key'?") == true)
    }

    @Test func unknownTableIsRejected() throws {
        let error = try loadError("[audio]\ninput = \"default\"\n\n[locaton]\nlatitude = 1.0\n")
        #expect(error?.line == 4)
        #expect(error?.problem == "unknown table; did you mean [location]?")
    }

    @Test func wrongTypesAndValuesNameTheKeyAndLine() throws {
        #expect(try loadError("[houndify]\nconnect_timeout = \"5\"\n")?.description.contains(":2: [houndify] connect_timeout: must be a number of seconds, not string") == true)
        #expect(try loadError("[houndify]\n\nresponse_timeout = 0\n")?.description.contains(":3: [houndify] response_timeout: must be 1.0 to 300.0 seconds, not 0.0") == true)
        #expect(try loadError("[location]\nlatitude = 91.0\nlongitude = 0.0\n")?.description.contains(":2: [location] latitude: must be between -90.0 and 90.0, not 91.0") == true)
        #expect(try loadError("[location]\nlatitude = 10.0\n")?.problem == "latitude and longitude go together: set both or neither")
        #expect(try loadError("[location]\ntimezone = \"Mars/Olympus\"\n")?.problem.contains("unknown time zone \"Mars/Olympus\"") == true)
        #expect(try loadError("[houndify]\naudio_format = \"opus\"\n")?.problem == "must be \"pcm\" or \"speex\", not \"opus\"")
        #expect(try loadError("[houndify]\nendpoint = \"api.houndify.com\"\n")?.problem.contains("must be an http:// or https:// URL") == true)
        #expect(try loadError("[audio]\ninput = \"\"\n")?.description.contains(":2: [audio] input: must name an ALSA PCM") == true)
        #expect(try loadError("[serve]\nport = 70000\n")?.problem == "must be 0 to 65535, not 70000")
        #expect(try loadError("[logging]\nlevel = \"loud\"\n")?.problem
                == "must be \"trace\", \"debug\", \"info\", \"notice\", \"warning\", \"error\" or \"critical\", not \"loud\"")
        // Every key whose values are a subsystem's enum decodes straight into it, and names all of its cases when wrong.
        #expect(try loadError("[listening]\nend_of_speech = \"medium\"\n")?.description.hasSuffix(":2: [listening] end_of_speech: must be \"short\", \"long\" or \"none\", not \"medium\"") == true)
        #expect(try loadError("[audio]\ninput_pacing = \"fast\"\n")?.problem == "must be \"auto\", \"realtime\" or \"none\", not \"fast\"")
        #expect(try loadError("[board]\ntalk_mode = \"push\"\n")?.problem == "must be \"tap\" or \"hold\", not \"push\"")
        #expect(try loadError("[board]\ndriver = \"wiringpi\"\n")?.problem == "must be \"gpiod\" or \"simulated\", not \"wiringpi\"")
        #expect(try loadError("[board]\nleds = { status = \"GPIO5\" }\n")?.problem.hasPrefix("unknown LED \"status\"") == true)
        #expect(try loadError("[houndify]\nclient_key = \"not base64!\"\n")?.problem.contains("is not base64url text") == true)
        #expect(try loadError("[hotphrase]\nenabled = true\nsensitivity = 1.5\n")?.description.contains(":3: [hotphrase] sensitivity: must be between 0.0 and 1.0, not 1.5") == true)
        #expect(try loadError("[hotphrase]\nenabled = \"yes\"\n")?.description.contains(":2: [hotphrase] enabled:") == true)
        #expect(try loadError("[hotphrase]\nrefractory_ms = 60000\n")?.key == "[hotphrase] refractory_ms")
        #expect(try loadError("[hotphrase]\nsensitivty = 0.5\n")?.problem == "unknown key; did you mean 'sensitivity'?")
    }

    /// Timeouts at the extremes: 1e16 s once overflowed the milliseconds and killed every command (SIGILL), and a
    /// tiny connect timeout rounded to 0 ms, which libcurl reads as its 300 s default.
    @Test(arguments: ["connect_timeout", "response_timeout"])
    func timeoutsOutsideTheirRangeAreNamed(key: String) throws {
        for value in ["1e16", "1e30", "inf", "-inf", "nan", "0", "-1", "0.0004", "0.0001"] {
            let error = try loadError("[houndify]\n\(key) = \(value)\n")
            #expect(error?.line == 2 && error?.key == "[houndify] \(key)", "\(key) = \(value): \(String(describing: error))")
            #expect(error?.problem.contains("seconds") == true, "\(key) = \(value)")
        }
        let config = try ConfigLoader.load(path: try configFile("[houndify]\nconnect_timeout = 120\nresponse_timeout = 1\n"), environment: [:])
        #expect(config.houndify.connectTimeout == 120 && config.houndify.responseTimeout == 1)
    }

    @Test func aConfigThatIsNotUTF8IsToldSoWithItsLine() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hs-config-\(UUID().uuidString).toml").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        // Latin-1 "Café" on line 3, as an editor set to another encoding writes it.
        try Data([UInt8]("[location]\n# comment\ntimezone = \"Caf".utf8) + [0xE9] + [UInt8]("\"\n".utf8)).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        #expect(throws: ConfigError(file: path, line: 3, key: nil, problem: "is not UTF-8 text (byte 0xE9 here); save it as UTF-8")) {
            try ConfigLoader.load(path: path, environment: [:])
        }
    }

    @Test func hotPhraseSettingsAreRead() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hs-hp-\(UUID().uuidString).toml").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data("[hotphrase]\nenabled = false\nmodel = \"/opt/m.hpm\"\nsensitivity = 0.7\nrefractory_ms = 1500\n".utf8).write(to: URL(fileURLWithPath: dir))
        let config = try ConfigLoader.load(path: dir, environment: [:])
        #expect(config.hotphrase == HotPhraseSettings(enabled: false, model: "/opt/m.hpm", sensitivity: 0.7, refractoryMS: 1500))
        #expect(config.hotphrase.stopWord, "the stop word for everyone is on unless turned off")
        try Data("[hotphrase]\nstop_word = false\n".utf8).write(to: URL(fileURLWithPath: dir))
        #expect(try ConfigLoader.load(path: dir, environment: [:]).hotphrase.stopWord == false)
        #expect(try loadError("[hotphrase]\nstop_word = \"no\"\n")?.description.contains(":2: [hotphrase] stop_word:") == true)
    }

    @Test func invalidTOMLGivesItsLine() throws {
        let error = try loadError("[houndify]\nendpoint = \"http://x\"\nuser_id = \n")
        #expect(error?.line == 3)
        #expect(error?.problem.hasPrefix("not valid TOML") == true)
    }

    @Test func missingFileIsNamed() {
        #expect(throws: ConfigError(file: "/nonexistent/speaker.toml", line: nil, key: nil, problem: "no such file")) {
            try ConfigLoader.load(path: "/nonexistent/speaker.toml", environment: [:])
        }
    }

    @Test func environmentOverridesCredentials() throws {
        let path = try configFile("[houndify]\nclient_id = \"file-id\"\nclient_key = \"\(key)\"\n")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let c = try ConfigLoader.load(path: path, environment: ["HOUNDIFY_CLIENT_ID": "env-id", "HOUNDIFY_CLIENT_KEY": "AAAA"])
        #expect(c.houndify.clientID == "env-id" && c.houndify.clientKey == "AAAA")
        #expect(c.clientIDSource == "HOUNDIFY_CLIENT_ID" && c.clientKeySource == "HOUNDIFY_CLIENT_KEY")
    }

    @Test func worldReadableKeyFileIsRefusedWithTheFix() throws {
        let error = try loadError("[houndify]\nclient_key = \"\(key)\"\n", mode: 0o644)
        #expect(error?.problem.contains("readable by other users (mode 644); run: chmod 600") == true)
        // Without a key in it, the same mode is fine (the shipped config is 0644).
        #expect(try loadError("[houndify]\nclient_id = \"x\"\n", mode: 0o644) == nil)
        // Group-readable: a warning, not a refusal.
        let path = try configFile("[houndify]\nclient_key = \"\(key)\"\n", mode: 0o640)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(try ConfigLoader.load(path: path, environment: [:]).warnings.first?.contains("group-readable") == true)
    }

    @Test func configPathOrder() {
        #expect(ConfigLoader.resolvePath(explicit: "/x.toml", fileExists: { _ in true }) == "/x.toml")
        #expect(ConfigLoader.resolvePath(explicit: nil, fileExists: { _ in true }) == "/etc/hound-speaker/speaker.toml")
        #expect(ConfigLoader.resolvePath(explicit: nil, fileExists: { $0 == "config/speaker.toml" }) == "config/speaker.toml")
        #expect(ConfigLoader.resolvePath(explicit: nil, fileExists: { _ in false }) == nil)
    }
}
