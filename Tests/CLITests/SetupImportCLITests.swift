import Foundation
import Testing
import TestSupport

/// `setup --import` as the unit runs it before `run`: a file with a mistake refused (exit 78, its line and key) and
/// said by the speaker when it starts; the same file mended taken in, wiped from the card, and the speaker quiet
/// about it; no file at all, nothing done.
@Suite(.ownThread) struct SetupImportCLITests {
    @Test func aRefusedCardFileIsSaidAtStartAndAMendedOneIsTaken() throws {
        let (service, port, _) = try CLI.startService()
        defer { service.terminate(); service.waitUntilExit() }
        let fixture = try RunFixture(recording: "share/demo/what-time-is-it.wav", port: port, hotPhrase: false)
        defer { fixture.remove() }
        let card = "\(fixture.dir)/hound-speaker.toml"
        let state = "\(fixture.dir)/state"
        let environment = ["XDG_STATE_HOME": state]
        let before = try String(contentsOfFile: fixture.config, encoding: .utf8)

        // No file: nothing to do, nothing said.
        let nothing = try CLI.run(["setup", "--import", card, "--config", fixture.config], environment: environment)
        #expect(nothing.status == 0 && nothing.stdout.isEmpty && nothing.stderr.isEmpty, "\(nothing.stderr)")

        let bad = "[location]\nlatitude = 51.5\nlongitude = 200\n"
        try Data(bad.utf8).write(to: URL(fileURLWithPath: card))
        let refused = try CLI.run(["setup", "--import", card, "--config", fixture.config], environment: environment)
        #expect(refused.status == 78)
        #expect(refused.stderr.contains("\(card):3: [location] longitude:"), "\(refused.stderr)")
        #expect(refused.stderr.contains("nothing was changed; the file stays on the card"))
        #expect(try String(contentsOfFile: card, encoding: .utf8) == bad)
        #expect(try String(contentsOfFile: fixture.config, encoding: .utf8) == before)

        // The speaker, started after it, says so once it is ready.
        var run = try fixture.startRun(hotPhrase: false, environment: environment)
        #expect(run.output.wait(for: "\"event\":\"speech\",\"text\":\"The settings file on the SD card has a mistake on line 3, at location longitude, so it was not used."))
        #expect(run.output.wait(for: "\"from\":\"speaking\",\"to\":\"ready\""))
        run.process.terminate()
        run.output.readToEnd()
        run.process.waitUntilExit()

        // Mended: taken into the config (0600, the location set), the card's file gone, and nothing said at start.
        try Data("[location]\nlatitude = 51.5\nlongitude = -0.12\n".utf8).write(to: URL(fileURLWithPath: card))
        let taken = try CLI.run(["setup", "--import", card, "--config", fixture.config], environment: environment)
        #expect(taken.status == 0, "\(taken.stderr)")
        #expect(taken.stdout == "setup: \(fixture.config) now has [location] latitude, [location] longitude from \(card); \(card) is wiped and removed\n")
        #expect(!FileManager.default.fileExists(atPath: card))
        let mode = try FileManager.default.attributesOfItem(atPath: fixture.config)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let config = try String(contentsOfFile: fixture.config, encoding: .utf8)
        #expect(config.contains("latitude = 51.5\nlongitude = -0.12\n") && config.hasPrefix(before.trimmingCharacters(in: .newlines)))
        run = try fixture.startRun(hotPhrase: false, environment: environment)
        #expect(run.output.wait(for: "\"to\":\"ready\""))
        run.input.fileHandleForWriting.write(Data("click\n".utf8))
        #expect(run.output.wait(for: "\"from\":\"speaking\",\"to\":\"ready\""))
        run.process.terminate()
        run.output.readToEnd()
        run.process.waitUntilExit()
        #expect(!run.output.seen.contains("SD card"), "\(run.output.seen)")
    }
}
