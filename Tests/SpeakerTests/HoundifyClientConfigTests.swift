import HoundifyAssembly
import Foundation
import Houndify
import HoundifyCore
import JSONKit
import Assembly
import SpeakerConfig
import Testing

/// The Houndify client's configuration as the speaker builds it from `[houndify]` and `[location]`
/// (Sources/HoundifyAssembly/HoundifyClientSettings.swift).
@Suite struct HoundifyClientConfigTests {
    @Test func theClientTakesEveryKeyItIsGiven() throws {
        let config = try ConfigLoader.parse(text: """
            [houndify]
            client_id = "AAECAwQFBgcICQoLDA0ODw=="
            client_key = "AAAA"
            endpoint = "http://127.0.0.1:9000"
            user_id = "kitchen"
            device_id = "pi-1"
            connect_timeout = 2
            response_timeout = 7.5
            audio_format = "speex"
            unit_preference = "METRIC"
            voice = "Aria"
            [houndify.request_info]
            InputLanguageIETFTag = "fr-FR"
            [location]
            latitude = 48.85
            longitude = 2
            accuracy = 30.0
            timezone = "Europe/Paris"
            """, file: "c.toml")
        let client = try config.houndifyClientConfiguration()
        #expect(client.endpoint == "http://127.0.0.1:9000" && client.clientKey == "AAAA")
        #expect(client.profile.clientID == "AAECAwQFBgcICQoLDA0ODw==" && client.profile.userID == "kitchen" && client.profile.deviceID == "pi-1")
        #expect(client.profile.latitude == 48.85 && client.profile.longitude == 2 && client.profile.positionHorizontalAccuracy == 30)
        #expect(client.profile.timeZone == "Europe/Paris" && client.profile.unitPreference == "METRIC")
        #expect(client.connectTimeoutMS == 2000 && client.responseTimeoutMS == 7500 && client.audioFormat == .speex)
        #expect(client.profile.extra["InputLanguageIETFTag"] == "fr-FR" && client.profile.extra["ResponseAudioVoice"] == "Aria")
    }

    /// The client's own defaults are `[houndify]`'s: a client made without them times out as an empty config says.
    @Test func theClientsDefaultsAreTheConfigs() throws {
        var config = try ConfigLoader.parse(text: "", file: "c.toml")
        (config.houndify.clientID, config.houndify.clientKey) = ("id", "AAAA")
        let fromConfig = try config.houndifyClientConfiguration()
        let bare = HoundifyClientConfiguration(endpoint: fromConfig.endpoint, clientKey: "AAAA", profile: fromConfig.profile)
        #expect(bare.connectTimeoutMS == fromConfig.connectTimeoutMS && bare.responseTimeoutMS == fromConfig.responseTimeoutMS)
        #expect(bare.audioFormat == fromConfig.audioFormat)
    }

    @Test func missingCredentialsAreNamed() throws {
        let config = try ConfigLoader.load(path: nil, environment: [:])
        #expect(throws: ConfigError.self) { try config.houndifyClientConfiguration() }
        do { _ = try config.houndifyClientConfiguration() } catch {
            #expect(error.description.contains("[houndify] client_id: no Houndify client ID: set it in the file or in HOUNDIFY_CLIENT_ID"))
        }
    }

    @Test func deviceIDDoesNotExposeTheMachineID() {
        let id = SpeakerConfiguration.machineDeviceID()
        #expect(id.hasPrefix("hs-") || id == "hound-speaker")
        if let machine = try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8) {
            #expect(!id.contains(machine.trimmingCharacters(in: .whitespacesAndNewlines)))
        }
        #expect(SpeakerConfiguration.machineDeviceID() == id)  // stable
    }
}
