import FoundationEssentials
public import JSONKit
import Glibc

/// The client's identity and preferences, from which each request's RequestInfo is built.
public struct ClientProfile: Sendable, Equatable {
    public var clientID: String
    public var userID: String
    public var deviceID: String
    public var latitude: Double?
    public var longitude: Double?
    public var positionHorizontalAccuracy: Double?
    /// IANA name, e.g. `Europe/Paris`.
    public var timeZone: String
    /// `US` or `METRIC`.
    public var unitPreference: String
    public var clientVersion: String
    /// Extra keys from config, passed through as they are (they override the defaults).
    public var extra: [String: JSONValue]

    public init(clientID: String, userID: String = "hound-speaker", deviceID: String, latitude: Double? = nil,
                longitude: Double? = nil, positionHorizontalAccuracy: Double? = nil, timeZone: String,
                unitPreference: String = "US", clientVersion: String = HoundifySDK.version,
                extra: [String: JSONValue] = [:]) {
        self.clientID = clientID
        self.userID = userID
        self.deviceID = deviceID
        self.latitude = latitude
        self.longitude = longitude
        self.positionHorizontalAccuracy = positionHorizontalAccuracy
        self.timeZone = timeZone
        self.unitPreference = unitPreference
        self.clientVersion = clientVersion
        self.extra = extra
    }
}

public enum HoundifySDK {
    public static let name = "hound-speaker"
    public static let version = "0.1.0"
}

public enum RequestKind: Sendable { case text, voice }

/// Builds RequestInfo with the Hound SDK's defaults (UserID, RequestID, SessionID, TimeStamp, TimeZone, ClientID,
/// ClientVersion, DeviceID, ConversationState, UnitPreference, PartialTranscriptsDesired, SDK, SDKVersion), the
/// location, and the extra keys from config (docs/houndify-protocol.md, "Keys the speaker sends").
public enum RequestInfoBuilder {
    public static func build(profile: ClientProfile, kind: RequestKind, requestID: String, timeStamp: Int64,
                             conversationState: JSONValue?, sessionID: String? = nil, extra: [String: JSONValue] = [:]) -> [String: JSONValue] {
        var info: [String: JSONValue] = [
            "ClientID": .string(profile.clientID),
            "UserID": .string(profile.userID),
            "RequestID": .string(requestID),
            "TimeStamp": .int(timeStamp),
            "TimeZone": .string(profile.timeZone),
            "ClientVersion": .string(profile.clientVersion),
            "DeviceID": .string(profile.deviceID),
            "UnitPreference": .string(profile.unitPreference),
            "SDK": .string(HoundifySDK.name),
            "SDKVersion": .string(HoundifySDK.version),
        ]
        if kind == .voice { info["PartialTranscriptsDesired"] = true }
        if let sessionID { info["SessionID"] = .string(sessionID) }
        if let latitude = profile.latitude, let longitude = profile.longitude {
            info["Latitude"] = .double(latitude)
            info["Longitude"] = .double(longitude)
            if let accuracy = profile.positionHorizontalAccuracy { info["PositionHorizontalAccuracy"] = .double(accuracy) }
        }
        if let state = conversationState {
            info["ConversationState"] = state
            // As the Python and JS SDKs do: the state's own time goes to the top level too (docs/houndify-protocol.md,
            // "Conversation state").
            if let time = state["ConversationStateTime"] { info["ConversationStateTime"] = time }
        }
        for (key, value) in profile.extra { info[key] = value }
        for (key, value) in extra { info[key] = value }
        return info
    }
}
