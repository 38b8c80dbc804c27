public import AudioCore
public import BoardCore
public import HoundifyCore
public import Logging
public import SpeakerCore

/// The speaker's settings, read from TOML (config/speaker.toml documents every key).
public struct SpeakerConfiguration: Sendable {
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
        /// multi-microphone cards; CapturePacing in Sources/AudioCore/CaptureSettings.swift).
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

    public struct SetupSection: Sendable, Equatable {
        /// Where the setup page listens while there are no credentials; nil: no setup mode (`listen = ""`), and a
        /// speaker without credentials stops with exit 78 as before.
        public var listen: ControlAddress? = ControlAddress(host: "0.0.0.0", port: 80)
    }

    /// Home Assistant over MQTT discovery (`[home_assistant]`, issue #65).
    public struct HomeAssistantSection: Sendable, Equatable {
        /// The broker; nil: off.
        public var mqtt: MQTTAddress?
        public var username = ""
        /// Never logged (a secret of the log handler), never in an event or a reply.
        public var password = ""
        public var discoveryPrefix = "homeassistant"
        public var name = "Hound Speaker"
        /// "" : made from /etc/machine-id (the same on every start, different on every speaker).
        public var nodeID = ""
        /// Home Assistant's base URL for its conversation API (`url`, http:// or https://, e.g.
        /// "http://homeassistant.local:8123"): home-control commands are handed to it. "": no hand-off.
        public var url = ""
        /// A long-lived access token for `url`. Never logged (a secret of the log handler), like `password`.
        public var token = ""
        /// The conversation agent (`agent_id`); "": Home Assistant's default agent.
        public var agentID = ""
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
        /// An APA102 LED ring on spidev (`ring_*`); none while its pixel count is 0. The power line is on `chip`.
        public var ring = LEDRingProfile(name: "APA102 LED ring", spiBus: 0, chipSelect: 1, speedHz: 8_000_000, pixelCount: 0,
                                         powerLine: nil, brightness: 10)
        public var hasRing: Bool { ring.pixelCount > 0 }
    }

    /// The speaker loop (`[speaker]`).
    public struct SpeakerSection: Sendable, Equatable {
        /// `speech` (the Hound SDK's enableSpeech, docs/houndify-protocol.md: false shows answers in the log instead
        /// of speaking them), the recording, searching and speaking limits, and `offline_commands` (on by default).
        public var machine: SpeakerMachine.Settings = {
            var settings = SpeakerMachine.Settings()
            settings.offlineCommands = true
            return settings
        }()
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
    public var houndify = HoundifySettings()
    public var location = LocationSection()
    public var audio = AudioSection()
    public var serve = ServeSection()
    public var control = ControlSection()
    public var setup = SetupSection()
    public var homeAssistant = HomeAssistantSection()
    /// The kiosk screen's brightness (`[screen]`).
    public var screen = ScreenSettings()
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

/// An MQTT broker as `[home_assistant] mqtt` gives it: `mqtt://HOST[:PORT]` (1883) or `mqtts://HOST[:PORT]` (8883,
/// TLS checked against the system's certificates).
public struct MQTTAddress: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var tls: Bool

    public init(host: String, port: Int, tls: Bool) {
        self.host = host
        self.port = port
        self.tls = tls
    }

    public static func parse(_ text: String) -> Result<MQTTAddress, ControlAddressError> {
        let tls: Bool
        let rest: Substring
        if text.hasPrefix("mqtt://") { tls = false; rest = text.dropFirst(7) }
        else if text.hasPrefix("mqtts://") { tls = true; rest = text.dropFirst(8) }
        else { return .failure(.init("must be mqtt://HOST:PORT or mqtts://HOST:PORT, e.g. \"mqtt://homeassistant.local:1883\"")) }
        var authority = rest
        if authority.hasSuffix("/") { authority = authority.dropLast() }
        // A password in the address would end up wherever the address is shown.
        guard !authority.contains("@") else { return .failure(.init("must not hold a user or password: set username and password instead")) }
        guard !authority.contains("/"), !authority.contains("?"), !authority.contains("#") else {
            return .failure(.init("is HOST:PORT after the scheme, with no path"))
        }
        var host = String(authority)
        var port = tls ? 8883 : 1883
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return .failure(.init("has an IPv6 address without its closing ]")) }
            host = String(authority[authority.index(after: authority.startIndex)..<close])
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.first == ":", let p = Int(after.dropFirst()), (1...65535).contains(p) else {
                    return .failure(.init("the port must be 1 to 65535, not \"\(after.dropFirst())\""))
                }
                port = p
            }
        } else if let colon = authority.lastIndex(of: ":") {
            let portText = authority[authority.index(after: colon)...]
            guard let p = Int(portText), (1...65535).contains(p) else {
                return .failure(.init("the port must be 1 to 65535, not \"\(portText)\""))
            }
            port = p
            host = String(authority[..<colon])
        }
        guard !host.isEmpty, host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._:".contains($0)) }) else {
            return .failure(.init("the host must be a name or an IP address, not \"\(host)\""))
        }
        return .success(MQTTAddress(host: host, port: port, tls: tls))
    }

    public var description: String { "\(tls ? "mqtts" : "mqtt")://\(host.contains(":") ? "[\(host)]" : host):\(port)" }
}

public struct ControlAddressError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
