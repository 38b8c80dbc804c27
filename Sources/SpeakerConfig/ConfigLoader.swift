public import FoundationEssentials
import JSONKit
import Platform
import Glibc
import Houndify
import Audio
import AudioCore
import BoardCore
import HotPhrase
import Logging
import SpeakerCore
import Speech
import TOMLKit

/// Reads and validates the TOML config. Every key is known: a misspelt key is an error with a suggestion,
/// a wrong type or value names the file, line and key.
public enum ConfigLoader {
    public static let systemPath = "/etc/hound-speaker/speaker.toml"
    public static let repositoryPath = "config/speaker.toml"

    /// `--config`, else /etc/hound-speaker/speaker.toml, else config/speaker.toml (the working copy).
    public static func resolvePath(explicit: String?, fileExists: (String) -> Bool = { FileManager.default.fileExists(atPath: $0) }) -> String? {
        if let explicit { return explicit }
        if fileExists(systemPath) { return systemPath }
        if fileExists(repositoryPath) { return repositoryPath }
        return nil
    }

    /// A config file's text. A file that is there but is not UTF-8 is told as such, with the line of the first bad
    /// byte, not as a file that cannot be read.
    static func readText(_ path: String) throws(ConfigError) -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot be read (check its owner and mode)" : "no such file"
            throw ConfigError(file: path, line: nil, key: nil, problem: reason)
        }
        return try text(of: [UInt8](data), file: path)
    }

    /// Config bytes as text, or the error naming the line and the first byte that is not UTF-8.
    static func text(of bytes: [UInt8], file path: String) throws(ConfigError) -> String {
        if let text = String(validating: bytes, as: UTF8.self) { return text }
        // The first byte that does not decode: the longest valid prefix ends just before it.
        var valid = 0
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        var offset = 0
        decoding: while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar):
                offset += UTF8.width(scalar)
                valid = offset
            case .emptyInput, .error: break decoding
            }
        }
        let line = bytes[..<valid].reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
        let bad = valid < bytes.count ? bytes[valid] : 0
        throw ConfigError(file: path, line: line, key: nil,
                          problem: "is not UTF-8 text (byte 0x\(String(bad, radix: 16, uppercase: true)) here); save it as UTF-8")
    }

    /// Loads `path` (or the defaults when nil) and applies the environment's credential overrides.
    public static func load(path: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigError) -> SpeakerConfiguration {
        var config = SpeakerConfiguration()
        if let path {
            config = try parse(text: try readText(path), file: path)
            config.path = path
            try checkPermissions(path: path, config: &config)
        }
        if let id = environment["HOUNDIFY_CLIENT_ID"], !id.isEmpty {
            config.houndify.clientID = id
            config.clientIDSource = "HOUNDIFY_CLIENT_ID"
        }
        if let key = environment["HOUNDIFY_CLIENT_KEY"], !key.isEmpty {
            config.houndify.clientKey = key
            config.clientKeySource = "HOUNDIFY_CLIENT_KEY"
        }
        if let directory = stateDirectory(environment) {
            if config.houndify.conversationStateFile == nil { config.houndify.conversationStateFile = "\(directory)/conversation.json" }
            if config.speaker.timersFile == nil { config.speaker.timersFile = "\(directory)/timers.json" }
            if config.speaker.muteFile == nil { config.speaker.muteFile = "\(directory)/muted" }
            if config.hotphrase.household.isEmpty { config.hotphrase.household = directory }
        }
        if config.houndify.clientID.contains(Character(";")) {
            throw ConfigError(file: path ?? "environment", line: nil, key: "[houndify] client_id", problem: "must not contain ';'")
        }
        if !config.houndify.clientKey.isEmpty, Base64URL.decode(config.houndify.clientKey) == nil {
            throw ConfigError(file: config.clientKeySource == "HOUNDIFY_CLIENT_KEY" ? "HOUNDIFY_CLIENT_KEY" : (path ?? "config"),
                              line: nil, key: "[houndify] client_key",
                              problem: "is not base64url text (the dashboard's Client Key: 88 characters ending in ==)")
        }
        return config
    }

    /// Where the conversation is kept when the config does not say: the service's state directory (systemd sets
    /// STATE_DIRECTORY from the unit's StateDirectory=, a colon-separated list when there are several; the first is
    /// ours), else the user's, as the XDG base directory rules give it ($XDG_STATE_HOME, else ~/.local/state), so
    /// two `text` commands in a row continue one conversation.
    static func stateDirectory(_ environment: [String: String]) -> String? {
        if let value = environment["STATE_DIRECTORY"], let first = value.split(separator: ":").first, first.hasPrefix("/") {
            return String(first)
        }
        if let xdg = environment["XDG_STATE_HOME"], xdg.hasPrefix("/") { return "\(xdg)/hound-speaker" }
        if let home = environment["HOME"], home.hasPrefix("/"), home != "/" { return "\(home)/.local/state/hound-speaker" }
        return nil
    }

    /// The permission bits of `path` (stat(2)), nil if it cannot be read.
    static func permissions(of path: String) -> Int? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return Int(info.st_mode & 0o7777)
    }

    /// A file holding the client key must not be readable by everyone: refuse, with the fix.
    static func checkPermissions(path: String, config: inout SpeakerConfiguration) throws(ConfigError) {
        guard !config.houndify.clientKey.isEmpty,
              let mode = permissions(of: path) else { return }
        if mode & 0o007 != 0 {
            throw ConfigError(file: path, line: nil, key: nil, problem: "holds [houndify] client_key but is readable by other users (mode "
                + String(cFormat: "%03o", mode) + "); run: chmod 600 \(path)")
        }
        if mode & 0o040 != 0 {
            config.warnings.append("\(path) holds the client key and is group-readable (mode \(String(cFormat: "%03o", mode))); chmod 600 is safer")
        }
    }

    /// A config file's bytes, as `load` reads them (UTF-8 first, then TOML, then every key).
    public static func parse(contents: [UInt8], file: String) throws(ConfigError) -> SpeakerConfiguration {
        try parse(text: try text(of: contents, file: file), file: file)
    }

    public static func parse(text: String, file: String) throws(ConfigError) -> SpeakerConfiguration {
        let table = try parseTOML(text, file: file)
        var base = SpeakerConfiguration()
        if let profile = table["board"]?.table?["profile"] {
            guard let name = profile.string else {
                throw ConfigError(file: file, line: KeyLines(text: text).line(table: "board", key: "profile"),
                                  key: "[board] profile", problem: "must be a string, not \(profile.type)")
            }
            if !name.isEmpty {
                base = try loadProfile(name, from: file, line: KeyLines(text: text).line(table: "board", key: "profile"))
            }
        }
        var reader = Reader(file: file, lines: KeyLines(text: text))
        return try reader.read(table, base: base)
    }

    /// The TOML document, or an error naming its line. The parser inside TOMLKit (toml++ 3) aborts the process
    /// on some malformed input instead of reporting it (Tests/fuzz found `[)` and `x = 1979-05-27T?`): a typo would
    /// crash every command and make systemd restart the service for ever. So the text is parsed first in a child
    /// process (ParserProbe.swift): if the parser dies there, the line it died on is named and this process never
    /// runs it.
    static func parseTOML(_ text: String, file: String) throws(ConfigError) -> TOMLTable {
        if let line = ParserProbe.lineThatCrashesTheParser(text) {
            throw ConfigError(file: file, line: line, key: nil,
                              problem: "not valid TOML: the TOML parser cannot read this line (check its quotes, dates and brackets)")
        }
        do { return try TOMLTable(string: text) } catch let error as TOMLParseError {
            throw ConfigError(file: file, line: error.source.begin.line, key: nil, problem: "not valid TOML: \(error.description)")
        } catch {
            throw ConfigError(file: file, line: nil, key: nil, problem: "not valid TOML: \(error)")
        }
    }

    /// Where board profiles are looked for, first match wins: `HOUND_SPEAKER_BOARD_PATH` first, then the owner's
    /// own in /etc/hound-speaker/board, then the shipped ones (the rule is ShippedFiles's, in Platform).
    public static var profileDirectories: [String] { ShippedFiles.directories(.boards) }

    public static func availableProfiles() -> [String] {
        var names = Set<String>()
        for dir in profileDirectories {
            for file in (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [] where file.hasSuffix(".toml") {
                names.insert(String(file.dropLast(5)))
            }
        }
        return names.sorted()
    }

    static func loadProfile(_ name: String, from file: String, line: Int?) throws(ConfigError) -> SpeakerConfiguration {
        guard !name.contains(Character("/")), let path = profileDirectories.map({ "\($0)/\(name).toml" }).first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            let known = availableProfiles()
            throw ConfigError(file: file, line: line, key: "[board] profile",
                              problem: "no board profile \"\(name)\" in \(profileDirectories.joined(separator: ", "))"
                                  + (known.isEmpty ? "" : "; known: \(known.joined(separator: ", "))"))
        }
        let text = try readText(path)
        let table = try parseTOML(text, file: path)
        if table["board"]?.table?["profile"] != nil {
            throw ConfigError(file: path, line: KeyLines(text: text).line(table: "board", key: "profile"), key: "[board] profile",
                              problem: "a profile cannot name another profile")
        }
        var reader = Reader(file: path, lines: KeyLines(text: text))
        var config = try reader.read(table, onlyTables: Reader.profileTables)
        config.board.profile = name
        return config
    }
}

/// Finds the line of `[table] key` for error messages. TOMLKit keeps no source positions for values, so the
/// text is scanned for table headers and `key =` lines; only messages depend on it, never values.
struct KeyLines {
    private var lines: [String: Int] = [:]

    init(text: String) {
        var table = ""
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = raw.trimmed(.whitespaces)
            if line.hasPrefix("[") {
                let name = line.trimmed(TrimmedCharacters(charactersIn: "[]")).split(separator: "]").first.map(String.init) ?? ""
                table = name.trimmed(TrimmedCharacters(charactersIn: "[] "))
                lines[table] = lines[table] ?? index + 1
            } else if let eq = line.firstIndex(of: "="), !line.hasPrefix("#") {
                let key = line[..<eq].trimmed(.whitespaces).trimmed(TrimmedCharacters(charactersIn: "\"'"))
                let path = table.isEmpty ? key : "\(table).\(key)"
                lines[path] = lines[path] ?? index + 1
            }
        }
    }

    func line(table: String, key: String?) -> Int? {
        if let key {
            // A value inside an inline table ("x.a" of x = { a = 1 }) is on the line of its outer key.
            let outer = key.split(separator: ".").first.map(String.init) ?? key
            return lines[table.isEmpty ? key : "\(table).\(key)"] ?? lines[table.isEmpty ? outer : "\(table).\(outer)"] ?? lines[table]
        }
        return lines[table]
    }
}

struct Reader {
    let file: String
    let lines: KeyLines

    static let schema: [String: [String]] = [
        "houndify": ["client_id", "client_key", "endpoint", "user_id", "device_id", "connect_timeout", "response_timeout",
                     "audio_format", "unit_preference", "conversation_state_file", "request_info", "answer_length",
                     "supported_features", "voice", "client_match"],
        "location": ["latitude", "longitude", "accuracy", "timezone"],
        "audio": ["input", "output", "input_rate", "input_channels", "input_channel", "input_pacing", "volume", "mixer_control",
                  "earcons", "echo_cancel", "echo_delay_ms", "echo_tail_ms"],
        "listening": ["end_of_speech", "short_silence_ms", "long_silence_ms", "no_speech_timeout_ms", "max_length_ms"],
        "serve": ["port", "transcript"],
        "control": ["listen", "token"],
        "screen": ["dim_after", "dim_level", "backlight"],
        "hotphrase": ["enabled", "model", "sensitivity", "refractory_ms", "barge_in_sensitivity", "household", "learn_from_answers"],
        "logging": ["level"],
        "speaker": ["speech", "state_hook", "recording_limit_ms", "searching_limit_ms", "speaking_limit_ms", "ringing_limit_ms",
                    "timers_file", "mute_file", "follow_up"],
        "speech": ["voice", "rate", "pitch", "volume", "lead_in_ms"],
        "board": ["profile", "driver", "chip", "button", "button_active_low", "led", "leds", "leds_active_low", "mute_switch", "mute_switch_active_low",
                  "debounce_ms", "long_press_ms", "double_press_ms", "setup_hold_ms", "talk_mode"],
    ]
    /// What a board profile may set.
    static let profileTables: Set<String> = ["board", "audio"]

    func error(_ table: String, _ key: String?, _ problem: String) -> ConfigError {
        let name = key.map { "[\(table)] \($0)" } ?? "[\(table)]"
        return ConfigError(file: file, line: lines.line(table: table, key: key), key: table.isEmpty ? key : name, problem: problem)
    }

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

    mutating func read(_ root: TOMLTable, base: SpeakerConfiguration = SpeakerConfiguration(),
                       onlyTables: Set<String>? = nil) throws(ConfigError) -> SpeakerConfiguration {
        var config = base
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
        if let t = root["houndify"]?.table {
            let h = "houndify"
            if let v = try string(t, h, "client_id") { config.houndify.clientID = v; config.clientIDSource = file }
            if let v = try string(t, h, "client_key") { config.houndify.clientKey = v; config.clientKeySource = file }
            if let v = try string(t, h, "endpoint") {
                guard v.hasPrefix("http://") || v.hasPrefix("https://"), URL(string: v)?.host != nil else {
                    throw error(h, "endpoint", "must be an http:// or https:// URL, not \"\(v)\"")
                }
                config.houndify.endpoint = v
            }
            if let v = try string(t, h, "user_id") {
                guard !v.isEmpty, !v.contains(Character(";")) else { throw error(h, "user_id", "must be non-empty and must not contain ';'") }
                config.houndify.userID = v
            }
            if let v = try string(t, h, "device_id") { config.houndify.deviceID = v }
            // Bounded, not just positive: 1e16 s once overflowed the milliseconds and crashed every command, and a
            // tiny value either rounded to 0 ms (which libcurl reads as its 300 s default) or failed every query.
            if let v = try seconds(t, h, "connect_timeout", range: HoundifySettingsLimits.connectTimeout) { config.houndify.connectTimeout = v }
            if let v = try seconds(t, h, "response_timeout", range: HoundifySettingsLimits.responseTimeout) { config.houndify.responseTimeout = v }
            if let v = try string(t, h, "audio_format") {
                guard let format = AudioUploadFormat(rawValue: v) else { throw error(h, "audio_format", "must be \"pcm\" or \"speex\", not \"\(v)\"") }
                config.houndify.audioFormat = format
            }
            if let v = try string(t, h, "unit_preference") {
                guard v == "US" || v == "METRIC" else { throw error(h, "unit_preference", "must be \"US\" or \"METRIC\", not \"\(v)\"") }
                config.houndify.unitPreference = v
            }
            if let v = try string(t, h, "conversation_state_file") { config.houndify.conversationStateFile = v }
            if let value = t["request_info"] {
                guard let extra = value.table else { throw error(h, "request_info", "must be a table ([houndify.request_info])") }
                for key in extra.keys { config.houndify.requestInfo[key] = try json(extra[key]!, "houndify.request_info", key) }
            }
            if let v = try string(t, h, "answer_length") { config.houndify.answerLength = try choice(v, h, "answer_length") }
            if let value = t["supported_features"] {
                guard case .array(let items) = try json(value, h, "supported_features"),
                      let names = Optional(items.compactMap(\.stringValue)), names.count == items.count else {
                    throw error(h, "supported_features", "must be a list of strings, e.g. [\"Timer\"]")
                }
                config.houndify.supportedFeatures = names
            }
            if let value = t["client_match"] {
                config.houndify.clientMatches = try clientMatches(value)
            }
            if let v = try string(t, h, "voice") {
                guard !v.contains(where: { $0.isWhitespace || $0 == "\"" }) else { throw error(h, "voice", "must be one voice name with no spaces, not \"\(v)\"") }
                config.houndify.voice = v
            }
        }
        if let t = root["location"]?.table {
            let l = "location"
            config.location.latitude = try number(t, l, "latitude", range: -90...90)
            config.location.longitude = try number(t, l, "longitude", range: -180...180)
            config.location.accuracy = try number(t, l, "accuracy", range: 0...40_000_000)
            if (config.location.latitude == nil) != (config.location.longitude == nil) {
                throw error(l, config.location.latitude == nil ? "longitude" : "latitude", "latitude and longitude go together: set both or neither")
            }
            if let v = try string(t, l, "timezone") {
                guard v.isEmpty || SystemTimeZone.isKnown(v) else {
                    throw error(l, "timezone", "unknown time zone \"\(v)\" (use an IANA name such as \"Europe/Paris\")")
                }
                config.location.timezone = v
            }
        }
        if let t = root["audio"]?.table {
            for key in ["input", "output"] {
                if let v = try string(t, "audio", key) {
                    guard !v.trimmed(.whitespaces).isEmpty else { throw error("audio", key, "must name an ALSA PCM, e.g. \"default\"") }
                    if key == "input" { config.audio.capture.device = v } else { config.audio.output = v }
                }
            }
            if let v = try integer(t, "audio", "input_rate") {
                guard (8000...192_000).contains(v) else { throw error("audio", "input_rate", "must be 8000 to 192000 Hz, not \(v)") }
                config.audio.capture.rate = v
            }
            if let v = try integer(t, "audio", "input_channels") {
                guard (1...16).contains(v) else { throw error("audio", "input_channels", "must be 1 to 16, not \(v)") }
                config.audio.capture.channels = v
            }
            if let v = try integer(t, "audio", "input_channel") {
                guard v >= 0 else { throw error("audio", "input_channel", "must be 0 or more, not \(v)") }
                config.audio.capture.channel = v
            }
            if config.audio.capture.channel >= config.audio.capture.channels {
                throw error("audio", "input_channel", "is \(config.audio.capture.channel) but only \(config.audio.capture.channels) channel(s) are captured (channels count from 0)")
            }
            if let v = try string(t, "audio", "input_pacing") {
                config.audio.capture.pacing = try choice(v, "audio", "input_pacing")
            }
            if let v = try integer(t, "audio", "volume") {
                guard (0...100).contains(v) else { throw error("audio", "volume", "must be 0 to 100, not \(v)") }
                config.audio.volume = v
            }
            if let v = try string(t, "audio", "mixer_control") { config.audio.mixerControl = v }
            if let v = try bool(t, "audio", "echo_cancel") { config.audio.echo.enabled = v }
            try readIntegers(t, "audio", into: &config.audio.echo, unit: " ms", [
                ("echo_delay_ms", EchoCancelSettings.delayRange, \.delayMS), ("echo_tail_ms", EchoCancelSettings.tailRange, \.tailMS)])
            if let value = t["earcons"] {
                guard let table = value.table else { throw error("audio", "earcons", "must be a table, e.g. { start_listening = \"/path/start.wav\" }") }
                for name in table.keys {
                    guard let earcon = Earcon(rawValue: name) else {
                        throw error("audio", "earcons", "unknown earcon \"\(name)\"; they are \(Earcon.allCases.map(\.rawValue).joined(separator: ", "))")
                    }
                    guard let path = table[name]?.string else { throw error("audio", "earcons", "\(name) must be a file path in quotes") }
                    if !path.isEmpty { config.audio.earcons[earcon] = path }
                }
            }
        }
        if let t = root["speaker"]?.table {
            if let v = try bool(t, "speaker", "speech") { config.speaker.machine.enableSpeech = v }
            if let v = try bool(t, "speaker", "follow_up") { config.speaker.machine.followUp = v }
            if let v = try string(t, "speaker", "state_hook") { config.speaker.stateHook = v }
            if let v = try string(t, "speaker", "timers_file") { config.speaker.timersFile = v }
            if let v = try string(t, "speaker", "mute_file") { config.speaker.muteFile = v }
            try readIntegers(t, "speaker", into: &config.speaker.machine, unit: " ms", [
                ("recording_limit_ms", 2000...120_000, \.recordingLimitMS), ("searching_limit_ms", 2000...120_000, \.searchingLimitMS),
                ("speaking_limit_ms", 2000...600_000, \.speakingLimitMS), ("ringing_limit_ms", 5000...3_600_000, \.ringingLimitMS)])
        }
        if let t = root["listening"]?.table {
            if let v = try string(t, "listening", "end_of_speech") { config.listening.mode = try choice(v, "listening", "end_of_speech") }
            try readIntegers(t, "listening", into: &config.listening, unit: " ms", [
                ("short_silence_ms", 200...3000, \.shortSilenceMS), ("long_silence_ms", 200...5000, \.longSilenceMS),
                ("no_speech_timeout_ms", 1000...30_000, \.noSpeechTimeoutMS), ("max_length_ms", 2000...60_000, \.maxLengthMS)])
        }
        if let t = root["hotphrase"]?.table {
            if let v = try bool(t, "hotphrase", "enabled") { config.hotphrase.enabled = v }
            if let v = try string(t, "hotphrase", "model") { config.hotphrase.model = v }
            if let v = try string(t, "hotphrase", "household") { config.hotphrase.household = v }
            if let v = try number(t, "hotphrase", "sensitivity", range: 0...1) { config.hotphrase.sensitivity = v }
            if let v = try number(t, "hotphrase", "barge_in_sensitivity", range: 0...1) { config.hotphrase.bargeInSensitivity = v }
            if let v = try bool(t, "hotphrase", "learn_from_answers") { config.hotphrase.learnFromAnswers = v }
            try readIntegers(t, "hotphrase", into: &config.hotphrase, unit: " ms", [("refractory_ms", 0...10_000, \.refractoryMS)])
        }
        if let t = root["serve"]?.table {
            if let v = try integer(t, "serve", "port") {
                guard (0...65535).contains(v) else { throw error("serve", "port", "must be 0 to 65535, not \(v)") }
                config.serve.port = v
            }
            if let v = try string(t, "serve", "transcript") { config.serve.transcript = v }
        }
        if let t = root["control"]?.table {
            if let v = try string(t, "control", "token") {
                // Typed by hand into a phone or a script: long enough not to be guessed, nothing that needs quoting.
                guard v.isEmpty || (v.count >= 16 && v.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.~".contains($0)) })) else {
                    throw error("control", "token", "must be at least 16 letters, digits or - _ . ~ (e.g. from `openssl rand -hex 16`)")
                }
                config.control.token = v
            }
            if let v = try string(t, "control", "listen") {
                if v.isEmpty { config.control.listen = nil } else {
                    switch ControlAddress.parse(v) {
                    case .success(let address): config.control.listen = address
                    case .failure(let problem): throw error("control", "listen", "\(problem)")
                    }
                }
            }
            if let address = config.control.listen, !address.isLoopback, config.control.token.isEmpty {
                throw error("control", "listen", "\(address) can be reached from other machines: set [control] token too, or listen on 127.0.0.1")
            }
        }
        if let t = root["screen"]?.table {
            if let v = try seconds(t, "screen", "dim_after", range: 0...86_400) { config.screen.dimAfter = v }
            if let v = try integer(t, "screen", "dim_level") {
                // 0 would be a screen switched off: it would show nothing of a timer across the room.
                guard (1...100).contains(v) else { throw error("screen", "dim_level", "must be 1 to 100 (percent of full brightness), not \(v)") }
                config.screen.dimLevel = v
            }
            if let v = try string(t, "screen", "backlight") {
                guard v.isEmpty || v.hasPrefix("/") else {
                    throw error("screen", "backlight", "must be a backlight's directory, e.g. \"/sys/class/backlight/10-0045\" (ls /sys/class/backlight), or \"\"")
                }
                config.screen.backlight = v
            }
        }
        if let t = root["board"]?.table { try readBoard(t, into: &config.board) }
        if let t = root["speech"]?.table {
            if let v = try string(t, "speech", "voice") {
                guard !v.isEmpty else { throw error("speech", "voice", "must name an espeak-ng voice, e.g. \"en-us\"") }
                config.speech.voice = v
            }
            try readIntegers(t, "speech", into: &config.speech, unit: "", [
                ("rate", 80...450, \.rate), ("pitch", 0...100, \.pitch), ("volume", 0...200, \.volume), ("lead_in_ms", 0...1000, \.leadInMS)])
        }
        if let t = root["logging"]?.table, let v = try string(t, "logging", "level") { config.logging.level = try choice(v, "logging", "level") }
        return config
    }

    func readBoard(_ t: TOMLTable, into board: inout SpeakerConfiguration.BoardSection) throws(ConfigError) {
        let b = "board"
        if let v = try string(t, b, "driver") {
            board.driver = try choice(v, b, "driver")
        }
        if let v = try string(t, b, "chip") {
            guard !v.isEmpty else { throw error(b, "chip", "must name a GPIO chip, e.g. \"gpiochip0\"") }
            board.chip = v
        }
        if let v = try string(t, b, "button") { board.button = v }
        if let v = try bool(t, b, "button_active_low") { board.buttonActiveLow = v }
        if let v = try string(t, b, "mute_switch") { board.muteSwitch = v }
        if let v = try bool(t, b, "mute_switch_active_low") { board.muteSwitchActiveLow = v }
        if let v = try string(t, b, "led") { board.led = v }
        if let value = t["leds"] {
            guard let leds = value.table else { throw error(b, "leds", "must be a table, e.g. { listening = \"GPIO22\", searching = \"GPIO23\", speaking = \"GPIO24\" }") }
            var lines: [LEDRole: String] = [:]
            for name in leds.keys {
                // The status role is the single `led` key's, not one of three.
                guard let role = LEDRole(rawValue: name), role != .status else {
                    throw error(b, "leds", "unknown LED \"\(name)\"; the roles are listening, searching, speaking")
                }
                guard let line = leds[name]?.string else { throw error(b, "leds", "\(name) must be a line name or offset in quotes") }
                if !line.isEmpty { lines[role] = line }
            }
            board.leds = lines
        }
        if let v = try bool(t, b, "leds_active_low") { board.ledsActiveLow = v }
        for (key, range, path) in [("debounce_ms", 0...500, \ButtonGestures.Settings.debounce), ("long_press_ms", 200...10_000, \.longPress),
                                   ("double_press_ms", 0...2_000, \.doublePressGap), ("setup_hold_ms", 2_000...30_000, \.setupHold)] {
            guard let v = try integer(t, b, key) else { continue }
            guard range.contains(v) else { throw error(b, key, "must be \(range.lowerBound) to \(range.upperBound) ms, not \(v)") }
            board.gestures[keyPath: path] = .milliseconds(v)
        }
        if board.gestures.setupHold <= board.gestures.longPress {
            let key = t["setup_hold_ms"] != nil ? "setup_hold_ms" : "long_press_ms"
            throw error(b, key, "the set-up hold (setup_hold_ms, \(Int(board.gestures.setupHold / .milliseconds(1))) ms) must be longer than the long press (long_press_ms, \(Int(board.gestures.longPress / .milliseconds(1))) ms)")
        }
        if let v = try string(t, b, "talk_mode") { board.talkMode = try choice(v, b, "talk_mode") }
        if !board.led.isEmpty && t["leds"] == nil && t["led"] != nil { board.leds = [:] }
    }

    /// Reads bounded integer keys of one table into a section: each key, its allowed range, where it goes.
    func readIntegers<Section>(_ t: TOMLTable, _ table: String, into section: inout Section, unit: String,
                               _ keys: [(String, ClosedRange<Int>, WritableKeyPath<Section, Int>)]) throws(ConfigError) {
        for (key, range, path) in keys {
            guard let v = try integer(t, table, key) else { continue }
            guard range.contains(v) else { throw error(table, key, "must be \(range.lowerBound) to \(range.upperBound)\(unit), not \(v)") }
            section[keyPath: path] = v
        }
    }

    /// A string key whose values are an enum's cases: the case, or an error listing them all.
    func choice<Choice: RawRepresentable & CaseIterable>(_ value: String, _ table: String, _ key: String) throws(ConfigError) -> Choice
    where Choice.RawValue == String {
        if let chosen = Choice(rawValue: value) { return chosen }
        let names = Choice.allCases.map { "\"\($0.rawValue)\"" }
        let list = names.count == 2 ? names.joined(separator: " or ") : names.dropLast().joined(separator: ", ") + " or " + names.last!
        throw error(table, key, "must be \(list), not \"\(value)\"")
    }

    func bool(_ t: TOMLTable, _ table: String, _ key: String) throws(ConfigError) -> Bool? {
        guard let value = t[key] else { return nil }
        guard let v = value.bool else { throw error(table, key, "must be true or false, not \(value.type)") }
        return v
    }

    func string(_ t: TOMLTable, _ table: String, _ key: String) throws(ConfigError) -> String? {
        guard let value = t[key] else { return nil }
        guard let s = value.string else { throw error(table, key, "must be a string, not \(value.type)") }
        return s
    }

    func integer(_ t: TOMLTable, _ table: String, _ key: String) throws(ConfigError) -> Int? {
        guard let value = t[key] else { return nil }
        guard let i = value.int else { throw error(table, key, "must be an integer, not \(value.type)") }
        return i
    }

    func number(_ t: TOMLTable, _ table: String, _ key: String, range: ClosedRange<Double>) throws(ConfigError) -> Double? {
        guard let value = t[key] else { return nil }
        guard let d = value.double ?? value.int.map(Double.init) else { throw error(table, key, "must be a number, not \(value.type)") }
        guard range.contains(d) else { throw error(table, key, "must be between \(range.lowerBound) and \(range.upperBound), not \(d)") }
        return d
    }

    func seconds(_ t: TOMLTable, _ table: String, _ key: String, range: ClosedRange<Double>) throws(ConfigError) -> Double? {
        guard let value = t[key] else { return nil }
        guard let d = value.double ?? value.int.map(Double.init) else { throw error(table, key, "must be a number of seconds, not \(value.type)") }
        guard range.contains(d) else {
            throw error(table, key, "must be \(range.lowerBound) to \(range.upperBound) seconds, not \(d)")
        }
        return d
    }

    /// `[[houndify.client_match]]`: each with `phrase` or `expression`, `response`, and `run` or `action`.
    func clientMatches(_ value: any TOMLValueConvertible) throws(ConfigError) -> [SpeakerConfiguration.ClientMatchSetting] {
        let table = "houndify.client_match"
        guard case .array(let items) = try json(value, "houndify", "client_match") else {
            throw error("houndify", "client_match", "must be tables: [[houndify.client_match]]")
        }
        var matches: [SpeakerConfiguration.ClientMatchSetting] = []
        for (number, item) in items.enumerated() {
            let n = "\(table) #\(number + 1)"
            guard let fields = item.objectValue else { throw error("houndify", "client_match", "must be tables: [[houndify.client_match]]") }
            for key in fields.keys where !["phrase", "expression", "response", "run", "action"].contains(key) {
                throw error(n, key, "unknown key; a phrase has phrase or expression, response, and run or action")
            }
            func text(_ key: String) throws(ConfigError) -> String? {
                guard let v = fields[key] else { return nil }
                guard let s = v.stringValue, !s.allSatisfy(\.isWhitespace) else { throw error(n, key, "must be a non-empty string") }
                return s
            }
            let expression: String
            switch (try text("phrase"), try text("expression")) {
            case (let phrase?, nil): expression = SpeakerConfiguration.ClientMatchSetting.expression(phrase: phrase)
            case (nil, let given?): expression = given
            default: throw error(n, nil, "needs a phrase (\"good night\") or an expression (Houndify's syntax), not both")
            }
            let action: SpeakerConfiguration.ClientMatchAction
            switch (try text("run"), try text("action")) {
            case (let command?, nil): action = .run(command)
            case (nil, let name?): action = .builtIn(try choice(name, n, "action"))
            default: throw error(n, nil, "needs run (a command) or action (\(SpeakerConfiguration.BuiltInAction.allCases.map(\.rawValue).joined(separator: ", "))), not both")
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

/// The allowed range of the `[houndify]` timeouts, in seconds.
public enum HoundifySettingsLimits {
    public static let connectTimeout: ClosedRange<Double> = 0.1...120
    public static let responseTimeout: ClosedRange<Double> = 1...300
}
