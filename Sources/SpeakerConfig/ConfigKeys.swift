import AudioCore
import BoardCore
import HoundifyCore
import Logging

// Every config key, declared once: its table (the enum), its name (the case's raw value), what it takes and what it
// is for. The reader (ConfigLoader.swift) reads each key through its case and takes the checks and the wording of
// its errors from `type`; the unknown-key errors list the cases; the tests check config/speaker.toml documents
// every one (Tests/SpeakerConfigTests/ConfigKeysTests.swift).

/// What a config key takes.
enum ConfigValueType: Sendable, Equatable {
    case string
    case bool
    /// An integer in the range; `unit` follows the range in errors (" ms", " Hz", or "").
    case integer(ClosedRange<Int>, unit: String)
    /// A number (integer or float) in the range.
    case number(ClosedRange<Double>)
    /// A number of seconds in the range.
    case seconds(ClosedRange<Double>)
    /// One of these strings.
    case choice([String])
    /// A table with rules of its own (inline or `[table.key]`).
    case table
    /// An array (of strings, or `[[table.key]]` tables).
    case list

    /// The cases of an enum as a choice, so the list in errors is always the enum's.
    static func choice<Choice: CaseIterable & RawRepresentable>(of _: Choice.Type) -> Self where Choice.RawValue == String {
        .choice(Choice.allCases.map(\.rawValue))
    }
}

/// The keys of one config table: each case is one key.
protocol ConfigKey: RawRepresentable, CaseIterable, Sendable where RawValue == String {
    /// The table's name, as in `[name]`.
    static var table: String { get }
    /// What the key takes, and what it is for (one line).
    var spec: (type: ConfigValueType, doc: String) { get }
}

/// One key of the table, whatever its section.
struct ConfigKeyInfo: Sendable, Equatable {
    var table: String
    var name: String
    var type: ConfigValueType
    var doc: String
}

/// The whole table.
enum ConfigSchema {
    /// In the order config/speaker.toml documents them.
    static let sections: [any ConfigKey.Type] = [
        HoundifyKey.self, LocationKey.self, AudioKey.self, SpeakerKey.self, ListeningKey.self, HotPhraseKey.self,
        SpeechKey.self, BoardKey.self, ControlKey.self, SetupKey.self, HomeAssistantKey.self, ScreenKey.self, ServeKey.self,
        LoggingKey.self,
    ]

    static let keys: [ConfigKeyInfo] = sections.flatMap { infos($0) }

    /// Each table's keys, in their declared order.
    static let tables: [String: [String]] = Dictionary(grouping: keys, by: \.table).mapValues { $0.map(\.name) }

    static func infos<Key: ConfigKey>(_: Key.Type) -> [ConfigKeyInfo] {
        Key.allCases.map { ConfigKeyInfo(table: Key.table, name: $0.rawValue, type: $0.spec.type, doc: $0.spec.doc) }
    }
}

enum HoundifyKey: String, ConfigKey {
    case clientID = "client_id", clientKey = "client_key", endpoint, userID = "user_id", deviceID = "device_id"
    case connectTimeout = "connect_timeout", responseTimeout = "response_timeout", audioFormat = "audio_format"
    case unitPreference = "unit_preference", conversationStateFile = "conversation_state_file", requestInfo = "request_info"
    case answerLength = "answer_length", supportedFeatures = "supported_features", voice, clientMatch = "client_match"
    static let table = "houndify"

    var spec: (type: ConfigValueType, doc: String) {
        switch self {
        case .clientID: (.string, "the client's ID, from the Houndify dashboard")
        case .clientKey: (.string, "the client's key, from the Houndify dashboard (base64url)")
        case .endpoint: (.string, "the service's base URL, http:// or https://")
        case .userID: (.string, "sent as UserID; no ';'")
        case .deviceID: (.string, "sent as DeviceID; empty: derived from /etc/machine-id")
        case .connectTimeout: (.seconds(HoundifySettings.connectTimeoutRange), "seconds allowed to connect")
        case .responseTimeout: (.seconds(HoundifySettings.responseTimeoutRange), "seconds from the end of the question to the answer")
        case .audioFormat: (.choice(of: AudioUploadFormat.self), "how voice audio is uploaded")
        case .unitPreference: (.choice(["US", "METRIC"]), "sent as UnitPreference")
        case .conversationStateFile: (.string, "where the conversation state is kept; empty: in memory")
        case .requestInfo: (.table, "extra RequestInfo keys, sent as they are")
        case .answerLength: (.choice(of: HoundifySettings.AnswerLength.self), "which of Houndify's answers is spoken")
        case .supportedFeatures: (.list, "client features for RequiredFeatures")
        case .voice: (.string, "Houndify's own voice for answers; empty: espeak-ng")
        case .clientMatch: (.list, "the owner's phrases ([[houndify.client_match]])")
        }
    }
}

enum LocationKey: String, ConfigKey {
    case latitude, longitude, accuracy, timezone
    static let table = "location"

    var spec: (type: ConfigValueType, doc: String) {
        switch self {
        case .latitude: (.number(-90...90), "degrees north; with longitude")
        case .longitude: (.number(-180...180), "degrees east; with latitude")
        case .accuracy: (.number(0...40_000_000), "horizontal accuracy in metres")
        case .timezone: (.string, "IANA time zone; empty: the system's")
        }
    }
}

enum AudioKey: String, ConfigKey {
    case input, output, inputRate = "input_rate", inputChannels = "input_channels", inputChannel = "input_channel"
    case inputPacing = "input_pacing", volume, mixerControl = "mixer_control", earcons, echoCancel = "echo_cancel"
    case echoDelayMS = "echo_delay_ms", echoTailMS = "echo_tail_ms"
    static let table = "audio"

    var spec: (type: ConfigValueType, doc: String) {
        switch self {
        case .input: (.string, "the microphone's ALSA PCM")
        case .output: (.string, "the speaker's ALSA PCM")
        case .inputRate: (.integer(8000...192_000, unit: " Hz"), "the rate asked of the microphone")
        case .inputChannels: (.integer(1...16, unit: ""), "channels captured")
        case .inputChannel: (.integer(0...Int.max, unit: ""), "the channel used, from 0")
        case .inputPacing: (.choice(of: CapturePacing.self), "how fast the microphone's audio is read")
        case .volume: (.integer(0...100, unit: ""), "output volume")
        case .mixerControl: (.string, "the ALSA mixer control for the volume; empty: the samples are scaled")
        case .earcons: (.table, "WAV files replacing the built-in earcons")
        case .echoCancel: (.bool, "echo cancellation, for barge-in")
        case .echoDelayMS: (.integer(EchoCancelSettings.delayRange, unit: " ms"), "the echo's delay beyond the devices' own")
        case .echoTailMS: (.integer(EchoCancelSettings.tailRange, unit: " ms"), "the longest echo the canceller models")
        }
    }
}

enum SpeakerKey: String, ConfigKey {
    case speech, stateHook = "state_hook", recordingLimitMS = "recording_limit_ms", searchingLimitMS = "searching_limit_ms"
    case speakingLimitMS = "speaking_limit_ms", ringingLimitMS = "ringing_limit_ms", timersFile = "timers_file"
    case muteFile = "mute_file", followUp = "follow_up", offlineCommands = "offline_commands"
    static let table = "speaker"

    var spec: (type: ConfigValueType, doc: String) {
        switch self {
        case .speech: (.bool, "speak the answers (false: only logged)")
        case .stateHook: (.string, "a command run on every state change")
        case .recordingLimitMS: (.integer(2000...120_000, unit: " ms"), "the longest recording")
        case .searchingLimitMS: (.integer(2000...120_000, unit: " ms"), "the longest search")
        case .speakingLimitMS: (.integer(2000...600_000, unit: " ms"), "the longest answer spoken")
        case .ringingLimitMS: (.integer(5000...3_600_000, unit: " ms"), "how long a timer rings")
        case .timersFile: (.string, "where timers are kept; empty: in memory")
        case .muteFile: (.string, "where mute is remembered; empty: not at all")
        case .followUp: (.bool, "reopen the microphone after each answer")
        case .offlineCommands: (.bool, "understand the speaker's own commands on the device when Houndify cannot answer")
        }
    }
}

enum ListeningKey: String, ConfigKey {
    case endOfSpeech = "end_of_speech", shortSilenceMS = "short_silence_ms", longSilenceMS = "long_silence_ms"
    case noSpeechTimeoutMS = "no_speech_timeout_ms", maxLengthMS = "max_length_ms"
    static let table = "listening"

    var spec: (type: ConfigValueType, doc: String) {
        switch self {
        case .endOfSpeech: (.choice(of: Endpointer.Mode.self), "what ends a query")
        case .shortSilenceMS: (.integer(200...3000, unit: " ms"), "the silence that ends a query, short")
        case .longSilenceMS: (.integer(200...5000, unit: " ms"), "the silence that ends a query, long")
        case .noSpeechTimeoutMS: (.integer(1000...30_000, unit: " ms"), "nothing said within this cancels")
        case .maxLengthMS: (.integer(2000...60_000, unit: " ms"), "the longest query")
        }
    }
}

enum HotPhraseKey: String, ConfigKey {
    case enabled, model, sensitivity, refractoryMS = "refractory_ms", bargeInSensitivity = "barge_in_sensitivity"
    case household, learnFromAnswers = "learn_from_answers", stopWord = "stop_word"
    static let table = "hotphrase"

    var spec: (type: ConfigValueType, doc: String) {
        switch self {
        case .enabled: (.bool, "listen for \"OK Hound\"")
        case .model: (.string, "the detector's model file; empty: the installed one")
        case .sensitivity: (.number(0...1), "higher hears more readily")
        case .refractoryMS: (.integer(0...10_000, unit: " ms"), "deaf time after a detection")
        case .bargeInSensitivity: (.number(0...1), "the sensitivity while the speaker talks or rings")
        case .household: (.string, "the folder of the household's voices; empty: the state directory")
        case .learnFromAnswers: (.bool, "keep answered wakes as templates")
        case .stopWord: (.bool, "\"stop\" said by anyone stops a ring or an answer")
        }
    }
}

enum SpeechKey: String, ConfigKey {
    case voice, rate, pitch, volume, leadInMS = "lead_in_ms"
    static let table = "speech"

    var spec: (type: ConfigValueType, doc: String) {
        switch self {
        case .voice: (.string, "the espeak-ng voice")
        case .rate: (.integer(80...450, unit: ""), "words per minute")
        case .pitch: (.integer(0...100, unit: ""), "pitch")
        case .volume: (.integer(0...200, unit: ""), "espeak-ng's volume; 100 is normal")
        case .leadInMS: (.integer(0...1000, unit: ""), "silence before the first word, ms")
        }
    }
}

enum BoardKey: String, ConfigKey {
    case profile, driver, chip, button, buttonActiveLow = "button_active_low", led, leds, ledsActiveLow = "leds_active_low"
    case muteSwitch = "mute_switch", muteSwitchActiveLow = "mute_switch_active_low", debounceMS = "debounce_ms"
    case longPressMS = "long_press_ms", doublePressMS = "double_press_ms", setupHoldMS = "setup_hold_ms", talkMode = "talk_mode"
    case ringPixels = "ring_pixels", ringSPIBus = "ring_spi_bus", ringChipSelect = "ring_chip_select", ringSpeedHz = "ring_speed_hz"
    case ringPower = "ring_power", ringBrightness = "ring_brightness"
    static let table = "board"

    var spec: (type: ConfigValueType, doc: String) {
        switch self {
        case .profile: (.string, "a board profile from board/")
        case .driver: (.choice(of: BoardDriver.self), "real GPIO lines or the simulated board")
        case .chip: (.string, "the GPIO chip")
        case .button: (.string, "the button's line; empty: none")
        case .buttonActiveLow: (.bool, "pressed pulls the line low")
        case .led: (.string, "a single status LED's line; empty: none")
        case .leds: (.table, "the listening, searching and speaking LEDs' lines")
        case .ledsActiveLow: (.bool, "LEDs lit when the line is low")
        case .muteSwitch: (.string, "a mute switch's line; empty: none")
        case .muteSwitchActiveLow: (.bool, "the mute switch is on when the line is low")
        case .debounceMS: (.integer(0...500, unit: " ms"), "contact bounce")
        case .longPressMS: (.integer(200...10_000, unit: " ms"), "held this long: a long press")
        case .doublePressMS: (.integer(0...2_000, unit: " ms"), "a second press this soon: a double press")
        case .setupHoldMS: (.integer(2_000...30_000, unit: " ms"), "held this long: voice enrollment starts")
        case .talkMode: (.choice(of: TalkMode.self), "tap or hold to talk")
        case .ringPixels: (.integer(0...LEDRingProfile.pixelCountRange.upperBound, unit: ""), "an APA102 LED ring's pixels; 0: none")
        case .ringSPIBus: (.integer(LEDRingProfile.spiNumberRange, unit: ""), "the ring's spidev bus")
        case .ringChipSelect: (.integer(LEDRingProfile.spiNumberRange, unit: ""), "the ring's spidev chip select")
        case .ringSpeedHz: (.integer(LEDRingProfile.speedRange, unit: " Hz"), "the ring's SPI clock")
        case .ringPower: (.string, "a line driven high to power the ring; empty: none")
        case .ringBrightness: (.integer(APA102.brightnessRange, unit: ""), "the ring's APA102 brightness")
        }
    }
}

enum ControlKey: String, ConfigKey {
    case listen, token
    static let table = "control"

    var spec: (type: ConfigValueType, doc: String) {
        switch self {
        case .listen: (.string, "HOST:PORT of the control API and kiosk page; empty: off")
        case .token: (.string, "asked of clients not on this machine")
        }
    }
}

enum SetupKey: String, ConfigKey {
    case listen
    static let table = "setup"

    var spec: (type: ConfigValueType, doc: String) {
        switch self {
        case .listen: (.string, "HOST:PORT of the setup page while the speaker has no credentials; empty: no setup mode")
        }
    }
}

enum HomeAssistantKey: String, ConfigKey {
    case mqtt, username, password, discoveryPrefix = "discovery_prefix", name, nodeID = "node_id", url, token, agentID = "agent_id"
    static let table = "home_assistant"

    var spec: (type: ConfigValueType, doc: String) {
        switch self {
        case .mqtt: (.string, "the MQTT broker, mqtt://HOST:PORT or mqtts://HOST:PORT; empty: off")
        case .username: (.string, "the broker's user name")
        case .password: (.string, "the broker's password (never logged)")
        case .discoveryPrefix: (.string, "Home Assistant's discovery prefix")
        case .name: (.string, "the device's name in Home Assistant")
        case .nodeID: (.string, "the device's id in topics; empty: made from /etc/machine-id")
        case .url: (.string, "Home Assistant's base URL for its conversation API, http:// or https://; empty: no hand-off")
        case .token: (.string, "a long-lived access token for url (never logged)")
        case .agentID: (.string, "the conversation agent; empty: Home Assistant's default")
        }
    }
}

enum ScreenKey: String, ConfigKey {
    case dimAfter = "dim_after", dimLevel = "dim_level", backlight
    static let table = "screen"

    var spec: (type: ConfigValueType, doc: String) {
        switch self {
        case .dimAfter: (.seconds(0...86_400), "quiet before the screen dims; 0: never")
        // 0 would be a screen switched off: it would show nothing of a timer across the room.
        case .dimLevel: (.integer(1...100, unit: " (percent of full brightness)"), "brightness when dimmed")
        case .backlight: (.string, "the backlight's sysfs directory; empty: the page dims itself")
        }
    }
}

enum ServeKey: String, ConfigKey {
    case port, transcript
    static let table = "serve"

    var spec: (type: ConfigValueType, doc: String) {
        switch self {
        case .port: (.integer(0...65535, unit: ""), "the local service's port; 0: any free one")
        case .transcript: (.string, "what the local service pretends to hear")
        }
    }
}

enum LoggingKey: String, ConfigKey {
    case level
    static let table = "logging"

    var spec: (type: ConfigValueType, doc: String) {
        switch self {
        case .level: (.choice(of: Logger.Level.self), "the least important level logged")
        }
    }
}
