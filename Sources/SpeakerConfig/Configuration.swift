import FoundationEssentials
public import JSONKit
import Platform
import Glibc
public import Houndify
public import Audio
public import AudioCore
public import BoardCore
public import Logging
public import SpeakerCore
public import Speech
public import HotPhrase

/// The speaker's settings, read from TOML (config/speaker.toml documents every key).
public struct SpeakerConfiguration: Sendable {
    public struct HoundifySection: Sendable, Equatable {
        public var clientID = ""
        public var clientKey = ""
        public var endpoint = "https://api.houndify.com"
        public var userID = "hound-speaker"
        /// Empty: derived from /etc/machine-id.
        public var deviceID = ""
        public var connectTimeout = 5.0
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
        public var clientMatches: [ClientMatchSetting] = []
    }

    /// One owner's phrase: Houndify matches it (ClientMatches) and the speaker does `action` and says `response`.
    public struct ClientMatchSetting: Sendable, Equatable {
        /// Houndify's expression syntax: `"good" . "night"`, `("lights" | "light") . ["please"]`.
        public var expression: String
        public var response: String
        public var action: ClientMatchAction

        public init(expression: String, response: String, action: ClientMatchAction) {
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

    public enum ClientMatchAction: Sendable, Equatable {
        /// `/bin/sh -c` this, not waited for.
        case run(String)
        case builtIn(BuiltInAction)
    }

    /// What a phrase can do without a command (`action = "..."`).
    public enum BuiltInAction: String, Sendable, CaseIterable {
        case volumeUp = "volume_up", volumeDown = "volume_down", soundOff = "sound_off", soundOn = "sound_on"
        case microphoneOff = "microphone_off"
    }

    public enum AnswerLength: String, Sendable, CaseIterable { case long, short }

    public struct LocationSection: Sendable, Equatable {
        public var latitude: Double?
        public var longitude: Double?
        public var accuracy: Double?
        /// Empty: the system's time zone.
        public var timezone = ""
    }

    public struct AudioSection: Sendable, Equatable {
        /// The microphone: `input`, `input_rate`, `input_channels`, `input_channel` and `input_pacing` (the rate asked
        /// of the device, which may give its own and is resampled to 16 kHz; the channel used, 0-based, for
        /// multi-microphone cards; CapturePacing in Sources/Audio/ALSACapture.swift).
        public var capture = CaptureSettings()
        public var output = "default"
        /// Output volume, 0-100.
        public var volume = 80
        /// ALSA mixer control for the volume (e.g. "Master", "Speaker", "PCM"); "" scales the samples instead.
        public var mixerControl = ""
        /// Earcon WAVs replacing the built-in ones; an earcon not here keeps the built-in sound.
        public var earcons: [Earcon: String] = [:]
        /// `echo_cancel`, `echo_delay_ms`, `echo_tail_ms`: the speaker's own sound taken out of the microphone's
        /// (speexdsp), so "OK Hound" is heard while it talks or rings (barge-in).
        public var echo = EchoCancelSettings()

        /// `[audio] input`: the microphone's ALSA PCM.
        public var input: String {
            get { capture.device }
            set { capture.device = newValue }
        }
    }

    /// The control API and kiosk page of `run` (`[control]`).
    public struct ControlSection: Sendable, Equatable {
        /// Where they listen; nil: off (`listen = ""`).
        public var listen: ControlAddress? = ControlAddress(host: "127.0.0.1", port: 8780)
        /// Asked of every client that is not on this machine; required to listen beyond loopback.
        public var token = ""
    }

    /// The kiosk screen's brightness (`[screen]`).
    public struct ScreenSection: Sendable, Equatable {
        /// Seconds of quiet (ready, nothing ringing) before the screen dims; 0: never.
        public var dimAfter = 120.0
        /// Brightness when dimmed, 1-100 percent of full.
        public var dimLevel = 10
        /// A sysfs backlight directory (`/sys/class/backlight/NAME`) the speaker sets; "": the page dims its picture.
        public var backlight = ""

        public init(dimAfter: Double = 120, dimLevel: Int = 10, backlight: String = "") {
            self.dimAfter = dimAfter
            self.dimLevel = dimLevel
            self.backlight = backlight
        }
    }

    public struct ServeSection: Sendable, Equatable {
        public var port = 8080
        public var transcript = "what time is it"
    }

    /// The button and LEDs (`[board]`), from a board profile (`board/NAME.toml`) with any key overridden here.
    public struct BoardSection: Sendable, Equatable {
        /// Name of the profile the values came from ("" when none).
        public var profile = ""
        public var driver = BoardDriver.gpiod
        /// GPIO chip: a name (`gpiochip0`), a path, a label or a number.
        public var chip = "gpiochip0"
        /// Button line: a name such as `GPIO17`, or an offset. Empty: no button.
        public var button = "GPIO17"
        public var buttonActiveLow = true
        /// One status LED line (boards with a single LED show states as patterns on it). Empty: none.
        public var led = ""
        /// Listening, searching and speaking LED lines, for boards with three.
        public var leds: [LEDRole: String] = [.listening: "GPIO22", .searching: "GPIO23", .speaking: "GPIO24"]
        public var ledsActiveLow = false
        /// A mute (privacy) switch on a line of its own: on mutes, off unmutes, and its position at start decides.
        /// Empty: none (the double press mutes).
        public var muteSwitch = ""
        public var muteSwitchActiveLow = true
        /// `debounce_ms`, `long_press_ms`, `double_press_ms`.
        public var gestures = ButtonGestures.Settings()
        public var talkMode = TalkMode.tap
    }

    /// The speaker loop (`[speaker]`).
    public struct SpeakerSection: Sendable, Equatable {
        /// `speech` (the Hound SDK's enableSpeech, docs/houndify-protocol.md: false shows answers in the log instead
        /// of speaking them) and the recording, searching and speaking limits.
        public var machine = SpeakerMachine.Settings()
        /// A command run on every state change, with HOUND_SPEAKER_STATE set.
        public var stateHook = ""
        /// Where the timers are kept, so they outlast a restart. Empty: in memory only. Not set (nil): timers.json
        /// in the state directory (as `[houndify] conversation_state_file`).
        public var timersFile: String?
        /// Where mute is remembered. Empty: every start is unmuted. Not set (nil): `muted` in the state directory.
        public var muteFile: String?
    }

    public struct LoggingSection: Sendable, Equatable {
        public var level = Logger.Level.info
    }

    /// The file this was read from (nil for built-in defaults).
    public var path: String?
    public var houndify = HoundifySection()
    public var location = LocationSection()
    public var audio = AudioSection()
    public var serve = ServeSection()
    public var control = ControlSection()
    public var screen = ScreenSection()
    public var logging = LoggingSection()
    public var board = BoardSection()
    /// espeak-ng's voice (`[speech]`).
    public var speech = VoiceSettings()
    /// When a query ends (`[listening]`).
    public var listening = Endpointer.Settings()
    /// The "OK Hound" detector (`[hotphrase]`).
    public var hotphrase = HotPhraseSettings()
    public var speaker = SpeakerSection()
    /// Things worth telling the owner that do not stop the program.
    public var warnings: [String] = []
    /// Where the credentials came from, for `doctor` (never the key itself).
    public var clientIDSource = "none"
    public var clientKeySource = "none"

    public init() {}
}

/// A configuration problem, located in the file where possible (`file:line: [table] key: problem`).
public struct ConfigError: Error, CustomStringConvertible, Equatable {
    public var file: String
    public var line: Int?
    public var key: String?
    public var problem: String

    public init(file: String, line: Int?, key: String?, problem: String) {
        self.file = file
        self.line = line
        self.key = key
        self.problem = problem
    }

    public var description: String {
        var out = file
        if let line { out += ":\(line)" }
        out += ": "
        if let key { out += "\(key): " }
        return out + problem
    }
}

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
            extra: responseAudioRequest.merging(clientMatchesRequest) { a, _ in a }.merging(houndify.requestInfo) { _, own in own })
        return HoundifyClientConfiguration(
            endpoint: houndify.endpoint, clientKey: houndify.clientKey, profile: profile,
            connectTimeoutMS: Int(houndify.connectTimeout * 1000), responseTimeoutMS: Int(houndify.responseTimeout * 1000),
            audioFormat: houndify.audioFormat)
    }

    /// What RequestInfo asks of Houndify's own voice when `[houndify] voice` names one (keys in
    /// `[houndify.request_info]` win).
    var responseAudioRequest: [String: JSONValue] {
        guard !houndify.voice.isEmpty else { return [:] }
        return ["ResponseAudioVoice": .string(houndify.voice),
                "ResponseAudioShortOrLong": .string(houndify.answerLength == .long ? "Long" : "Short"),
                "ResponseAudioAcceptedEncodings": ["WAV"]]
    }

    /// The owner's phrases as RequestInfo ClientMatches: each `Result` holds its index, which comes back in the
    /// ClientMatchCommand Houndify answers with (docs/houndify-protocol.md, "Owner's phrases").
    var clientMatchesRequest: [String: JSONValue] {
        guard !houndify.clientMatches.isEmpty else { return [:] }
        return ["ClientMatches": .array(houndify.clientMatches.enumerated().map { index, match in
            ["Expression": .string(match.expression), "Result": ["HoundSpeakerMatch": .int(Int64(index))],
             "SpokenResponse": .string(match.response), "SpokenResponseLong": .string(match.response),
             "WrittenResponse": .string(match.response), "WrittenResponseLong": .string(match.response)]
        })]
    }

    /// A stable per-device ID that does not reveal /etc/machine-id itself (systemd asks that it not be exposed).
    public static func machineDeviceID() -> String {
        guard let text = try? String(contentsOfFile: "/etc/machine-id", encoding: .utf8) else { return "hound-speaker" }
        let id = text.trimmed(.whitespacesAndNewlines)
        guard !id.isEmpty else { return "hound-speaker" }
        let digest = HMACSHA256.mac(key: Array("hound-speaker-device-id".utf8), message: Array(id.utf8))
        return "hs-" + digest.prefix(8).map { String(cFormat: "%02x", $0) }.joined()
    }
}

/// `HOST:PORT` for a server: an IPv4 address, `[IPv6]`, or `localhost`.
public struct ControlAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Reads `HOST:PORT`; the reason it is not one otherwise.
    public static func parse(_ text: String) -> Result<ControlAddress, ControlAddressError> {
        guard let colon = text.lastIndex(of: ":") else { return .failure(.init("must be HOST:PORT, e.g. \"127.0.0.1:8780\"")) }
        var host = String(text[..<colon])
        let portText = text[text.index(after: colon)...]
        guard let port = Int(portText), (0...65535).contains(port) else {
            return .failure(.init("the port must be 0 to 65535, not \"\(portText)\""))
        }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let isIPv4 = host.split(separator: ".", omittingEmptySubsequences: false).count == 4
            && host.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { UInt8($0) != nil }
        let isIPv6 = host.contains(":") && host.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
        guard isIPv4 || isIPv6 || host == "localhost" else {
            return .failure(.init("the host must be an IP address or localhost, not \"\(host)\""))
        }
        return .success(ControlAddress(host: host == "localhost" ? "127.0.0.1" : host, port: port))
    }

    /// Only this machine can connect (127.0.0.0/8 or ::1).
    public var isLoopback: Bool { host.hasPrefix("127.") || host == "::1" }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}

public struct ControlAddressError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
