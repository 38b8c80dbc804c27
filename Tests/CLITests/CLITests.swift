import Foundation
import Testing
import TestSupport

/// Runs the built `hound-speaker` binary as a person or a script would.
struct CLI {
    /// `swift test` builds the executable next to the test bundle.
    static let binary: URL = {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [bundle, bundle.deletingLastPathComponent()] {
            let url = candidate.appendingPathComponent("hound-speaker")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return bundle.appendingPathComponent("hound-speaker")
    }()

    struct Result { var status: Int32; var stdout: String; var stderr: String }

    static let id = "AAECAwQFBgcICQoLDA0ODw=="
    static let key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-Pw=="

    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> Result {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["HOUNDIFY_CLIENT_ID"] = nil
        env["HOUNDIFY_CLIENT_KEY"] = nil
        // Each command its own conversation (the state directory would otherwise be the user's, shared by all).
        env["XDG_STATE_HOME"] = FileManager.default.temporaryDirectory.appendingPathComponent("hs-cli-state-\(UUID().uuidString)").path
        for (k, v) in environment { env[k] = v }
        process.environment = env
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                      stderr: String(decoding: stderr, as: UTF8.self))
    }

    /// Starts `serve --port 0` and returns it with its port, read from its first line.
    static func startService(extra: [String] = []) throws -> (Process, Int, String) {
        let config = FileManager.default.temporaryDirectory.appendingPathComponent("hs-cli-\(UUID().uuidString).toml").path
        try Data("[houndify]\nclient_id = \"\(id)\"\nclient_key = \"\(key)\"\n".utf8).write(to: URL(fileURLWithPath: config))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: config)
        let process = Process()
        process.executableURL = binary
        process.arguments = ["serve", "--port", "0", "--config", config] + extra
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        // The first line is "listening on http://127.0.0.1:PORT"; reading blocks until it is written.
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let byte = out.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty { break }
            line += byte
        }
        let text = String(decoding: line, as: UTF8.self)
        guard let port = text.split(separator: ":").last.flatMap({ Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }) else {
            process.terminate()
            throw CLIError.noPort(text)
        }
        return (process, port, config)
    }

    enum CLIError: Error { case noPort(String) }

    /// A private config file holding `text`.
    static func writeConfig(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hs-cli-\(UUID().uuidString).toml").path
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return path
    }

    static func clientConfig(port: Int, key: String = key) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hs-cli-\(UUID().uuidString).toml").path
        try Data("""
            [houndify]
            client_id = "\(id)"
            client_key = "\(key)"
            endpoint = "http://127.0.0.1:\(port)"
            response_timeout = 5.0
            [location]
            latitude = 40.0
            longitude = -74.0
            """.utf8).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        return path
    }
}

@Suite(.serialized, .ownThread) struct CLITests {
    @Test func textAndVoiceAgainstTheLocalService() throws {
        let (service, port, _) = try CLI.startService()
        defer { service.terminate(); service.waitUntilExit() }
        let config = try CLI.clientConfig(port: port)

        let text = try CLI.run(["text", "what time is it", "--config", config])
        #expect(text.status == 0)
        #expect(text.stdout.hasPrefix("It is "))
        let json = try CLI.run(["text", "what is the weather", "--config", config, "--json"])
        #expect(json.status == 0)
        #expect(json.stdout.contains("\"Format\"") && json.stdout.contains("\"Status\""))

        // A real spoken recording at 22.05 kHz, converted and streamed as fast as possible.
        let wav = FileManager.default.temporaryDirectory.appendingPathComponent("hs-cli-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: wav) }
        let espeak = Process()
        espeak.executableURL = URL(fileURLWithPath: "/usr/bin/espeak-ng")
        espeak.arguments = ["-w", wav, "what time is it"]
        try espeak.run()
        espeak.waitUntilExit()
        let voice = try CLI.run(["voice", wav, "--config", config, "--fast"])
        #expect(voice.status == 0)
        #expect(voice.stderr.contains("… what"))
        #expect(voice.stderr.contains("heard: what time is it"))
        #expect(voice.stdout.hasPrefix("It is "))
        #expect(!voice.stdout.contains(CLI.key) && !voice.stderr.contains(CLI.key))
    }

    /// Outside systemd the conversation lives in the user's state directory: two `text` commands in a row are
    /// one conversation (the local service's timer asks "For how long?" and takes the answer), and
    /// `--new-conversation` starts afresh.
    @Test func twoTextCommandsContinueOneConversation() throws {
        let (service, port, _) = try CLI.startService()
        defer { service.terminate(); service.waitUntilExit() }
        let config = try CLI.clientConfig(port: port)
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("hs-xdg-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let environment = ["XDG_STATE_HOME": state]
        #expect(try CLI.run(["text", "set a timer", "--config", config], environment: environment).stdout == "For how long?\n")
        #expect(FileManager.default.fileExists(atPath: "\(state)/hound-speaker/conversation.json"))
        // Understood as the answer to "for how long?": a timer command, which only the speaker carries out. `text`
        // says where timers live (it once printed Houndify's "Timers are not supported by this client." as the
        // answer).
        let timer = try CLI.run(["text", "five minutes", "--config", config], environment: environment)
        #expect(timer.status == 1 && timer.stdout.isEmpty, "\(timer.stdout)")
        #expect(timer.stderr.contains("timers live on the speaker") && timer.stderr.contains("ctl text \"five minutes\""), "\(timer.stderr)")
        #expect(try CLI.run(["text", "set a timer", "--config", config], environment: environment).stdout == "For how long?\n")
        let fresh = try CLI.run(["text", "five minutes", "--config", config, "--new-conversation"], environment: environment)
        #expect(fresh.status == 0 && fresh.stdout != "OK, a timer for 5 minutes, starting now.\n", "\(fresh.stdout)")
    }

    @Test func wrongKeyIsOneLineAndNonZero() throws {
        let (service, port, _) = try CLI.startService()
        defer { service.terminate(); service.waitUntilExit() }
        let wrong = "-yBFao-02f4jSG2St9wBJktwlbrfBClOc5i94gcsUXabwOUKL1R5nsPoDTJXfKHG6xA1Wn-kye4TOF2Cp8zxFg=="
        let result = try CLI.run(["text", "what time is it", "--config", CLI.clientConfig(port: port, key: wrong)])
        #expect(result.status == 1)
        #expect(result.stderr == "hound-speaker: error: Houndify refused the client ID or key (HTTP 403: Authentication failed: invalid client ID or signature) [AuthenticationFailed]\n")
        #expect(!result.stderr.contains(wrong))
    }

    @Test func badInputsGiveOneLineErrors() throws {
        let config = try CLI.clientConfig(port: 1)
        // A missing recording is missing input (66, as README says), for every command that reads one.
        for command in ["voice", "endpoint", "hotphrase"] {
            let missing = try CLI.run([command, "/nonexistent/query.wav"] + (command == "endpoint" ? [] : ["--config", config]))
            #expect(missing.status == 66, "\(command): \(missing.status)")
            #expect(missing.stderr.hasPrefix("hound-speaker: error: /nonexistent/query.wav: cannot read audio"), "\(command): \(missing.stderr)")
            #expect(missing.stderr.split(separator: "\n").count == 1)
        }

        let refused = try CLI.run(["text", "hello", "--config", config])
        #expect(refused.status == 1)
        #expect(refused.stderr.hasPrefix("hound-speaker: error: cannot connect to Houndify"))
        #expect(refused.stderr.hasSuffix("[ConnectionFailure]\n"))

        let noCredentials = FileManager.default.temporaryDirectory.appendingPathComponent("hs-cli-\(UUID().uuidString).toml").path
        try Data("[location]\nlatitude = 1.0\nlongitude = 2.0\n".utf8).write(to: URL(fileURLWithPath: noCredentials))
        let nocred = try CLI.run(["text", "hello", "--config", noCredentials])
        #expect(nocred.status == 78)
        #expect(nocred.stderr.contains("[houndify] client_id: no Houndify client ID"))

        let badConfig = FileManager.default.temporaryDirectory.appendingPathComponent("hs-cli-\(UUID().uuidString).toml").path
        try Data("[houndify]\nendpoint = 5\n".utf8).write(to: URL(fileURLWithPath: badConfig))
        let bad = try CLI.run(["text", "hello", "--config", badConfig])
        #expect(bad.status == 78)
        #expect(bad.stderr == "hound-speaker: error: \(badConfig):2: [houndify] endpoint: must be a string, not integer\n")
    }

    @Test func environmentCredentialsOverrideAndKeyStaysSecret() throws {
        let (service, port, _) = try CLI.startService()
        defer { service.terminate(); service.waitUntilExit() }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hs-cli-\(UUID().uuidString).toml").path
        try Data("[houndify]\nendpoint = \"http://127.0.0.1:\(port)\"\n".utf8).write(to: URL(fileURLWithPath: path))
        let env = ["HOUNDIFY_CLIENT_ID": CLI.id, "HOUNDIFY_CLIENT_KEY": CLI.key]
        let text = try CLI.run(["text", "what day is it", "--config", path], environment: env)
        #expect(text.status == 0 && text.stdout.hasPrefix("Today is "))
        let doctor = try CLI.run(["doctor", "--config", path], environment: env)
        #expect(doctor.stdout.contains("ok   Houndify client key (from HOUNDIFY_CLIENT_KEY)"))
        #expect(!doctor.stdout.contains(CLI.key) && !doctor.stderr.contains(CLI.key))
        // The keys are tried with one signed query, so a wrong key does not pass every check.
        #expect(doctor.stdout.contains("ok   Houndify accepted the client ID and key: a signed query was answered in "))
        // [speaker] offline_commands is on by default, and this machine has PocketSphinx (tools/install-deps.sh).
        #expect(doctor.stdout.contains("ok   offline commands: PocketSphinx and its model"), "\(doctor.stdout)")
        let wrongKey = "-yBFao-02f4jSG2St9wBJktwlbrfBClOc5i94gcsUXabwOUKL1R5nsPoDTJXfKHG6xA1Wn-kye4TOF2Cp8zxFg=="
        let refused = try CLI.run(["doctor", "--config", path], environment: ["HOUNDIFY_CLIENT_ID": CLI.id, "HOUNDIFY_CLIENT_KEY": wrongKey])
        #expect(refused.status == 1)
        #expect(refused.stdout.contains("FAIL Houndify refused the client ID or key: ") && refused.stdout.contains("[AuthenticationFailed]"),
                "\(refused.stdout)")
        #expect(!refused.stdout.contains(wrongKey))
    }

    @Test func boardCheckWithTheSimulatedBoard() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["board", "--config", root.appendingPathComponent("config/desktop.toml").path]
        process.environment = ["HOUND_SPEAKER_BOARD_PATH": root.appendingPathComponent("board").path]
        let input = Pipe(), output = OutputWatcher()
        process.standardInput = input
        process.standardOutput = output.pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        guard output.wait(for: "[ready") else { Issue.record("no [ready line: \(output.seen)"); return }
        input.fileHandleForWriting.write(Data("press\n".utf8))
        #expect(output.wait(for: "intent press"))  // tap-to-talk (the simulated profile)
        input.fileHandleForWriting.write(Data("release\n".utf8))
        #expect(output.wait(for: "intent tapEnded"))
        try input.fileHandleForWriting.close()  // end of input: the check ends, LEDs off
        output.readToEnd()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(output.seen.contains("[listening ● ○ ○]"))
        #expect(output.seen.hasSuffix("[off ○ ○ ○]\n"))
    }

    /// Every start-up failure the config causes exits 78, which the service unit does not restart on (a restart
    /// cannot mend it: systemd would otherwise start it every 5 s for ever), and names the key.
    @Test(arguments: [
        ("[audio]\nearcons = { error = \"/nonexistent/error.wav\" }\n[board]\nprofile = \"simulated\"\n", "[audio] earcons"),
        ("[hotphrase]\nenabled = true\nmodel = \"/nonexistent/ok-hound.hpm\"\n[board]\nprofile = \"simulated\"\n", "[hotphrase] model"),
        ("[speech]\nvoice = \"xx-nonexistent\"\n[board]\nprofile = \"simulated\"\n", "[speech] voice"),
        ("[houndify]\nconnect_timeout = 1e30\n", "[houndify] connect_timeout"),
        ("[board]\ndriver = \"gpiod\"\nchip = \"gpiochip-nonexistent\"\nbutton = \"GPIO27\"\n", "GPIO chip \"gpiochip-nonexistent\""),
    ])
    func runExits78OnEveryConfigMistake(config: String, names: String) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hs-cli-\(UUID().uuidString).toml").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(config.utf8).write(to: URL(fileURLWithPath: path))
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let run = try CLI.run(["run", "--config", path], environment: [
            "HOUNDIFY_CLIENT_ID": CLI.id, "HOUNDIFY_CLIENT_KEY": CLI.key,
            "HOUND_SPEAKER_BOARD_PATH": root.appendingPathComponent("board").path])
        #expect(run.status == 78, "\(run.stderr)")
        #expect(run.stderr.contains(names), "\(run.stderr)")
    }

    @Test(.enabled(if: !FileManager.default.fileExists(atPath: "/dev/gpiochip0"),
                   "this machine has a /dev/gpiochip0: the test needs a machine without one"))
    func doctorNamesTheMissingGPIOChip() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hs-cli-\(UUID().uuidString).toml").path
        try Data("[board]\nbutton = \"GPIO27\"\n".utf8).write(to: URL(fileURLWithPath: path))
        let doctor = try CLI.run(["doctor", "--config", path])
        #expect(doctor.status == 1)
        #expect(doctor.stdout.contains("info board: button GPIO27 (active low), LEDs listening=GPIO22 searching=GPIO23 speaking=GPIO24 on gpiochip0"))
        #expect(doctor.stdout.contains("FAIL GPIO: GPIO chip \"gpiochip0\" (for line GPIO27 on gpiochip0) cannot be opened"))
        #expect(doctor.stdout.contains("gpiodetect"))
    }

    /// espeak-ng's language codes ("en-gb", as config/speaker.toml suggests) are voices as `espeak-ng -v` takes
    /// them; a voice it lacks is a configuration problem (78, which the unit does not restart on), naming the key.
    @Test func voicesByLanguageAndAMissingVoiceIsAConfigError() throws {
        let wav = FileManager.default.temporaryDirectory.appendingPathComponent("hs-say-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: wav) }
        for voice in ["en-gb", "en-GB+f3", "en-us", "gmw/en-US"] {
            let config = try CLI.writeConfig("[speech]\nvoice = \"\(voice)\"\n")
            let said = try CLI.run(["say", "hello", "--config", config, "--output", wav])
            #expect(said.status == 0, "\(voice): \(said.stderr)")
        }
        let config = try CLI.writeConfig("[speech]\nvoice = \"no-such-voice\"\n")
        let refused = try CLI.run(["say", "hello", "--config", config, "--output", wav])
        #expect(refused.status == 78)
        #expect(refused.stderr == "hound-speaker: error: \(config): [speech] voice: espeak-ng has no voice \"no-such-voice\" (`espeak-ng --voices` lists them)\n")
    }

    @Test func sayWritesSpeechOrNamesTheDevice() throws {
        let wav = FileManager.default.temporaryDirectory.appendingPathComponent("hs-cli-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: wav) }
        let said = try CLI.run(["say", "the answer is forty two", "--output", wav, "--config", CLI.clientConfig(port: 1)])
        #expect(said.status == 0)
        let size = (try FileManager.default.attributesOfItem(atPath: wav)[.size] as? Int) ?? 0
        #expect(size > 22050)  // over half a second of 16-bit audio at 22.05 kHz
        let config = FileManager.default.temporaryDirectory.appendingPathComponent("hs-cli-\(UUID().uuidString).toml").path
        try Data("[audio]\noutput = \"no_such_pcm\"\n".utf8).write(to: URL(fileURLWithPath: config))
        let failed = try CLI.run(["say", "hello", "--config", config])
        #expect(failed.status == 1)
        #expect(failed.stderr.hasPrefix("hound-speaker: error: ALSA device \"no_such_pcm\": cannot open for playback"))
        #expect(failed.stderr.split(separator: "\n").count == 1)  // libasound's own lines are silenced
        let badVoice = FileManager.default.temporaryDirectory.appendingPathComponent("hs-cli-\(UUID().uuidString).toml").path
        try Data("[speech]\nrate = 1000\n".utf8).write(to: URL(fileURLWithPath: badVoice))
        let rate = try CLI.run(["say", "hello", "--config", badVoice])
        #expect(rate.status == 78 && rate.stderr.contains(":2: [speech] rate: must be 80 to 450, not 1000"))
        // nothing to say is a usage error, and no file is written
        for empty in ["", "  \n"] {
            let nothing = FileManager.default.temporaryDirectory.appendingPathComponent("hs-cli-\(UUID().uuidString).wav").path
            let said = try CLI.run(["say", empty, "--output", nothing, "--config", CLI.clientConfig(port: 1)])
            #expect(said.status == 64 && said.stderr == "hound-speaker: error: say: TEXT is empty: nothing to say\n", "\(said.stderr)")
            #expect(!FileManager.default.fileExists(atPath: nothing))
        }
    }

    /// A WAV file is no sound card: `say --output` must not open `[audio] mixer_control`'s mixer (issue #61: it did,
    /// and failed with exit 1 where the control's card was not there). Said to the device, the same missing control
    /// fails, naming the device and the control.
    @Test func sayToAFileNeverOpensTheMixer() throws {
        let wav = FileManager.default.temporaryDirectory.appendingPathComponent("hs-cli-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: wav) }
        let config = try CLI.writeConfig("[audio]\noutput = \"default\"\nmixer_control = \"NoSuchControl\"\n")
        let said = try CLI.run(["say", "hello", "--output", wav, "--config", config])
        #expect(said.status == 0, "\(said.stderr)")
        let size = (try? FileManager.default.attributesOfItem(atPath: wav)[.size] as? Int) ?? 0
        #expect(size > 11025)
        let toDevice = try CLI.run(["say", "hello", "--config", config])
        #expect(toDevice.status != 0)
        #expect(toDevice.stderr.contains("ALSA device \"default\"") && toDevice.stderr.contains("\"NoSuchControl\""), "\(toDevice.stderr)")
    }

    @Test func doctorOpensTheConfiguredAudioDevices() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hs-cli-alsa-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try writeFileDevices(to: "\(dir)/asoundrc", mic: "cli_mic", input: "\(dir)/in.raw",
                             speaker: "cli_speaker", output: "\(dir)/out.raw")
        _ = FileManager.default.createFile(atPath: "\(dir)/in.raw", contents: Data())
        let config = "\(dir)/speaker.toml"
        try Data("[audio]\ninput = \"cli_mic\"\noutput = \"cli_speaker\"\ninput_rate = 44100\n".utf8).write(to: URL(fileURLWithPath: config))
        let env = ["ALSA_CONFIG_PATH": "/usr/share/alsa/alsa.conf:\(dir)/asoundrc"]
        let doctor = try CLI.run(["doctor", "--config", config], environment: env)
        #expect(doctor.stdout.contains("info capture devices: ") && doctor.stdout.contains("cli_mic"))
        #expect(doctor.stdout.contains("ok   microphone \"cli_mic\" opens (44100 Hz, 1 channel(s), converted to 16 kHz mono)"))
        #expect(doctor.stdout.contains("ok   speaker \"cli_speaker\" opens"))
        try Data("[audio]\ninput = \"nope_mic\"\n".utf8).write(to: URL(fileURLWithPath: config))
        let bad = try CLI.run(["doctor", "--config", config], environment: env)
        #expect(bad.status == 1)
        #expect(bad.stdout.contains("FAIL microphone: ALSA device \"nope_mic\": cannot open for capture"))
    }

    @Test func badAudioValuesAreNamed() throws {
        for (text, expected) in [("[audio]\ninput_rate = 0\n", ":2: [audio] input_rate: must be 8000 to 192000 Hz, not 0"),
                                 ("[audio]\nvolume = -5\n", ":2: [audio] volume: must be 0 to 100, not -5"),
                                 ("[audio]\ninput_channels = 2\ninput_channel = 2\n", "[audio] input_channel: is 2 but only 2 channel(s) are captured"),
                                 ("[listening]\nend_of_speech = \"soon\"\n", ":2: [listening] end_of_speech: must be \"short\", \"long\" or \"none\""),
                                 ("[audio]\nearcons = { beep = \"/x.wav\" }\n", "unknown earcon \"beep\"")] {
            let path = FileManager.default.temporaryDirectory.appendingPathComponent("hs-cli-\(UUID().uuidString).toml").path
            defer { try? FileManager.default.removeItem(atPath: path) }
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            let result = try CLI.run(["say", "hi", "--config", path])
            #expect(result.status == 78)
            #expect(result.stderr.contains(expected), "\(result.stderr)")
        }
    }

    /// From a working directory outside the tree: the recording, model and earcons are found beside the
    /// executable, and the local service is its own program, started from there too.
    @Test func demoIsAWholeInteraction() throws {
        let wav = FileManager.default.temporaryDirectory.appendingPathComponent("hs-demo-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: wav) }
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["demo", "--output", wav]
        process.currentDirectoryURL = FileManager.default.temporaryDirectory
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")
        for line in ["[state] ready -> recording", "[state] recording -> searching", "[transcript] what time is it",
                     "[answer] It is ", "[state] speaking -> ready", "[timings (ms from trigger): first audio sent",
                     // Then typed questions to the same speaker: a timer set in two turns, asked about, cancelled.
                     "[you typed] set a timer", "[answer] For how long?", "[timer 1] set: the 10 minute timer",
                     "[answer] Your timer is set for 10 minutes.", "[answer] 10 minutes left on the 10 minute timer.",
                     "[timer 1] cancelled", "[answer] Done: the timer is cancelled."] {
            #expect(text.contains(line), "missing \(line)")
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: wav)[.size] as? Int) ?? 0
        #expect(size > 22050)
    }

    /// The speaker binary, whole: woken by the simulated button (hot phrase off, the microphone opened per
    /// query) or by "OK Hound" in the recording (the microphone always on, paced as a sound card would be), and so
    /// again with the echo canceller between the speaker's output and the microphone.
    @Test(arguments: [(false, false), (true, false), (true, true)])
    func runWithTheSimulatedBoardAnswersAndStopsOnSIGTERM(hotPhrase: Bool, echoCancel: Bool) throws {
        let (service, port, _) = try CLI.startService()
        defer { service.terminate(); service.waitUntilExit() }
        // The microphone plays the demo's question; the speaker writes to a file.
        let recording = hotPhrase ? "share/demo/ok-hound-what-time-is-it.wav" : "share/demo/what-time-is-it.wav"
        let fixture = try RunFixture(recording: recording, port: port, hotPhrase: hotPhrase, echoCancel: echoCancel)
        defer { fixture.remove() }
        let (process, input, output) = try fixture.startRun(hotPhrase: hotPhrase)
        #expect(output.wait(for: "\"to\":\"ready\""))
        if hotPhrase {
            #expect(output.wait(for: "\"event\":\"hotphrase\""))
        } else {
            input.fileHandleForWriting.write(Data("click\n".utf8))  // the simulated button
        }
        #expect(output.wait(for: "\"event\":\"final\""))
        #expect(output.wait(for: "\"from\":\"speaking\",\"to\":\"ready\""))
        process.terminate()  // SIGTERM: a clean stop
        output.readToEnd()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(output.seen.contains("\"transcript\":\"what day is it\"") && output.seen.contains("Today is "))
        #expect(output.seen.contains("\"to\":\"none\""))
        #expect(fixture.spokenBytes > 22050)
    }

    /// A timer set by voice survives a restart of `run` and rings after it; `--events json` shows it set, counting
    /// down (told at once after the restart, then every minute), ringing and stopped by a press.
    @Test func aTimerSetByVoiceRingsAfterARestart() throws {
        let (service, port, _) = try CLI.startService()
        defer { service.terminate(); service.waitUntilExit() }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hs-timers-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let fixture = try RunFixture(recording: "share/demo/what-time-is-it.wav", port: port, hotPhrase: false,
                                     transcript: "set a timer for 20 seconds",
                                     extraConfig: "[speaker]\ntimers_file = \"\(dir)/timers.json\"\nmute_file = \"\(dir)/muted\"")
        defer { fixture.remove() }
        var (process, input, output) = try fixture.startRun(hotPhrase: false)
        #expect(output.wait(for: "\"to\":\"ready\""))
        input.fileHandleForWriting.write(Data("click\n".utf8))
        #expect(output.wait(for: "\"event\":\"timer\",\"change\":\"set\""))
        #expect(output.wait(for: "\"answer\":\"Your timer is set for 20 seconds.\""))
        #expect(output.wait(for: "\"from\":\"speaking\",\"to\":\"ready\""))
        process.terminate()
        output.readToEnd()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(!output.seen.contains("\"change\":\"ringing\""), "the timer rang before the restart: the test needs a longer one")
        let saved = try String(contentsOfFile: "\(dir)/timers.json", encoding: .utf8)
        #expect(saved.contains("\"seconds\":20"))

        (process, input, output) = try fixture.startRun(hotPhrase: false)
        #expect(output.wait(for: "\"event\":\"timer\",\"change\":\"tick\""))  // still counting down, said at once
        #expect(output.wait(for: "\"event\":\"timer\",\"change\":\"ringing\"", seconds: 40))
        #expect(output.wait(for: "\"to\":\"ringing\""))
        input.fileHandleForWriting.write(Data("click\n".utf8))  // a press stops it
        #expect(output.wait(for: "\"event\":\"timer\",\"change\":\"stopped\""))
        #expect(output.wait(for: "\"from\":\"ringing\",\"to\":\"ready\""))
        process.terminate()
        output.readToEnd()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(try String(contentsOfFile: "\(dir)/timers.json", encoding: .utf8).contains("\"timers\":[]"))
    }

    /// The detector over files: the demo's "OK Hound" once, at the end of the phrase; the question alone never;
    /// the same recording at 44.1 kHz stereo the same (converted); bad models and thresholds named.
    @Test func offlineSaysWhatTheOnDeviceRecogniserUnderstood() throws {
        // Questions spoken by flite, through PocketSphinx, the speaker's own grammar and the check of its words.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hs-offline-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        func spoken(_ text: String, _ name: String) throws -> String {
            try fliteWAV(text, to: "\(dir)/\(name)-raw.wav")
            try runSox(["\(dir)/\(name)-raw.wav", "-r", "16000", "\(dir)/\(name).wav", "pad", "0.3", "0.5"])
            return "\(dir)/\(name).wav"
        }
        let heard = try CLI.run(["offline", try spoken("what time is it", "time"), "--json"])
        #expect(heard.status == 0, "\(heard.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(heard.stdout.utf8)) as? [String: Any])
        #expect(json["heard"] as? String == "what time is it", "\(heard.stdout)")
        #expect((json["command"] as? [String: Any])?["kind"] as? String == "time", "\(heard.stdout)")
        // Outside the grammar: nothing heard, and the grammar's nearest words, which the check turned down.
        let outside = try CLI.run(["offline", try spoken("turn on the kitchen lights", "lights"), "--json"])
        let turnedDown = try #require(try JSONSerialization.jsonObject(with: Data(outside.stdout.utf8)) as? [String: Any])
        #expect(turnedDown["heard"] is NSNull && turnedDown["command"] is NSNull, "\(outside.stdout)")
        #expect((turnedDown["unconfirmed"] as? String)?.isEmpty == false, "\(outside.stdout)")
        let missing = try CLI.run(["offline", "/nonexistent/question.wav"])
        #expect(missing.status == 66 && missing.stderr.contains("/nonexistent/question.wav"), "\(missing.stderr)")
    }

    @Test func hotphraseFindsThePhraseInAFile() throws {
        // The shipped model at its default sensitivity, as `run` and the demo use it.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hs-hp-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Data("[hotphrase]\nsensitivity = 0.5\n".utf8).write(to: URL(fileURLWithPath: "\(dir)/demo.toml"))
        let demo = ["--config", "\(dir)/demo.toml"]
        let found = try CLI.run(["hotphrase", "share/demo/ok-hound-what-time-is-it.wav", "--json"] + demo)
        #expect(found.status == 0, "\(found.stderr)")
        let lines = found.stdout.split(separator: "\n")
        #expect(lines.count == 1)
        let json = try #require(try JSONSerialization.jsonObject(with: Data((lines.first ?? "").utf8)) as? [String: Double])
        #expect(Set(json.keys) == ["time", "score"])
        // 2.5 s of room tone, then "OK Hound" (about 0.6 s): heard within 300 ms of its end
        #expect((2.9...3.6).contains(json["time"] ?? 0), "\(json)")
        #expect((0...1).contains(json["score"] ?? -1))

        let sox = Process()
        sox.executableURL = URL(fileURLWithPath: "/usr/bin/sox")
        sox.arguments = ["share/demo/ok-hound-what-time-is-it.wav", "-r", "44100", "-c", "2", "\(dir)/stereo.wav"]
        try sox.run()
        sox.waitUntilExit()
        let stereo = try CLI.run(["hotphrase", "\(dir)/stereo.wav", "--json"] + demo)
        #expect(stereo.stdout.split(separator: "\n").count == 1)

        let none = try CLI.run(["hotphrase", "share/demo/what-time-is-it.wav"] + demo)
        #expect(none.status == 0)
        #expect(none.stdout.isEmpty)
        #expect(none.stderr.contains("0 detections"))

        let missing = try CLI.run(["hotphrase", "share/demo/what-time-is-it.wav", "--model", "\(dir)/none.hpm"])
        #expect(missing.status == 66)
        #expect(missing.stderr.contains("hot-phrase model \(dir)/none.hpm: no such file"))
        try Data("not a model".utf8).write(to: URL(fileURLWithPath: "\(dir)/bad.hpm"))
        let corrupt = try CLI.run(["hotphrase", "share/demo/what-time-is-it.wav", "--model", "\(dir)/bad.hpm"])
        #expect(corrupt.status == 66)
        #expect(corrupt.stderr.contains("not a hot-phrase model file"))
        let threshold = try CLI.run(["hotphrase", "share/demo/what-time-is-it.wav", "--threshold", "2"])
        #expect(threshold.status == 64)
        #expect(threshold.stderr.contains("--threshold must be between 0 and 1"))
    }

    /// A speech-embedding model (format 2: the test fixture's, with a random head) runs through the same command:
    /// at threshold 0 its first score fires, once the 76-frame window and the head's 16 embeddings are full
    /// (25 groups of 8 mel frames: 2.022 s), and the refractory period keeps it to one in a 2.9 s clip.
    @Test func hotphraseRunsASpeechEmbeddingModel() throws {
        let fixtures = "Tests/HotPhraseTests/Fixtures/embedding"
        let all = try CLI.run(["hotphrase", "\(fixtures)/ok-hound-silence.flac", "--model", "\(fixtures)/test.hpm",
                               "--threshold", "0", "--json"])
        #expect(all.status == 0, "\(all.stderr)")
        let lines = all.stdout.split(separator: "\n")
        #expect(lines.count == 1)
        let json = try #require(try JSONSerialization.jsonObject(with: Data((lines.first ?? "").utf8)) as? [String: Double])
        #expect(abs((json["time"] ?? 0) - 2.022) < 1e-9, "\(json)")
        let none = try CLI.run(["hotphrase", "\(fixtures)/ok-hound-silence.flac", "--model", "\(fixtures)/test.hpm", "--threshold", "1"])
        #expect(none.status == 0)
        #expect(none.stderr.contains("0 detections"))
    }
}

/// A port free right now on 127.0.0.1 (the kernel's pick for a socket bound to port 0, then closed).
func freePort() -> Int {
    (try? HeldPort())?.port ?? 0
}

@Suite(.ownThread) struct ControlCLITests {
    /// `ctl` against `run` (simulated board, file devices, the local service): what a home-automation script does.
    @Test func ctlTalksToARunningSpeaker() throws {
        let (service, port, _) = try CLI.startService()
        defer { service.terminate(); service.waitUntilExit() }
        let control = freePort()
        let fixture = try RunFixture(recording: "share/demo/what-time-is-it.wav", port: port, hotPhrase: false,
                                     extraConfig: "[control]\nlisten = \"127.0.0.1:\(control)\"")
        defer { fixture.remove() }
        let (process, _, output) = try fixture.startRun(hotPhrase: false)
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }
        #expect(output.wait(for: "\"to\":\"ready\""))

        let asked = try CLI.run(["ctl", "text", "what", "time", "is", "it", "--config", fixture.config])
        #expect(asked.status == 0, "\(asked.stderr)")
        #expect(asked.stdout.hasPrefix("It"), "the answer is printed: \(asked.stdout)")
        #expect(output.wait(for: "\"transcript\":\"what time is it\""))

        let said = try CLI.run(["ctl", "say", "dinner", "is", "ready", "--config", fixture.config])
        #expect(said.status == 0 && said.stdout.isEmpty, "\(said.stderr)")
        #expect(output.wait(for: "\"from\":\"ready\",\"to\":\"speaking\""))

        #expect(try CLI.run(["ctl", "volume", "30", "--config", fixture.config]).status == 0)
        #expect(output.wait(for: "\"event\":\"volume\",\"percent\":30"))
        let status = try CLI.run(["ctl", "status", "--config", fixture.config])
        #expect(status.status == 0 && status.stdout.contains("\"volume\":30"), "\(status.stdout)")
        // A proxy in the environment (here a closed port) is not used: the speaker is this machine's.
        let deadProxy = "http://127.0.0.1:\(freePort())"
        let proxied = try CLI.run(["ctl", "status", "--config", fixture.config],
                                  environment: ["http_proxy": deadProxy, "HTTP_PROXY": deadProxy, "all_proxy": deadProxy, "ALL_PROXY": deadProxy])
        #expect(proxied.status == 0 && proxied.stdout.contains("\"volume\":30"), "\(proxied.stderr)")

        let unknown = try CLI.run(["ctl", "dance", "--config", fixture.config])
        #expect(unknown.status == 64 && unknown.stderr.contains("unknown command \"dance\""))
        let refused = try CLI.run(["ctl", "volume", "300", "--config", fixture.config])
        #expect(refused.status == 64 && refused.stderr.contains("volume takes 0-100"))

        process.terminate()
        output.readToEnd()
        process.waitUntilExit()
        let gone = try CLI.run(["ctl", "status", "--config", fixture.config])
        #expect(gone.status == 1 && gone.stderr.contains("cannot reach the speaker at http://127.0.0.1:\(control)"), "\(gone.stderr)")
    }

    /// `ctl` with a proxy in the environment: neither the command nor the token goes to it. (The speaker here is
    /// not running, so ctl fails to reach it; a proxy that was used would have been connected to.)
    @Test func ctlNeverSendsThroughAProxy() throws {
        let proxy = try ListeningSocket()
        let control = freePort()
        let fixture = try RunFixture(recording: "share/demo/what-time-is-it.wav", port: 9, hotPhrase: false,
                                     extraConfig: "[control]\nlisten = \"127.0.0.1:\(control)\"\ntoken = \"0123456789abcdef0123\"")
        defer { fixture.remove() }
        let url = "http://127.0.0.1:\(proxy.port)"
        let result = try CLI.run(["ctl", "status", "--config", fixture.config],
                                 environment: ["http_proxy": url, "HTTP_PROXY": url, "all_proxy": url, "ALL_PROXY": url])
        #expect(result.status == 1 && result.stderr.contains("cannot reach the speaker at http://127.0.0.1:\(control)"), "\(result.stderr)")
        let sent = proxy.acceptPending()
        #expect(sent == nil, "the proxy was sent: \(sent ?? "")")
    }

    /// A control port already taken (by another program, or a speaker already running) stops `run`, naming the
    /// address, rather than leaving a speaker running without its API and screen; systemd then restarts it (the
    /// exit is not 78, which it does not restart on).
    @Test func aTakenControlPortStopsRun() throws {
        let taken = try ListeningSocket()
        let fixture = try RunFixture(recording: "share/demo/what-time-is-it.wav", port: 9, hotPhrase: false,
                                     extraConfig: "[control]\nlisten = \"127.0.0.1:\(taken.port)\"")
        defer { fixture.remove() }
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["run", "--config", fixture.config]
        process.currentDirectoryURL = RunFixture.root
        process.environment = fixture.environment(hotPhrase: false)
        let errors = OutputWatcher()
        process.standardInput = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = errors.pipe
        try process.run()
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }
        // Its log ends when it exits (or after a minute of silence if it runs on).
        let ended = errors.waitForEnd()
        #expect(ended, "run kept running without its control API: \(errors.seen)")
        guard ended else { return }
        process.waitUntilExit()
        #expect(process.terminationStatus != 0 && process.terminationStatus != 78, "\(process.terminationStatus)")
        #expect(errors.seen.contains("cannot listen on 127.0.0.1:\(taken.port)"), "\(errors.seen)")
        #expect(!errors.seen.contains("hound-speaker running:"), "\(errors.seen)")
    }
}

/// A TCP socket listening on 127.0.0.1 (a port taken, or a proxy that records who came).
final class ListeningSocket {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound, listen(fd, 16) == 0 else { close(fd); throw CLI.CLIError.noPort("bind or listen: \(errno)") }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    // Only once initialised: a throwing init has closed the socket itself (`port` was not yet set, so no deinit).
    deinit { close(fd) }

    /// What a client that connected has sent so far, without waiting; nil when no one connected.
    func acceptPending() -> String? {
        var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, 0) > 0 else { return nil }
        let client = accept(fd, nil, nil)
        guard client >= 0 else { return nil }
        defer { close(client) }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = recv(client, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        return String(decoding: buffer.prefix(max(count, 0)), as: UTF8.self)
    }
}

/// The blocking CLI suites run each test on a thread of their own (OwnThreadTrait), leaving Swift's cooperative
/// pool to the tests whose servers answer on it.
@Suite(.ownThread) struct OwnThreadTests {
    @Test func aBlockingTestRunsOnItsOwnThreadNotThePool() {
        #expect(currentThreadName() == "test-body")
        #expect(Test.current?.name == "aBlockingTestRunsOnItsOwnThreadNotThePool()")
    }
}

@Suite struct PoolThreadTests {
    @Test func withoutTheTraitATestRunsOnThePool() {
        #expect(currentThreadName() != "test-body")
    }
}
