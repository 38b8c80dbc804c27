import AudioCore
import BoardCore
import FoundationEssentials
import HoundifyCore
import JSONKit
import Logging
import Platform
import SpeakerCore
import TOMLKit

/// Reads a parsed TOML document into the settings: every table and key checked against the key table
/// (ConfigKeys.swift), then each table by a function of its own; each key through its case, whose type gives the
/// checks and the wording of the errors. Errors name the file, the line (KeyLines) and the key.
struct Reader {
    let file: String
    let lines: KeyLines

    /// Each table's keys (ConfigKeys.swift), for the unknown-key checks and the tests that go through every key.
    static var schema: [String: [String]] { ConfigSchema.tables }
    /// What a board profile may set.
    static let profileTables: Set<String> = [BoardKey.table, AudioKey.table]

    func error(_ table: String, _ key: String?, _ problem: String) -> ConfigError {
        let name = key.map { "[\(table)] \($0)" } ?? "[\(table)]"
        return ConfigError(file: file, line: lines.line(table: table, key: key), key: table.isEmpty ? key : name, problem: problem)
    }

    func error<Key: ConfigKey>(_ key: Key, _ problem: String) -> ConfigError { error(Key.table, key.rawValue, problem) }

    static func suggestion(for key: String, among candidates: [String]) -> String? {
        func distance(_ a: String, _ b: String) -> Int {
            let a = Array(a), b = Array(b)
            var previous = Array(0...b.count)
            for i in 1...max(a.count, 1) where !a.isEmpty {
                var current = [i] + Array(repeating: 0, count: b.count)
                for j in 1...max(b.count, 1) where !b.isEmpty {
                    current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
                }
                previous = current
            }
            return previous[b.count]
        }
        let scored = candidates.map { ($0, distance(key.lowercased(), $0)) }.sorted { $0.1 < $1.1 }
        guard let best = scored.first, best.1 <= max(2, key.count / 3) else { return nil }
        return best.0
    }

    func unknown(_ table: String, _ key: String, _ allowed: [String]) -> ConfigError {
        var problem = "unknown key"
        if let s = Self.suggestion(for: key, among: allowed) { problem += "; did you mean '\(s)'?" } else {
            problem += "; known keys: \(allowed.joined(separator: ", "))"
        }
        return error(table, key, problem)
    }

    /// The whole document: every table and key known (and, for a profile, only the tables it may set), then each
    /// table read over `base` by its own function.
    mutating func read(_ root: TOMLTable, base: SpeakerConfiguration = SpeakerConfiguration(),
                       onlyTables: Set<String>? = nil) throws(ConfigError) -> SpeakerConfiguration {
        try checkKeys(root, onlyTables: onlyTables)
        var config = base
        func section<Key: ConfigKey>(_: Key.Type, _ read: (TOMLTable) throws(ConfigError) -> Void) throws(ConfigError) {
            if let t = root[Key.table]?.table { try read(t) }
        }
        try section(HoundifyKey.self) { t throws(ConfigError) in try readHoundify(t, into: &config) }
        try section(LocationKey.self) { t throws(ConfigError) in try readLocation(t, into: &config.location) }
        try section(AudioKey.self) { t throws(ConfigError) in try readAudio(t, into: &config.audio) }
        try section(SpeakerKey.self) { t throws(ConfigError) in try readSpeaker(t, into: &config.speaker) }
        try section(ListeningKey.self) { t throws(ConfigError) in try readListening(t, into: &config.listening) }
        try section(HotPhraseKey.self) { t throws(ConfigError) in try readHotPhrase(t, into: &config.hotphrase) }
        try section(ServeKey.self) { t throws(ConfigError) in try readServe(t, into: &config.serve) }
        try section(ControlKey.self) { t throws(ConfigError) in try readControl(t, into: &config.control) }
        try section(SetupKey.self) { t throws(ConfigError) in try readSetup(t, into: &config.setup) }
        try section(HomeAssistantKey.self) { t throws(ConfigError) in try readHomeAssistant(t, into: &config.homeAssistant) }
        try section(ScreenKey.self) { t throws(ConfigError) in try readScreen(t, into: &config.screen) }
        try section(BoardKey.self) { t throws(ConfigError) in try readBoard(t, into: &config.board) }
        try section(SpeechKey.self) { t throws(ConfigError) in try readSpeech(t, into: &config.speech) }
        try section(LoggingKey.self) { t throws(ConfigError) in try readLogging(t, into: &config.logging) }
        // A phrase handed to Home Assistant needs somewhere to hand it.
        if config.homeAssistant.url.isEmpty,
           let index = config.houndify.clientMatches.firstIndex(where: { $0.action == .homeAssistant }) {
            throw error("houndify.client_match #\(index + 1)", "home_assistant",
                        "needs [home_assistant] url and token: the words go to Home Assistant's conversation API")
        }
        return config
    }

    /// Every table is one of the schema's (and a profile's one it may set), and every key in it is known.
    func checkKeys(_ root: TOMLTable, onlyTables: Set<String>?) throws(ConfigError) {
        for key in root.keys {
            if let only = onlyTables, !only.contains(key) {
                throw ConfigError(file: file, line: lines.line(table: key, key: nil), key: "[\(key)]",
                                  problem: "a board profile may only set \(only.sorted().map { "[\($0)]" }.joined(separator: " and "))")
            }
            guard let allowed = Self.schema[key] else {
                var problem = "unknown table"
                if let s = Self.suggestion(for: key, among: Array(Self.schema.keys)) { problem += "; did you mean [\(s)]?" } else {
                    problem += "; known tables: " + Self.schema.keys.sorted().map { "[\($0)]" }.joined(separator: ", ")
                }
                throw ConfigError(file: file, line: lines.line(table: key, key: nil), key: "[\(key)]", problem: problem)
            }
            guard let table = root[key]?.table else { throw error("", key, "must be a table ([\(key)])") }
            for inner in table.keys where !allowed.contains(inner) { throw unknown(key, inner, allowed) }
        }
    }

    func readHoundify(_ t: TOMLTable, into config: inout SpeakerConfiguration) throws(ConfigError) {
        typealias K = HoundifyKey
        if let v = try string(t, K.clientID) { config.houndify.clientID = v; config.clientIDSource = file }
        if let v = try string(t, K.clientKey) { config.houndify.clientKey = v; config.clientKeySource = file }
        if let v = try string(t, K.endpoint) {
            guard v.hasPrefix("http://") || v.hasPrefix("https://"), URL(string: v)?.host != nil else {
                throw error(K.endpoint, "must be an http:// or https:// URL, not \"\(v)\"")
            }
            config.houndify.endpoint = v
        }
        if let v = try string(t, K.userID) {
            guard !v.isEmpty, !v.contains(Character(";")) else { throw error(K.userID, "must be non-empty and must not contain ';'") }
            config.houndify.userID = v
        }
        if let v = try string(t, K.deviceID) { config.houndify.deviceID = v }
        if let v = try number(t, K.connectTimeout) { config.houndify.connectTimeout = v }
        if let v = try number(t, K.responseTimeout) { config.houndify.responseTimeout = v }
        if let v: AudioUploadFormat = try choice(t, K.audioFormat) { config.houndify.audioFormat = v }
        if let v = try oneOf(t, K.unitPreference) { config.houndify.unitPreference = v }
        if let v = try string(t, K.conversationStateFile) { config.houndify.conversationStateFile = v }
        if let value = t[K.requestInfo.rawValue] {
            guard let extra = value.table else { throw error(K.requestInfo, "must be a table ([houndify.request_info])") }
            for key in extra.keys { config.houndify.requestInfo[key] = try json(extra[key]!, "houndify.request_info", key) }
        }
        if let v: HoundifySettings.AnswerLength = try choice(t, K.answerLength) { config.houndify.answerLength = v }
        if let value = t[K.supportedFeatures.rawValue] {
            guard case .array(let items) = try json(value, K.table, K.supportedFeatures.rawValue),
                  let names = Optional(items.compactMap(\.stringValue)), names.count == items.count else {
                throw error(K.supportedFeatures, "must be a list of strings, e.g. [\"Timer\"]")
            }
            config.houndify.supportedFeatures = names
        }
        if let value = t[K.clientMatch.rawValue] { config.houndify.clientMatches = try clientMatches(value) }
        if let v = try string(t, K.voice) {
            guard !v.contains(where: { $0.isWhitespace || $0 == "\"" }) else { throw error(K.voice, "must be one voice name with no spaces, not \"\(v)\"") }
            config.houndify.voice = v
        }
    }

    func readLocation(_ t: TOMLTable, into location: inout SpeakerConfiguration.LocationSection) throws(ConfigError) {
        typealias K = LocationKey
        location.latitude = try number(t, K.latitude)
        location.longitude = try number(t, K.longitude)
        location.accuracy = try number(t, K.accuracy)
        if (location.latitude == nil) != (location.longitude == nil) {
            throw error(location.latitude == nil ? K.longitude : K.latitude, "latitude and longitude go together: set both or neither")
        }
        if let v = try string(t, K.timezone) {
            guard v.isEmpty || SystemTimeZone.isKnown(v) else {
                throw error(K.timezone, "unknown time zone \"\(v)\" (use an IANA name such as \"Europe/Paris\")")
            }
            location.timezone = v
        }
    }

    func readAudio(_ t: TOMLTable, into audio: inout SpeakerConfiguration.AudioSection) throws(ConfigError) {
        typealias K = AudioKey
        for key in [K.input, .output] {
            if let v = try string(t, key) {
                guard !v.trimmed(.whitespaces).isEmpty else { throw error(key, "must name an ALSA PCM, e.g. \"default\"") }
                if key == .input { audio.capture.device = v } else { audio.output = v }
            }
        }
        try readIntegers(t, into: &audio.capture, [(K.inputRate, \.rate), (.inputChannels, \.channels), (.inputChannel, \.channel)])
        if audio.capture.channel >= audio.capture.channels {
            throw error(K.inputChannel, "is \(audio.capture.channel) but only \(audio.capture.channels) channel(s) are captured (channels count from 0)")
        }
        if let v: CapturePacing = try choice(t, K.inputPacing) { audio.capture.pacing = v }
        try readIntegers(t, into: &audio, [(K.volume, \.volume)])
        if let v = try string(t, K.mixerControl) { audio.mixerControl = v }
        if let v = try bool(t, K.echoCancel) { audio.echo.enabled = v }
        try readIntegers(t, into: &audio.echo, [(K.echoDelayMS, \.delayMS), (.echoTailMS, \.tailMS)])
        if let value = t[K.earcons.rawValue] {
            guard let table = value.table else { throw error(K.earcons, "must be a table, e.g. { start_listening = \"/path/start.wav\" }") }
            for name in table.keys {
                guard let earcon = Earcon(rawValue: name) else {
                    throw error(K.earcons, "unknown earcon \"\(name)\"; they are \(Earcon.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                guard let path = table[name]?.string else { throw error(K.earcons, "\(name) must be a file path in quotes") }
                if !path.isEmpty { audio.earcons[earcon] = path }
            }
        }
    }

    func readSpeaker(_ t: TOMLTable, into speaker: inout SpeakerConfiguration.SpeakerSection) throws(ConfigError) {
        typealias K = SpeakerKey
        if let v = try bool(t, K.speech) { speaker.machine.enableSpeech = v }
        if let v = try bool(t, K.followUp) { speaker.machine.followUp = v }
        if let v = try bool(t, K.offlineCommands) { speaker.machine.offlineCommands = v }
        if let v = try string(t, K.stateHook) { speaker.stateHook = v }
        if let v = try string(t, K.timersFile) { speaker.timersFile = v }
        if let v = try string(t, K.muteFile) { speaker.muteFile = v }
        try readIntegers(t, into: &speaker.machine, [
            (K.recordingLimitMS, \.recordingLimitMS), (.searchingLimitMS, \.searchingLimitMS),
            (.speakingLimitMS, \.speakingLimitMS), (.ringingLimitMS, \.ringingLimitMS)])
    }

    func readListening(_ t: TOMLTable, into listening: inout Endpointer.Settings) throws(ConfigError) {
        typealias K = ListeningKey
        if let v: Endpointer.Mode = try choice(t, K.endOfSpeech) { listening.mode = v }
        try readIntegers(t, into: &listening, [
            (K.shortSilenceMS, \.shortSilenceMS), (.longSilenceMS, \.longSilenceMS),
            (.noSpeechTimeoutMS, \.noSpeechTimeoutMS), (.maxLengthMS, \.maxLengthMS)])
    }

    func readHotPhrase(_ t: TOMLTable, into hotphrase: inout HotPhraseSettings) throws(ConfigError) {
        typealias K = HotPhraseKey
        if let v = try bool(t, K.enabled) { hotphrase.enabled = v }
        if let v = try string(t, K.model) { hotphrase.model = v }
        if let v = try string(t, K.household) { hotphrase.household = v }
        if let v = try number(t, K.sensitivity) { hotphrase.sensitivity = v }
        if let v = try number(t, K.bargeInSensitivity) { hotphrase.bargeInSensitivity = v }
        if let v = try bool(t, K.learnFromAnswers) { hotphrase.learnFromAnswers = v }
        if let v = try bool(t, K.stopWord) { hotphrase.stopWord = v }
        try readIntegers(t, into: &hotphrase, [(K.refractoryMS, \.refractoryMS)])
    }

    func readServe(_ t: TOMLTable, into serve: inout SpeakerConfiguration.ServeSection) throws(ConfigError) {
        try readIntegers(t, into: &serve, [(ServeKey.port, \.port)])
        if let v = try string(t, ServeKey.transcript) { serve.transcript = v }
    }

    func readControl(_ t: TOMLTable, into control: inout SpeakerConfiguration.ControlSection) throws(ConfigError) {
        typealias K = ControlKey
        if let v = try string(t, K.token) {
            // Typed by hand into a phone or a script: long enough not to be guessed, nothing that needs quoting.
            guard v.isEmpty || (v.count >= 16 && v.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.~".contains($0)) })) else {
                throw error(K.token, "must be at least 16 letters, digits or - _ . ~ (e.g. from `openssl rand -hex 16`)")
            }
            control.token = v
        }
        if let v = try string(t, K.listen) {
            if v.isEmpty { control.listen = nil } else {
                switch ControlAddress.parse(v) {
                case .success(let address): control.listen = address
                case .failure(let problem): throw error(K.listen, "\(problem)")
                }
            }
        }
        if let address = control.listen, !address.isLoopback, control.token.isEmpty {
            throw error(K.listen, "\(address) can be reached from other machines: set [control] token too, or listen on 127.0.0.1")
        }
    }

    func readHomeAssistant(_ t: TOMLTable, into ha: inout SpeakerConfiguration.HomeAssistantSection) throws(ConfigError) {
        typealias K = HomeAssistantKey
        if let v = try string(t, K.mqtt) {
            if v.isEmpty { ha.mqtt = nil } else {
                switch MQTTAddress.parse(v) {
                case .success(let address): ha.mqtt = address
                case .failure(let problem): throw error(K.mqtt, "\(problem)")
                }
            }
        }
        if let v = try string(t, K.username) { ha.username = v }
        if let v = try string(t, K.password) { ha.password = v }
        // MQTT topic levels: no wildcards, no empty level, nothing that needs quoting in Home Assistant's YAML.
        func topicLevel(_ key: K, _ value: String, allowSlash: Bool) throws(ConfigError) -> String {
            guard !value.isEmpty, value.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_".contains($0) || (allowSlash && $0 == "/")) }),
                  !value.hasPrefix("/"), !value.hasSuffix("/"), !value.contains("//") else {
                throw error(key, "must be letters, digits, - and _\(allowSlash ? " (levels joined by /)" : ""), not \"\(value)\"")
            }
            return value
        }
        if let v = try string(t, K.discoveryPrefix) { ha.discoveryPrefix = try topicLevel(K.discoveryPrefix, v, allowSlash: true) }
        if let v = try string(t, K.nodeID) { ha.nodeID = v.isEmpty ? "" : try topicLevel(K.nodeID, v, allowSlash: false) }
        if let v = try string(t, K.name) {
            guard !v.allSatisfy(\.isWhitespace), v.count <= 64 else { throw error(K.name, "must be 1 to 64 characters") }
            ha.name = v
        }
        if ha.mqtt == nil, !ha.username.isEmpty || !ha.password.isEmpty {
            throw error(ha.username.isEmpty ? K.password : K.username, "is set, but mqtt is not: set mqtt = \"mqtt://HOST:1883\" too (or remove it)")
        }
        // The conversation hand-off: Home Assistant's REST API, which takes nothing without a token.
        if let v = try string(t, K.url) {
            if let problem = Self.homeAssistantURLProblem(v) { throw error(K.url, problem) }
            ha.url = v
        }
        if let v = try string(t, K.token) {
            // It goes into a header line as it is: a space or a line break would end the header (and the error
            // must not repeat a secret).
            guard v.allSatisfy({ $0.asciiValue.map { (0x21...0x7E).contains($0) } ?? false }) else {
                throw error(K.token, "must be the long-lived access token as Home Assistant shows it, with no spaces, line breaks or characters beyond ASCII")
            }
            ha.token = v
        }
        if let v = try string(t, K.agentID) { ha.agentID = v }
        if ha.url.isEmpty, !ha.token.isEmpty || !ha.agentID.isEmpty {
            throw error(ha.token.isEmpty ? K.agentID : K.token, "is set, but url is not: set url = \"http://homeassistant.local:8123\" too (or remove it)")
        }
        if !ha.url.isEmpty, ha.token.isEmpty {
            throw error(K.url, "is set, but token is not: Home Assistant answers nothing without one (make a long-lived access token on your Home Assistant profile's Security tab)")
        }
    }

    /// Why `text` cannot be `[home_assistant] url`, or nil: http:// or https://, a host, and nothing that would put
    /// a secret where the address is shown or change the path the API is joined to.
    static func homeAssistantURLProblem(_ text: String) -> String? {
        guard !text.isEmpty else { return nil }
        let example = "e.g. \"http://homeassistant.local:8123\""
        guard text.hasPrefix("http://") || text.hasPrefix("https://") else {
            return "must be Home Assistant's address, http://HOST:PORT or https://HOST:PORT, \(example)"
        }
        let authority = text.drop { $0 != "/" }.dropFirst(2).prefix { $0 != "/" }
        guard !authority.contains("@") else { return "must not hold a user or password: set token instead" }
        guard !text.contains("?"), !text.contains("#") else { return "must have no query (?) or fragment (#), \(example)" }
        guard let host = URL(string: text)?.host, !host.isEmpty else {
            return "must be an http:// or https:// URL with a host, \(example), not \"\(text)\""
        }
        return nil
    }

    func readSetup(_ t: TOMLTable, into setup: inout SpeakerConfiguration.SetupSection) throws(ConfigError) {
        if let v = try string(t, SetupKey.listen) {
            if v.isEmpty { setup.listen = nil } else {
                switch ControlAddress.parse(v) {
                case .success(let address): setup.listen = address
                case .failure(let problem): throw error(SetupKey.listen, "\(problem)")
                }
            }
        }
    }

    func readScreen(_ t: TOMLTable, into screen: inout ScreenSettings) throws(ConfigError) {
        typealias K = ScreenKey
        if let v = try number(t, K.dimAfter) { screen.dimAfter = v }
        try readIntegers(t, into: &screen, [(K.dimLevel, \.dimLevel)])
        if let v = try string(t, K.backlight) {
            guard v.isEmpty || v.hasPrefix("/") else {
                throw error(K.backlight, "must be a backlight's directory, e.g. \"/sys/class/backlight/10-0045\" (ls /sys/class/backlight), or \"\"")
            }
            screen.backlight = v
        }
    }

    func readBoard(_ t: TOMLTable, into board: inout SpeakerConfiguration.BoardSection) throws(ConfigError) {
        typealias K = BoardKey
        if let v: BoardDriver = try choice(t, K.driver) { board.driver = v }
        if let v = try string(t, K.chip) {
            guard !v.isEmpty else { throw error(K.chip, "must name a GPIO chip, e.g. \"gpiochip0\"") }
            board.chip = v
        }
        if let v = try string(t, K.button) { board.button = v }
        if let v = try bool(t, K.buttonActiveLow) { board.buttonActiveLow = v }
        if let v = try string(t, K.muteSwitch) { board.muteSwitch = v }
        if let v = try bool(t, K.muteSwitchActiveLow) { board.muteSwitchActiveLow = v }
        if let v = try string(t, K.led) { board.led = v }
        if let value = t[K.leds.rawValue] {
            guard let leds = value.table else { throw error(K.leds, "must be a table, e.g. { listening = \"GPIO22\", searching = \"GPIO23\", speaking = \"GPIO24\" }") }
            var lines: [LEDRole: String] = [:]
            for name in leds.keys {
                // The status role is the single `led` key's, not one of three.
                guard let role = LEDRole(rawValue: name), role != .status, role != .ringPower else {
                    throw error(K.leds, "unknown LED \"\(name)\"; the roles are listening, searching, speaking")
                }
                guard let line = leds[name]?.string else { throw error(K.leds, "\(name) must be a line name or offset in quotes") }
                if !line.isEmpty { lines[role] = line }
            }
            board.leds = lines
        }
        if let v = try bool(t, K.ledsActiveLow) { board.ledsActiveLow = v }
        for (key, path) in [(K.debounceMS, \ButtonGestures.Settings.debounce), (.longPressMS, \.longPress),
                            (.doublePressMS, \.doublePressGap), (.setupHoldMS, \.setupHold)] {
            if let v = try integer(t, key) { board.gestures[keyPath: path] = .milliseconds(v) }
        }
        if board.gestures.setupHold <= board.gestures.longPress {
            let key = t[K.setupHoldMS.rawValue] != nil ? K.setupHoldMS : .longPressMS
            throw error(key, "the set-up hold (setup_hold_ms, \(Int(board.gestures.setupHold / .milliseconds(1))) ms) must be longer than the long press (long_press_ms, \(Int(board.gestures.longPress / .milliseconds(1))) ms)")
        }
        if let v: TalkMode = try choice(t, K.talkMode) { board.talkMode = v }
        try readIntegers(t, into: &board.ring, [(K.ringPixels, \.pixelCount), (.ringSPIBus, \.spiBus), (.ringChipSelect, \.chipSelect),
                                               (.ringSpeedHz, \.speedHz), (.ringBrightness, \.brightness)])
        if let v = try string(t, K.ringPower) {
            guard !v.contains(where: { $0 == " " || $0 == "\t" || $0 == "\"" }) else {
                throw error(K.ringPower, "must be a GPIO line name such as \"GPIO5\" (or empty: none), not \"\(v)\"")
            }
            board.ring.powerLine = v.isEmpty ? nil : v
        }
        if !board.led.isEmpty && t[K.leds.rawValue] == nil && t[K.led.rawValue] != nil { board.leds = [:] }
    }

    func readSpeech(_ t: TOMLTable, into speech: inout VoiceSettings) throws(ConfigError) {
        typealias K = SpeechKey
        if let v = try string(t, K.voice) {
            guard !v.isEmpty else { throw error(K.voice, "must name an espeak-ng voice, e.g. \"en-us\"") }
            speech.voice = v
        }
        try readIntegers(t, into: &speech, [(K.rate, \.rate), (.pitch, \.pitch), (.volume, \.volume), (.leadInMS, \.leadInMS)])
    }

    func readLogging(_ t: TOMLTable, into logging: inout SpeakerConfiguration.LoggingSection) throws(ConfigError) {
        if let v: Logger.Level = try choice(t, LoggingKey.level) { logging.level = v }
    }

    /// Reads integer keys of one table into a section: each key (its range from the key table) and where it goes.
    func readIntegers<Section, Key: ConfigKey>(_ t: TOMLTable, into section: inout Section,
                                              _ keys: [(Key, WritableKeyPath<Section, Int>)]) throws(ConfigError) {
        for (key, path) in keys {
            if let v = try integer(t, key) { section[keyPath: path] = v }
        }
    }

    /// A `.choice` key as one of an enum's cases (the key table lists the same cases: ConfigValueType.choice(of:)).
    func choice<Choice: RawRepresentable & CaseIterable, Key: ConfigKey>(_ t: TOMLTable, _ key: Key) throws(ConfigError) -> Choice?
    where Choice.RawValue == String {
        guard let v = try oneOf(t, key) else { return nil }
        guard let chosen = Choice(rawValue: v) else { throw error(key, "is \"\(v)\", which the speaker does not know") }
        return chosen
    }

    /// A `.choice` key's string, one of those the key table lists, or an error listing them all.
    func oneOf<Key: ConfigKey>(_ t: TOMLTable, _ key: Key) throws(ConfigError) -> String? {
        guard let v = try string(t, key) else { return nil }
        guard case .choice(let allowed) = key.spec.type else { return v }
        if allowed.contains(v) { return v }
        throw error(key, "must be \(Self.list(allowed)), not \"\(v)\"")
    }

    /// `"a" or "b"`, `"a", "b" or "c"`.
    static func list(_ names: [String]) -> String {
        let quoted = names.map { "\"\($0)\"" }
        guard let last = quoted.last, quoted.count > 1 else { return quoted.first ?? "" }
        return quoted.dropLast().joined(separator: ", ") + " or " + last
    }

    func bool<Key: ConfigKey>(_ t: TOMLTable, _ key: Key) throws(ConfigError) -> Bool? {
        guard let value = t[key.rawValue] else { return nil }
        guard let v = value.bool else { throw error(key, "must be true or false, not \(value.type)") }
        return v
    }

    func string<Key: ConfigKey>(_ t: TOMLTable, _ key: Key) throws(ConfigError) -> String? {
        guard let value = t[key.rawValue] else { return nil }
        guard let s = value.string else { throw error(key, "must be a string, not \(value.type)") }
        return s
    }

    /// An `.integer` key, in its range.
    func integer<Key: ConfigKey>(_ t: TOMLTable, _ key: Key) throws(ConfigError) -> Int? {
        guard let value = t[key.rawValue] else { return nil }
        guard let i = value.int else { throw error(key, "must be an integer, not \(value.type)") }
        if case .integer(let range, let unit) = key.spec.type, !range.contains(i) {
            throw error(key, range.upperBound == Int.max ? "must be \(range.lowerBound) or more, not \(i)"
                                                         : "must be \(range.lowerBound) to \(range.upperBound)\(unit), not \(i)")
        }
        return i
    }

    /// A `.number` or `.seconds` key, in its range.
    func number<Key: ConfigKey>(_ t: TOMLTable, _ key: Key) throws(ConfigError) -> Double? {
        guard let value = t[key.rawValue] else { return nil }
        let isSeconds = if case .seconds = key.spec.type { true } else { false }
        guard let d = value.double ?? value.int.map(Double.init) else {
            throw error(key, isSeconds ? "must be a number of seconds, not \(value.type)" : "must be a number, not \(value.type)")
        }
        switch key.spec.type {
        case .number(let range) where !range.contains(d):
            throw error(key, "must be between \(range.lowerBound) and \(range.upperBound), not \(d)")
        case .seconds(let range) where !range.contains(d):
            throw error(key, "must be \(range.lowerBound) to \(range.upperBound) seconds, not \(d)")
        default: return d
        }
    }

    /// `[[houndify.client_match]]`: each with `phrase` or `expression`, `response`, and `run` or `action`.
    func clientMatches(_ value: any TOMLValueConvertible) throws(ConfigError) -> [HoundifySettings.ClientMatch] {
        let table = "houndify.client_match"
        guard case .array(let items) = try json(value, HoundifyKey.table, HoundifyKey.clientMatch.rawValue) else {
            throw error(HoundifyKey.clientMatch, "must be tables: [[houndify.client_match]]")
        }
        var matches: [HoundifySettings.ClientMatch] = []
        for (number, item) in items.enumerated() {
            let n = "\(table) #\(number + 1)"
            guard let fields = item.objectValue else { throw error(HoundifyKey.clientMatch, "must be tables: [[houndify.client_match]]") }
            for key in fields.keys where !["phrase", "expression", "response", "run", "action", "home_assistant"].contains(key) {
                throw error(n, key, "unknown key; a phrase has phrase or expression, response, and run, action or home_assistant")
            }
            func text(_ key: String) throws(ConfigError) -> String? {
                guard let v = fields[key] else { return nil }
                guard let s = v.stringValue, !s.allSatisfy(\.isWhitespace) else { throw error(n, key, "must be a non-empty string") }
                return s
            }
            let expression: String
            switch (try text("phrase"), try text("expression")) {
            case (let phrase?, nil): expression = HoundifySettings.ClientMatch.expression(phrase: phrase)
            case (nil, let given?): expression = given
            default: throw error(n, nil, "needs a phrase (\"good night\") or an expression (Houndify's syntax), not both")
            }
            var toHomeAssistant = false
            if let v = fields["home_assistant"] {
                guard let flag = v.boolValue else { throw error(n, "home_assistant", "must be true or false") }
                toHomeAssistant = flag
            }
            let action: HoundifySettings.Action
            switch (try text("run"), try text("action"), toHomeAssistant) {
            case (let command?, nil, false): action = .run(command)
            case (nil, let name?, false):
                guard let builtIn = HoundifySettings.BuiltInAction(rawValue: name) else {
                    throw error(n, "action", "must be \(Self.list(HoundifySettings.BuiltInAction.allCases.map(\.rawValue))), not \"\(name)\"")
                }
                action = .builtIn(builtIn)
            case (nil, nil, true): action = .homeAssistant
            default: throw error(n, nil, "needs one of run (a command), action (\(HoundifySettings.BuiltInAction.allCases.map(\.rawValue).joined(separator: ", "))) or home_assistant = true")
            }
            matches.append(.init(expression: expression, response: try text("response") ?? "OK.", action: action))
        }
        return matches
    }

    func json(_ value: any TOMLValueConvertible, _ table: String, _ key: String) throws(ConfigError) -> JSONValue {
        switch value.type {
        case .string: return .string(value.string ?? "")
        case .int: return .int(Int64(value.int ?? 0))
        case .double:
            let d = value.double ?? 0
            // JSON has no NaN or infinity: sent, it would silently become null.
            guard d.isFinite else { throw error(table, key, "\(d) cannot be sent in RequestInfo: JSON has no NaN or infinity") }
            return .double(d)
        case .bool: return .bool(value.bool ?? false)
        case .array:
            var items: [JSONValue] = []
            for item in value.array ?? TOMLArray() { items.append(try json(item, table, key)) }
            return .array(items)
        case .table:
            var members: [String: JSONValue] = [:]
            if let t = value.table { for k in t.keys { members[k] = try json(t[k]!, table, "\(key).\(k)") } }
            return .object(members)
        default:
            throw error(table, key, "\(value.type) values cannot be sent in RequestInfo")
        }
    }
}

