import FoundationEssentials
public import JSONKit

/// How the voice query's audio is put on the wire (docs/houndify-protocol.md, "Voice upload").
public enum AudioUploadFormat: String, Sendable, CaseIterable {
    case pcm
    case speex
}

/// The speaker's Houndify settings (`[houndify]` in config/speaker.toml): the client's and the answers'. The
/// defaults here are the only ones: the client's configuration (Sources/Houndify/HoundifyClient.swift) takes its
/// own from them.
public struct HoundifySettings: Sendable, Equatable {
    public var clientID = ""
    public var clientKey = ""
    public var endpoint = "https://api.houndify.com"
    public var userID = "hound-speaker"
    /// Empty: derived from /etc/machine-id.
    public var deviceID = ""
    /// Seconds; within `connectTimeoutRange`.
    public var connectTimeout = 5.0
    /// Seconds; within `responseTimeoutRange`.
    public var responseTimeout = 10.0
    public var audioFormat = AudioUploadFormat.pcm
    public var unitPreference = "US"
    /// Empty: the conversation is kept in memory only. Not set (nil): $STATE_DIRECTORY/conversation.json when
    /// systemd gives the service a state directory (the unit's StateDirectory=), else
    /// $XDG_STATE_HOME/hound-speaker/conversation.json (~/.local/state/... without XDG_STATE_HOME).
    public var conversationStateFile: String?
    public var requestInfo: [String: JSONValue] = [:]
    /// Say SpokenResponseLong or SpokenResponse (`answer_length`); also asked of Houndify's own voice.
    public var answerLength = AnswerLength.long
    /// Client features for RequiredFeatures (`supported_features`).
    public var supportedFeatures: [String] = []
    /// Houndify's own voice for answers (`voice`, ResponseAudioVoice); empty: espeak-ng speaks them.
    public var voice = ""
    /// The owner's phrases (`[[houndify.client_match]]`), sent as ClientMatches.
    public var clientMatches: [ClientMatch] = []

    public init() {}

    /// Bounded, not just positive: 1e16 s once overflowed the milliseconds and crashed every command, and a tiny
    /// value either rounded to 0 ms (which libcurl reads as its 300 s default) or failed every query.
    public static let connectTimeoutRange: ClosedRange<Double> = 0.1...120
    public static let responseTimeoutRange: ClosedRange<Double> = 1...300

    /// The timeouts as libcurl takes them.
    public var connectTimeoutMS: Int { Int(connectTimeout * 1000) }
    public var responseTimeoutMS: Int { Int(responseTimeout * 1000) }

    public enum AnswerLength: String, Sendable, CaseIterable { case long, short }

    /// One owner's phrase: Houndify matches it (ClientMatches) and the speaker does `action` and says `response`.
    public struct ClientMatch: Sendable, Equatable {
        /// Houndify's expression syntax: `"good" . "night"`, `("lights" | "light") . ["please"]`.
        public var expression: String
        public var response: String
        public var action: Action

        public init(expression: String, response: String, action: Action) {
            self.expression = expression
            self.response = response
            self.action = action
        }

        /// `"turn" . "on" . "the" . "porch" . "light"` for "turn on the porch light".
        public static func expression(phrase: String) -> String {
            phrase.lowercased().split(whereSeparator: { !$0.isLetter && !$0.isNumber && $0 != "'" })
                .map { "\"\($0)\"" }.joined(separator: " . ")
        }
    }

    public enum Action: Sendable, Equatable {
        /// `/bin/sh -c` this, not waited for.
        case run(String)
        case builtIn(BuiltInAction)
        /// The words heard go to Home Assistant's conversation API, and its reply is said (`home_assistant = true`).
        case homeAssistant
    }

    /// What a phrase can do without a command (`action = "..."`).
    public enum BuiltInAction: String, Sendable, CaseIterable {
        case volumeUp = "volume_up", volumeDown = "volume_down", soundOff = "sound_off", soundOn = "sound_on"
        case microphoneOff = "microphone_off"
    }
}

/// base64 with the URL-safe alphabet (`-` `_`), padding kept on output and optional on input.
public enum Base64URL {
    public static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
            .replacing("+", with: "-")
            .replacing("/", with: "_")
    }

    public static func decode(_ text: String) -> [UInt8]? {
        var s = text.replacing("-", with: "+").replacing("_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s).map { [UInt8]($0) }
    }
}

extension HoundifySettings {
    /// What these settings add to every request's RequestInfo: Houndify's own voice when `voice` names one, the
    /// owner's phrases as ClientMatches, and `requestInfo` as it is (its keys win).
    public var requestInfoExtra: [String: JSONValue] {
        responseAudioRequest.merging(clientMatchesRequest) { a, _ in a }.merging(requestInfo) { _, own in own }
    }

    /// What RequestInfo asks of Houndify's own voice when `voice` names one.
    var responseAudioRequest: [String: JSONValue] {
        guard !voice.isEmpty else { return [:] }
        return ["ResponseAudioVoice": .string(voice),
                "ResponseAudioShortOrLong": .string(answerLength == .long ? "Long" : "Short"),
                "ResponseAudioAcceptedEncodings": ["WAV"]]
    }

    /// The owner's phrases as RequestInfo ClientMatches: each `Result` holds its index, which comes back in the
    /// ClientMatchCommand Houndify answers with (docs/houndify-protocol.md, "Owner's phrases").
    var clientMatchesRequest: [String: JSONValue] {
        guard !clientMatches.isEmpty else { return [:] }
        return ["ClientMatches": .array(clientMatches.enumerated().map { index, match in
            ["Expression": .string(match.expression), "Result": ["HoundSpeakerMatch": .int(Int64(index))],
             "SpokenResponse": .string(match.response), "SpokenResponseLong": .string(match.response),
             "WrittenResponse": .string(match.response), "WrittenResponseLong": .string(match.response)]
        })]
    }
}
