import Foundation
import Testing
import TestSupport

/// `run` without credentials (issue #64): it does not stop; it says where to go and the code, serves the setup page,
/// turns away a wrong code and a key Houndify refuses (each in words), saves the right ones (0600), answers with
/// Houndify from then on without a restart, and closes the setup page.
@Suite(.ownThread) struct SetupModeCLITests {
    struct Response { var status: Int; var body: String }

    /// curl, as a phone's browser would ask (a real HTTP client, another process).
    func request(_ port: Int, _ path: String, json: String? = nil) throws -> Response {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        var arguments = ["-s", "-m", "30", "-w", "\n%{http_code}", "http://127.0.0.1:\(port)\(path)"]
        if let json { arguments += ["-H", "Content-Type: application/json", "--data-binary", json] }
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        return Response(status: Int(lines.last ?? "") ?? 0, body: lines.dropLast().joined(separator: "\n"))
    }

    func form(code: String, key: String = CLI.key) -> String {
        #"{"code":"\#(code)","client_id":"\#(CLI.id)","client_key":"\#(key)","latitude":"51.5","longitude":"-0.12","timezone":"Europe/London"}"#
    }

    @Test func aSpeakerWithoutCredentialsIsSetUpFromThePageAndAnswers() throws {
        let (service, port, _) = try CLI.startService()
        defer { service.terminate(); service.waitUntilExit() }
        let setupPort = freePort()
        let fixture = try RunFixture(recording: "share/demo/what-time-is-it.wav", port: port, hotPhrase: false, transcript: "what is the weather like",
                                     extraConfig: "[setup]\nlisten = \"127.0.0.1:\(setupPort)\"\n[control]\nlisten = \"127.0.0.1:\(freePort())\"",
                                     credentials: false)
        defer { fixture.remove() }
        var environment = ["XDG_STATE_HOME": "\(fixture.dir)/state"]
        environment["HOUND_SPEAKER_KIOSK_PATH"] = RunFixture.root.appendingPathComponent("share/kiosk").path
        let (process, input, output) = try fixture.startRun(hotPhrase: false, environment: environment)
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }

        // It says where to go, with the code, once it is ready.
        #expect(output.wait(for: "the code is "))
        let said = try #require(output.seen.range(of: #"the code is (\d \d \d \d \d \d)\."#, options: .regularExpression))
        let code = String(output.seen[said].filter(\.isNumber))
        #expect(code.count == 6)
        #expect(output.seen.contains("I'm not set up yet. Open "))

        // `ctl status` on this machine has it too (the control API gives the code to loopback clients only).
        let status = try CLI.run(["ctl", "status", "--config", fixture.config])
        #expect(status.stdout.contains("\"setup_code\":\"\(code)\"") && status.stdout.contains("\"setup_mode\":true"), "\(status)")

        let page = try request(setupPort, "/")
        #expect(page.status == 200 && page.body.contains("Set up your speaker"), "\(page)")

        // A wrong code, in words, with the tries left; nothing saved.
        let wrong = code == "000000" ? "111111" : "000000"
        let refused = try request(setupPort, "/api/setup", json: form(code: wrong))
        #expect(refused.status == 403 && refused.body.contains("not the code the speaker said") && refused.body.contains("4 tries left"), "\(refused)")
        // The right code with a key Houndify refuses: named, nothing saved.
        let badKey = "B" + CLI.key.dropFirst()
        let rejected = try request(setupPort, "/api/setup", json: form(code: code, key: String(badKey)))
        #expect(rejected.status == 422 && rejected.body.contains("Houndify refused this client ID and key"), "\(rejected)")
        #expect(!(try String(contentsOfFile: fixture.config, encoding: .utf8)).contains("client_key"))
        // A question meanwhile: the speaker's own commands still work; this one is not, so it says where to go.
        let asked = output.seen.utf8.count
        input.fileHandleForWriting.write(Data("click\n".utf8))
        #expect(output.wait(for: "\"event\":\"speech\",\"text\":\"I'm not set up yet. Open ", after: asked))
        #expect(output.wait(for: "\"from\":\"speaking\",\"to\":\"ready\"", after: asked))

        // The right code and key: saved (0600), said, and Houndify answers from now on.
        let saved = try request(setupPort, "/api/setup", json: form(code: code))
        #expect(saved.status == 200 && saved.body.contains("The speaker is set up"), "\(saved)")
        let config = try String(contentsOfFile: fixture.config, encoding: .utf8)
        #expect(config.contains("client_id = \"\(CLI.id)\"") && config.contains("client_key = \"\(CLI.key)\""))
        #expect(config.contains("latitude = 51.5") && config.contains("timezone = \"Europe/London\""))
        #expect(try FileManager.default.attributesOfItem(atPath: fixture.config)[.posixPermissions] as? Int == 0o600)
        #expect(output.wait(for: "\"text\":\"I'm set up. Ask me anything.\""))
        let told = output.seen.range(of: "I'm set up. Ask me anything.").map { output.seen.utf8.distance(from: output.seen.startIndex, to: $0.lowerBound) } ?? 0
        #expect(output.wait(for: "\"from\":\"speaking\",\"to\":\"ready\"", after: told))
        // A click within double_press_ms of the last one would be a double press (mute): the speaker's file speaker
        // takes its answers at once, so the test waits that long itself.
        Thread.sleep(forTimeInterval: 1)
        let before = output.seen.utf8.count
        input.fileHandleForWriting.write(Data("click\n".utf8))
        #expect(output.wait(for: "\"transcript\":\"what is the weather like\"", after: before))
        #expect(output.wait(for: "\"from\":\"speaking\",\"to\":\"ready\"", after: before))
        let after = String(decoding: output.seen.utf8.dropFirst(before), as: UTF8.self)
        #expect(after.contains("\"event\":\"final\"") && !after.contains("\"source\":\"device\""), "\(after)")
        let after_status = try CLI.run(["ctl", "status", "--config", fixture.config])
        #expect(after_status.stdout.contains("\"setup_mode\":false") && after_status.stdout.contains("\"setup_code\":null"), "\(after_status)")
        // The page is gone from the network, and the code with it.
        var closed = false
        for _ in 0..<50 where !closed {
            closed = (try request(setupPort, "/")).status == 0
            if !closed { Thread.sleep(forTimeInterval: 0.1) }
        }
        #expect(closed, "the setup page still answers")
        process.terminate()
        output.readToEnd()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(!output.seen.contains(CLI.key), "the key was printed")
    }

    /// A key Houndify refuses (mistyped on the card, revoked on the dashboard): nothing listens on the network until
    /// Houndify has refused it; then the speaker says so, opens the setup page and says where to go, with the LEDs
    /// and the screen in setup mode; the right key given there is saved, Houndify answers, and the page closes.
    @Test func aRefusedKeyOpensTheSetupPageWhereTheRightOneIsTaken() throws {
        let (service, port, _) = try CLI.startService()
        defer { service.terminate(); service.waitUntilExit() }
        let setupPort = freePort()
        let badKey = "B" + CLI.key.dropFirst()
        let fixture = try RunFixture(recording: "share/demo/what-time-is-it.wav", port: port, hotPhrase: false, transcript: "what is the weather like",
                                     extraConfig: "[setup]\nlisten = \"127.0.0.1:\(setupPort)\"\n[control]\nlisten = \"127.0.0.1:\(freePort())\"",
                                     clientKey: String(badKey))
        defer { fixture.remove() }
        var environment = ["XDG_STATE_HOME": "\(fixture.dir)/state"]
        environment["HOUND_SPEAKER_KIOSK_PATH"] = RunFixture.root.appendingPathComponent("share/kiosk").path
        let (process, input, output) = try fixture.startRun(hotPhrase: false, environment: environment)
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }

        #expect(output.wait(for: "\"to\":\"ready\""))
        #expect(try request(setupPort, "/").status == 0, "the setup page is open before any refusal")
        let before = try CLI.run(["ctl", "status", "--config", fixture.config])
        #expect(before.stdout.contains("\"setup_mode\":false") && before.stdout.contains("\"leds\":\"ready\""), "\(before)")

        // A typed question that only Houndify could answer (the device would tell the time itself).
        let asked = output.seen.utf8.count
        _ = try CLI.run(["ctl", "text", "what is the weather like", "--config", fixture.config])
        #expect(output.wait(for: "\"text\":\"My Houndify key was refused.\"", after: asked))
        #expect(output.wait(for: "\"text\":\"To set me up again, open ", after: asked))
        let said = try #require(output.seen.range(of: #"To set me up again, open [^"]* the code is (\d \d \d \d \d \d)\."#, options: .regularExpression))
        let code = String(output.seen[said].filter(\.isNumber))
        #expect(code.count == 6)
        let status = try CLI.run(["ctl", "status", "--config", fixture.config])
        #expect(status.stdout.contains("\"setup_mode\":true") && status.stdout.contains("\"setup_code\":\"\(code)\""), "\(status)")
        #expect(output.wait(for: "\"event\":\"leds\",\"show\":\"setup\"", after: asked))
        let page = try request(setupPort, "/")
        #expect(page.status == 200 && page.body.contains("Set up your speaker"), "\(page)")

        // The same wrong key again is refused by the check; the right one is saved over it (0600).
        let again = try request(setupPort, "/api/setup", json: form(code: code, key: String(badKey)))
        #expect(again.status == 422 && again.body.contains("Houndify refused this client ID and key"), "\(again)")
        let saved = try request(setupPort, "/api/setup", json: form(code: code))
        #expect(saved.status == 200 && saved.body.contains("The speaker is set up"), "\(saved)")
        let config = try String(contentsOfFile: fixture.config, encoding: .utf8)
        #expect(config.contains("client_key = \"\(CLI.key)\"") && !config.contains(String(badKey)))
        #expect(try FileManager.default.attributesOfItem(atPath: fixture.config)[.posixPermissions] as? Int == 0o600)
        #expect(output.wait(for: "\"text\":\"I'm set up. Ask me anything.\""))
        let told = output.seen.utf8.count
        #expect(output.wait(for: "\"from\":\"speaking\",\"to\":\"ready\"", after: told - 200))

        // Houndify answers now, without a restart, and the page is gone.
        let next = output.seen.utf8.count
        let answered = try CLI.run(["ctl", "text", "what is the weather like", "--config", fixture.config])
        #expect(answered.status == 0 && !answered.stdout.isEmpty, "\(answered)")
        #expect(output.wait(for: "\"event\":\"final\"", after: next))
        let after = String(decoding: output.seen.utf8.dropFirst(next), as: UTF8.self)
        #expect(!after.contains("My Houndify key was refused."), "\(after)")
        var closed = false
        for _ in 0..<50 where !closed {
            closed = (try request(setupPort, "/")).status == 0
            if !closed { Thread.sleep(forTimeInterval: 0.1) }
        }
        #expect(closed, "the setup page still answers")
        let ended = try CLI.run(["ctl", "status", "--config", fixture.config])
        #expect(ended.stdout.contains("\"setup_mode\":false") && ended.stdout.contains("\"leds\":\"ready\""), "\(ended)")
        _ = input
        process.terminate()
        output.readToEnd()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(!output.seen.contains(CLI.key), "the key was printed")
    }

    /// `[setup] listen = ""`: no setup mode, and a speaker without credentials stops as before (exit 78).
    @Test func withoutSetupModeNoCredentialsIsAConfigurationError() throws {
        let fixture = try RunFixture(recording: "share/demo/what-time-is-it.wav", port: 9, hotPhrase: false,
                                     extraConfig: "[setup]\nlisten = \"\"", credentials: false)
        defer { fixture.remove() }
        let (process, _, output) = try fixture.startRun(hotPhrase: false)
        output.readToEnd()
        process.waitUntilExit()
        #expect(process.terminationStatus == 78)
    }
}
