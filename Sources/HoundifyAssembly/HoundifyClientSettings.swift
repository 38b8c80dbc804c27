import FoundationEssentials
public import Houndify
import Digests
import HoundifyCore
import Platform
public import SpeakerConfig

// Here, not in SpeakerConfig: the client's configuration is Houndify's type and the device ID is an HMAC (OpenSSL),
// and the config reader links neither (Package.swift).
extension SpeakerConfiguration {
    /// The Houndify client settings; fails if a credential is missing.
    public func houndifyClientConfiguration() throws(ConfigError) -> HoundifyClientConfiguration {
        let file = path ?? "(built-in defaults)"
        guard !houndify.clientID.isEmpty else {
            throw ConfigError(file: file, line: nil, key: "[houndify] client_id",
                              problem: "no Houndify client ID: set it in the file or in HOUNDIFY_CLIENT_ID")
        }
        guard !houndify.clientKey.isEmpty else {
            throw ConfigError(file: file, line: nil, key: "[houndify] client_key",
                              problem: "no Houndify client key: set it in the file or in HOUNDIFY_CLIENT_KEY")
        }
        let profile = ClientProfile(
            clientID: houndify.clientID, userID: houndify.userID,
            deviceID: houndify.deviceID.isEmpty ? Self.machineDeviceID() : houndify.deviceID,
            latitude: location.latitude, longitude: location.longitude,
            positionHorizontalAccuracy: location.accuracy,
            timeZone: location.timezone.isEmpty ? SystemTimeZone.identifier() : location.timezone,
            unitPreference: houndify.unitPreference,
            extra: houndify.requestInfoExtra)
        return HoundifyClientConfiguration(
            endpoint: houndify.endpoint, clientKey: houndify.clientKey, profile: profile,
            connectTimeoutMS: houndify.connectTimeoutMS, responseTimeoutMS: houndify.responseTimeoutMS,
            audioFormat: houndify.audioFormat)
    }

    /// A stable per-device ID that does not reveal /etc/machine-id itself (systemd asks that it not be exposed).
    public static func machineDeviceID() -> String {
        guard let text = try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8) else { return "hound-speaker" }
        let id = text.trimmed(.whitespacesAndNewlines)
        guard !id.isEmpty else { return "hound-speaker" }
        let digest = Digests.hmacSHA256(key: Array("hound-speaker-device-id".utf8), message: Array(id.utf8))
        return "hs-" + digest.prefix(8).map { String(cFormat: "%02x", $0) }.joined()
    }
}
