public import FoundationEssentials
import Platform
import Glibc
import AudioCore
import HoundifyCore
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
        try load(text: path.map { p throws(ConfigError) in try readText(p) }, path: path, environment: environment)
    }

    /// As `load(path:)`, with the file's text given (setup mode's config, checked before it is saved: `onDisk`
    /// false, the file's mode is not looked at, since saving sets it).
    public static func load(text: String?, path: String?, onDisk: Bool = true,
                            environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigError) -> SpeakerConfiguration {
        var config = SpeakerConfiguration()
        if let path, let text {
            config = try parse(text: text, file: path)
            config.path = path
            if onDisk { try checkPermissions(path: path, config: &config) }
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
        try checkCredentials(config, file: path ?? "environment", keyFile: config.clientKeySource == "HOUNDIFY_CLIENT_KEY" ? "HOUNDIFY_CLIENT_KEY" : (path ?? "config"))
        return config
    }

    /// The credentials' form, which the signature depends on: no ';' in the client ID, the key base64url text.
    static func checkCredentials(_ config: SpeakerConfiguration, file: String, keyFile: String, lines: KeyLines? = nil) throws(ConfigError) {
        if config.houndify.clientID.contains(Character(";")) {
            throw ConfigError(file: file, line: lines?.line(table: "houndify", key: "client_id"), key: "[houndify] client_id", problem: "must not contain ';'")
        }
        if !config.houndify.clientKey.isEmpty, Base64URL.decode(config.houndify.clientKey) == nil {
            throw ConfigError(file: keyFile, line: lines?.line(table: "houndify", key: "client_key"), key: "[houndify] client_key",
                              problem: "is not base64url text (the dashboard's Client Key: 88 characters ending in ==)")
        }
    }

    /// Where the conversation is kept when the config does not say: the service's state directory (systemd sets
    /// STATE_DIRECTORY from the unit's StateDirectory=, a colon-separated list when there are several; the first is
    /// ours), else the user's, as the XDG base directory rules give it ($XDG_STATE_HOME, else ~/.local/state), so
    /// two `text` commands in a row continue one conversation.
    public static func stateDirectory(_ environment: [String: String]) -> String? {
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

    /// A file holding the client key, the broker's password or Home Assistant's token must not be readable by
    /// everyone: refuse, with the fix.
    static func checkPermissions(path: String, config: inout SpeakerConfiguration) throws(ConfigError) {
        let secret: (key: String, words: String)? = !config.houndify.clientKey.isEmpty ? ("[houndify] client_key", "the client key")
            : !config.homeAssistant.password.isEmpty ? ("[home_assistant] password", "the MQTT broker's password")
            : !config.homeAssistant.token.isEmpty ? ("[home_assistant] token", "Home Assistant's access token") : nil
        guard let secret, let mode = permissions(of: path) else { return }
        if mode & 0o007 != 0 {
            throw ConfigError(file: path, line: nil, key: nil, problem: "holds \(secret.key) but is readable by other users (mode "
                + String(cFormat: "%03o", mode) + "); run: chmod 600 \(path)")
        }
        if mode & 0o040 != 0 {
            config.warnings.append("\(path) holds \(secret.words) and is group-readable (mode \(String(cFormat: "%03o", mode))); chmod 600 is safer")
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
