import Foundation
import AudioCore
import HoundifyCore
import Testing
@testable import SpeakerConfig

/// Under the systemd unit (StateDirectory=hound-speaker) the conversation is kept in /var/lib/hound-speaker unless
/// the config says otherwise.
@Suite struct StateDirectoryTests {
    func load(_ text: String, environment: [String: String]) throws -> SpeakerConfiguration {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("hs-state-\(UUID().uuidString).toml").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return try ConfigLoader.load(path: path, environment: environment)
    }

    @Test func unsetGoesToTheServiceStateDirectory() throws {
        let unit = ["STATE_DIRECTORY": "/var/lib/hound-speaker"]
        #expect(try load("", environment: unit).houndify.conversationStateFile == "/var/lib/hound-speaker/conversation.json")
        #expect(try load("", environment: ["STATE_DIRECTORY": "/var/lib/a:/var/lib/b"]).houndify.conversationStateFile == "/var/lib/a/conversation.json")
        #expect(try load("", environment: [:]).houndify.conversationStateFile == nil)
        #expect(try load("", environment: ["STATE_DIRECTORY": "relative"]).houndify.conversationStateFile == nil)
        // Outside systemd: the user's state directory, as XDG says.
        #expect(try load("", environment: ["XDG_STATE_HOME": "/home/pi/.st", "HOME": "/home/pi"]).houndify.conversationStateFile
                == "/home/pi/.st/hound-speaker/conversation.json")
        #expect(try load("", environment: ["HOME": "/home/pi"]).houndify.conversationStateFile
                == "/home/pi/.local/state/hound-speaker/conversation.json")
        #expect(try load("", environment: ["XDG_STATE_HOME": "relative", "HOME": "/"]).houndify.conversationStateFile == nil)
        #expect(try load("", environment: unit.merging(["HOME": "/home/pi"]) { a, _ in a }).houndify.conversationStateFile
                == "/var/lib/hound-speaker/conversation.json")
        // What the config says wins, including "" (memory only).
        #expect(try load("[houndify]\nconversation_state_file = \"\"\n", environment: unit).houndify.conversationStateFile == "")
        #expect(try load("[houndify]\nconversation_state_file = \"/srv/c.json\"\n", environment: unit).houndify.conversationStateFile == "/srv/c.json")
    }

    /// The household's voices (household.json, docs/household.md) live in the state directory unless
    /// `[hotphrase] household` names a folder; config/speaker.toml leaves it to the state directory.
    @Test func theHouseholdFolderDefaultsToTheStateDirectory() throws {
        let unit = ["STATE_DIRECTORY": "/var/lib/hound-speaker"]
        #expect(try load("", environment: unit).hotphrase.household == "/var/lib/hound-speaker")
        #expect(try load("", environment: ["HOME": "/home/pi"]).hotphrase.household == "/home/pi/.local/state/hound-speaker")
        #expect(try load("", environment: [:]).hotphrase.household == "")
        #expect(try load("[hotphrase]\nhousehold = \"/srv/voices\"\n", environment: unit).hotphrase.household == "/srv/voices")
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("config/speaker.toml"), encoding: .utf8)
        #expect(try load(text, environment: unit).hotphrase.household == "/var/lib/hound-speaker")
    }

    @Test func theDocumentedConfigLeavesItUnset() throws {
        // config/speaker.toml is what deploy/install.sh installs: it must not pin the state to memory.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("config/speaker.toml"), encoding: .utf8)
        #expect(try load(text, environment: ["STATE_DIRECTORY": "/var/lib/hound-speaker"]).houndify.conversationStateFile
                == "/var/lib/hound-speaker/conversation.json")
    }
}
