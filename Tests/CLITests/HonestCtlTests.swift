import Foundation
import Testing
import TestSupport

/// `ctl` against `run` says what the speaker did with each command, and only that (issue #35).
@Suite(.ownThread) struct HonestCtlTests {
    @Test func ctlSaysWhatTheSpeakerDid() throws {
        let (service, port, _) = try CLI.startService()
        defer { service.terminate(); service.waitUntilExit() }
        let control = freePort()
        let fixture = try RunFixture(recording: "share/demo/what-time-is-it.wav", port: port, hotPhrase: false, extraConfig: """
            [[houndify.client_match]]
            phrase = "good night"
            response = "Good night. Sleep well."
            run = "true"
            [control]
            listen = "127.0.0.1:\(control)"
            """)
        defer { fixture.remove() }
        let (process, _, output) = try fixture.startRun(hotPhrase: false)
        defer { if process.isRunning { process.terminate(); process.waitUntilExit() } }
        #expect(output.wait(for: "\"to\":\"ready\""))
        func ctl(_ words: String...) throws -> CLI.Result { try CLI.run(["ctl"] + words + ["--config", fixture.config]) }

        // An owner's phrase: once 30 s of waiting for a final that never came, and exit 1.
        let night = try ctl("text", "good", "night")
        #expect(night.status == 0, "\(night.stderr)")
        #expect(night.stdout == "Good night. Sleep well.\n(ran \"true\")\n", "\(night.stdout)")
        #expect(output.wait(for: "\"done\":\"ran \\\"true\\\"\""))
        // A local command: the speaker's own words, not Houndify's "Didn't get that!".
        let address = try ctl("text", "what", "is", "your", "ip", "address")
        #expect(address.status == 0 && (address.stdout.hasPrefix("My IP address is ") || address.stdout == "I don't have a network address.\n"),
                "\(address.stdout) \(address.stderr)")
        let stop = try ctl("text", "stop")
        #expect(stop.status == 0 && stop.stdout == "(stopped)\n", "\(stop.stdout) \(stop.stderr)")

        // Timers: set by the speaker, listed one a line, and a cancel of one that is not there is an error.
        #expect(try ctl("timers").stdout == "no timers or alarms\n")
        let set = try ctl("text", "set", "a", "pasta", "timer", "for", "10", "minutes")
        #expect(set.status == 0 && set.stdout.contains("pasta timer"), "\(set.stdout) \(set.stderr)")
        let listed = try ctl("timers")
        #expect(listed.status == 0 && listed.stdout.hasPrefix("1  timer \"pasta\": ") && listed.stdout.contains("left of 10 minutes, running"),
                "\(listed.stdout)")
        let missing = try ctl("cancel-timer", "7")
        #expect(missing.status == 1 && missing.stderr.contains("HTTP 409") && missing.stderr.contains("\"status\" lists the timers"),
                "\(missing.stderr)")
        #expect(try ctl("cancel-timer", "pasta").status == 0)
        #expect(output.wait(for: "\"change\":\"cancelled\""))
        #expect(try ctl("timers").stdout == "no timers or alarms\n")
    }
}
