import Foundation
import Testing
import AudioCore
import BoardCore
import HoundifyCore
import SpeakerCore
@testable import SpeakerConfig

/// `setup --import`: the SD card's settings file merged into the config line by line, checked by the config's own
/// rules, and wiped from the card; a refused file changes nothing and stays.
@Suite struct SettingsImportTests {
    static let card = """
        # written on a laptop
        [houndify]
        client_id = "an-id"
        client_key = "\(key)"

        [location]
        latitude = 51.5
        longitude = -0.12
        timezone = "Europe/London"
        """

    func merged(_ card: String, into config: String = ConfigKeysTests.shipped) throws(ConfigError) -> SettingsImport.Merged {
        try SettingsImport.merge(card: card, cardFile: "card.toml", into: config, configFile: "speaker.toml")
    }

    func refusal(_ card: String, into config: String = ConfigKeysTests.shipped) -> ConfigError? {
        do { _ = try merged(card, into: config); return nil } catch { return error }
    }

    @Test func theShippedConfigTakesTheCardsKeysAndKeepsEverythingElse() throws {
        let result = try merged(Self.card)
        #expect(result.keys == ["[houndify] client_id", "[houndify] client_key", "[location] latitude", "[location] longitude", "[location] timezone"])
        let config = try ConfigLoader.parse(text: result.text, file: "speaker.toml")
        #expect(config.houndify.clientID == "an-id" && config.houndify.clientKey == key)
        #expect(config.location.latitude == 51.5 && config.location.longitude == -0.12 && config.location.timezone == "Europe/London")
        // Every other line as it was: the owner's comments and layout stay. Three lines replaced, two added.
        let before = ConfigKeysTests.shipped.split(separator: "\n", omittingEmptySubsequences: false)
        let after = result.text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(after.count == before.count + 2)
        #expect(Set(before).subtracting(after) == ["client_id = \"\"", "client_key = \"\"", "timezone = \"\""])
        // A key the config leaves commented out goes just under its comment.
        let latitude = try #require(after.firstIndex(of: "latitude = 51.5"))
        #expect(after[latitude - 1] == "# latitude = 37.3875")
    }

    @Test func aTableOrKeyTheConfigLacksIsAdded() throws {
        let result = try merged("[speech]\nrate = 150\n[location]\nlatitude = 10.0\nlongitude = 20.0\n", into: "[speech]\nvoice = \"en-gb\"\n\n# the board\n[board]\ndriver = \"simulated\"\n")
        #expect(result.text == "[speech]\nvoice = \"en-gb\"\nrate = 150\n\n# the board\n[board]\ndriver = \"simulated\"\n\n[location]\nlatitude = 10.0\nlongitude = 20.0\n")
        // Keys that go together are checked in the whole: the card may set one when the config has the other.
        #expect(try ConfigLoader.parse(text: try merged("[location]\nlatitude = 1.5\n", into: "[location]\nlatitude = 0.0\nlongitude = 2.5\n").text, file: "x").location.latitude == 1.5)
        let alone = refusal("[location]\n\nlatitude = 1.5\n", into: "")
        #expect(alone?.file == "card.toml" && alone?.line == 3 && alone?.key == "[location] latitude")
        // No config yet: the card's settings are the config.
        #expect(try merged("[houndify]\nclient_id = \"x\"\n", into: "").text == "[houndify]\nclient_id = \"x\"\n")
    }

    @Test func valuesAreWrittenAsTOMLWhateverTheCardsSpelling() throws {
        let result = try merged("""
            houndify.client_id = 'quote " and ü'
            [speech]
            voice = "en-us+f3"
            [board]
            leds = { listening = "GPIO5", searching = "GPIO6" }
            """, into: "[houndify]\nclient_id = \"\"\n")
        let config = try ConfigLoader.parse(text: result.text, file: "speaker.toml")
        #expect(config.houndify.clientID == "quote \" and ü")
        #expect(config.speech.voice == "en-us+f3")
        #expect(config.board.leds[.listening] == "GPIO5" && config.board.leds[.searching] == "GPIO6")
    }

    @Test func aMistakeOnTheCardIsNamedByItsLineAndKey() {
        #expect(refusal("[houndify]\nclient_id = \"x\"\nclient_key = \"not base64!\"\n")
                == ConfigError(file: "card.toml", line: 3, key: "[houndify] client_key",
                               problem: "is not base64url text (the dashboard's Client Key: 88 characters ending in ==)"))
        let unknown = refusal("[location]\nlatitud = 1.0\n")
        #expect(unknown?.file == "card.toml" && unknown?.line == 2 && unknown?.problem.contains("did you mean 'latitude'") == true)
        let range = refusal("[location]\nlatitude = 91.0\n")
        #expect(range?.file == "card.toml" && range?.line == 2 && range?.key == "[location] latitude")
        let toml = refusal("[houndify\nclient_id = \"x\"\n")
        #expect(toml?.file == "card.toml" && toml?.line == 1 && toml?.problem.hasPrefix("not valid TOML") == true)
        #expect(refusal("client_id = \"x\"\n")?.problem.hasPrefix("unknown table") == true)
    }

    @Test func aConfigItCannotEditByLinesIsLeftAlone() {
        // The config writes [houndify] request_info as a table of its own: an inline one would define it twice.
        let twice = refusal("[houndify]\nrequest_info = { a = 1 }\n", into: "[houndify]\nclient_id = \"\"\n[houndify.request_info]\nb = 2\n")
        #expect(twice?.file == "speaker.toml" && twice?.problem.contains("set them there by hand") == true)
        // A value the config spreads over lines.
        let spread = refusal("[houndify]\nsupported_features = []\n", into: "[houndify]\nsupported_features = [\n  \"a\",\n]\n")
        #expect(spread?.file == "speaker.toml" && spread?.problem.contains("cannot be merged into it line by line") == true)
    }

    // The file operation: the config written 0600, the card wiped and removed; a refusal changes nothing.

    func folder() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hs-import-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    func mode(_ path: String) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? -1
    }

    @Test func importingWritesTheConfigPrivatelyAndRemovesTheCardsFile() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (card, config) = ("\(dir)/hound-speaker.toml", "\(dir)/speaker.toml")
        try Data(Self.card.utf8).write(to: URL(fileURLWithPath: card))
        try Data(ConfigKeysTests.shipped.utf8).write(to: URL(fileURLWithPath: config))
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: config)
        let outcome = try SettingsImport.run(card: card, configPath: config)
        #expect(outcome == .imported(keys: try merged(Self.card).keys, config: config))
        #expect(!FileManager.default.fileExists(atPath: card))
        #expect(try mode(config) == 0o600)
        let loaded = try ConfigLoader.load(path: config, environment: [:])
        #expect(loaded.houndify.clientKey == key && loaded.location.latitude == 51.5)
        // Nothing on the card the second time: nothing done, the config as it was.
        let saved = try String(contentsOfFile: config, encoding: .utf8)
        #expect(try SettingsImport.run(card: card, configPath: config) == .nothing)
        #expect(try String(contentsOfFile: config, encoding: .utf8) == saved)
    }

    @Test func aRefusedFileChangesNothingAndStays() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (card, config) = ("\(dir)/hound-speaker.toml", "\(dir)/speaker.toml")
        let bad = "[houndify]\nclient_id = \"x\"\nclient_key = 42\n"
        try Data(bad.utf8).write(to: URL(fileURLWithPath: card))
        try Data(ConfigKeysTests.shipped.utf8).write(to: URL(fileURLWithPath: config))
        do {
            _ = try SettingsImport.run(card: card, configPath: config)
            Issue.record("a key that is a number was taken")
        } catch {
            guard case .refused(let problem) = error else { Issue.record("\(error)"); return }
            #expect(problem.file == card && problem.line == 3 && problem.key == "[houndify] client_key")
        }
        #expect(try String(contentsOfFile: card, encoding: .utf8) == bad)
        #expect(try String(contentsOfFile: config, encoding: .utf8) == ConfigKeysTests.shipped)
        // And the sentence the speaker says at start names the line and the key in words.
        let sentence = ImportNotice.sentence(.refused(ConfigError(file: card, line: 3, key: "[houndify] client_key", problem: "")))
        #expect(sentence.hasPrefix("The settings file on the SD card has a mistake on line 3, at houndify client key, so it was not used."))
    }

    @Test func theCardsBytesAreOverwrittenBeforeTheFileIsRemoved() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let card = "\(dir)/hound-speaker.toml"
        try Data(Self.card.utf8).write(to: URL(fileURLWithPath: card))
        // A second name for the same file sees what the wipe left in its blocks.
        try FileManager.default.linkItem(atPath: card, toPath: "\(dir)/seen")
        #expect(SettingsImport.wipe(card) == nil)
        #expect(!FileManager.default.fileExists(atPath: card))
        let left = try Data(contentsOf: URL(fileURLWithPath: "\(dir)/seen"))
        #expect(left.count == Self.card.utf8.count && left.allSatisfy { $0 == 0 })
        #expect(SettingsImport.wipe("\(dir)/missing") != nil)
    }
}
