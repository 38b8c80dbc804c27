import Glibc
import Platform
import TOMLKit

/// Settings from the SD card's boot partition (`hound-speaker setup --import FILE`): the card's file is checked as a
/// config of its own, its keys are written into the speaker's config line by line (the owner's comments and layout
/// stay), and then the card's file is wiped and removed, because the card is FAT and anyone can read it. A file that
/// is refused changes nothing and stays on the card, so its owner can see what was wrong.
public enum SettingsImport {
    /// The largest card file read: a config is a few kilobytes.
    public static let sizeLimit = 256 * 1024

    public struct Merged: Equatable, Sendable {
        /// The config's new text.
        public var text: String
        /// What was taken, as `[table] key`, in the card's order.
        public var keys: [String]
    }

    /// What an import did.
    public enum Outcome: Equatable, Sendable {
        /// No file on the card.
        case nothing
        /// The keys taken into `config`; the card's file is gone.
        case imported(keys: [String], config: String)
    }

    public enum Failure: Error, CustomStringConvertible, Equatable {
        /// The card's file (or the merge) is wrong: nothing was changed, the file stays.
        case refused(ConfigError)
        /// A file could not be read or written; `saved` when the config already holds the card's settings.
        case io(String, saved: Bool)

        public var description: String {
            switch self {
            case .refused(let error): "\(error)"
            case .io(let problem, _): problem
            }
        }
    }

    /// The card's text, checked on its own and merged into `config` (the config's text, "" for none).
    public static func merge(card: String, cardFile: String, into config: String, configFile: String) throws(ConfigError) -> Merged {
        // The card's TOML and its tables and keys on their own, so that these errors name the card's file and line.
        let lines = KeyLines(text: card)
        let cardTable = try ConfigLoader.parseTOML(card, file: cardFile)
        try Reader(file: cardFile, lines: lines).checkKeys(cardTable, onlyTables: nil)
        let expected = try ConfigLoader.parseTOML(config, file: configFile)
        var edited = ConfigText(config)
        var keys: [String] = []
        for table in cardTable.keys {
            guard let values = cardTable[table]?.table else { continue }  // the check above: every top-level key is a table
            for key in values.keys {
                guard let value = values[key]?.tomlValue else { continue }
                // A table value is written inline on the key's line ([houndify] request_info = { ... }).
                value.table?.inline = true
                let single = TOMLTable()
                single[key] = value
                let assignment = single.convert(to: .toml, options: [.allowUnicodeStrings]).trimmed()
                guard !assignment.isEmpty, !assignment.contains(Character("\n")) else {
                    throw ConfigError(file: cardFile, line: lines.line(table: table, key: key), key: "[\(table)] \(key)",
                                      problem: "cannot be written on one line of \(configFile); set it there by hand")
                }
                edited.set(table: table, key: key, assignment: assignment)
                if expected[table]?.table == nil { expected[table] = TOMLTable() }
                expected[table]?.table?[key] = value
                keys.append("[\(table)] \(key)")
            }
        }
        // The merge is by lines: the result must read as the config with exactly the card's values set, or nothing
        // is written (a value in the config that spans lines, or a table the config writes as [[...]] or dotted keys).
        let text = edited.text
        let merged: TOMLTable
        do { merged = try ConfigLoader.parseTOML(text, file: configFile) } catch {
            throw ConfigError(file: configFile, line: nil, key: nil,
                              problem: "the settings of \(cardFile) cannot be merged into it line by line (\(error.problem)); set them there by hand")
        }
        guard merged == expected else {
            throw ConfigError(file: configFile, line: nil, key: nil,
                              problem: "the settings of \(cardFile) cannot be merged into it line by line (a value there spans lines, or a table is written another way); set them there by hand")
        }
        // The values, checked in the whole as `run` will read it (some rules join keys: latitude and longitude go
        // together). A problem with one of the card's keys names the card's line; any other, the config.
        do throws(ConfigError) {
            let whole = try ConfigLoader.parse(text: text, file: configFile)
            try ConfigLoader.checkCredentials(whole, file: configFile, keyFile: configFile)
        } catch {
            if let key = error.key, keys.contains(key) {
                let parts = key.dropFirst().split(separator: "] ", maxSplits: 1).map(String.init)
                throw ConfigError(file: cardFile, line: parts.count == 2 ? lines.line(table: parts[0], key: parts[1]) : nil, key: key, problem: error.problem)
            }
            throw ConfigError(file: configFile, line: nil, key: error.key, problem: "\(error.problem) (with the settings of \(cardFile) merged in)")
        }
        return Merged(text: text, keys: keys)
    }

    /// Takes `card` into the config at `configPath`: checks it, writes the config (mode 0600, the old file's owner
    /// kept), then wipes and removes the card's file. Holds the config's lock, as every writer of it does.
    public static func run(card: String, configPath: String) throws(Failure) -> Outcome {
        let cardBytes: [UInt8]
        switch AtomicFile.read(card, limit: sizeLimit) {
        case .none: return .nothing
        case .unreadable(let reason): throw .io("cannot read \(card): \(reason)", saved: false)
        case .bytes(let bytes):
            guard bytes.count <= sizeLimit else {
                throw .refused(ConfigError(file: card, line: nil, key: nil, problem: "is larger than \(sizeLimit / 1024) kB; a settings file is a few lines"))
            }
            cardBytes = bytes
        }
        let cardText: String
        do throws(ConfigError) { cardText = try ConfigLoader.text(of: cardBytes, file: card) } catch { throw .refused(error) }
        let keys = try mergeIntoFile(cardText, source: card, configPath: configPath)
        if let problem = wipe(card) { throw .io("\(configPath) now holds the settings, but \(card) is still on the card: \(problem); delete it, since anyone can read the card", saved: true) }
        return .imported(keys: keys, config: configPath)
    }

    /// A value to save (the setup page's).
    public enum Value: Sendable, Equatable {
        case string(String)
        case number(Double)
    }

    public typealias Setting = (table: String, key: String, value: Value)

    /// The config's text as it would be with `values` (`[table] key` each) merged in, checked as a card's would be
    /// (`source` names them in errors: "the setup page"); nothing is written.
    public static func preview(_ values: [Setting], source: String, configPath: String) throws(Failure) -> String {
        let configText: String
        switch AtomicFile.read(configPath) {
        case .none: configText = ""
        case .unreadable(let reason): throw .io("cannot read \(configPath): \(reason)", saved: false)
        case .bytes(let bytes):
            do throws(ConfigError) { configText = try ConfigLoader.text(of: bytes, file: configPath) } catch { throw .refused(error) }
        }
        do throws(ConfigError) {
            return try merge(card: text(of: values), cardFile: source, into: configText, configFile: configPath).text
        } catch { throw .refused(error) }
    }

    /// Saves `values` into the config at `configPath`, as `preview` merges them, under the config's lock.
    public static func save(_ values: [Setting], source: String, configPath: String) throws(Failure) {
        _ = try mergeIntoFile(text(of: values), source: source, configPath: configPath)
    }

    /// The values as a TOML document.
    static func text(of values: [Setting]) -> String {
        let document = TOMLTable()
        for (table, key, value) in values {
            if document[table]?.table == nil { document[table] = TOMLTable() }
            switch value {
            case .string(let text): document[table]?.table?[key] = text
            case .number(let number): document[table]?.table?[key] = number
            }
        }
        return document.convert(to: .toml, options: [.allowUnicodeStrings])
    }

    /// `text` merged into the config at `configPath` under its lock, and written (0600, the old file's owner).
    static func mergeIntoFile(_ cardText: String, source card: String, configPath: String) throws(Failure) -> [String] {
        do {
            return try AtomicFile.whileLocked(configPath) { () throws -> [String] in
                var configText = ""
                var owner: (user: UInt32, group: UInt32)?
                switch AtomicFile.read(configPath) {
                case .none: break
                case .unreadable(let reason): throw Failure.io("cannot read \(configPath): \(reason)", saved: false)
                case .bytes(let bytes):
                    do throws(ConfigError) { configText = try ConfigLoader.text(of: bytes, file: configPath) } catch { throw Failure.refused(error) }
                    var info = stat()
                    if stat(configPath, &info) == 0 { owner = (UInt32(info.st_uid), UInt32(info.st_gid)) }
                }
                let merged: Merged
                do throws(ConfigError) { merged = try merge(card: cardText, cardFile: card, into: configText, configFile: configPath) } catch {
                    throw Failure.refused(error)
                }
                do { try AtomicFile.write(Array(merged.text.utf8), to: configPath, mode: 0o600, owner: owner) } catch {
                    throw Failure.io("\(error)", saved: false)
                }
                // The import runs as root: the lock file it may have made goes to the config's owner, the speaker,
                // which takes the same lock when setup mode saves.
                if let owner, geteuid() == 0 {
                    _ = chown(AtomicFile.lockFile(of: configPath).path, uid_t(owner.user), gid_t(owner.group))
                }
                return merged.keys
            }
        } catch let failure as Failure {
            throw failure
        } catch {
            throw .io("\(error)", saved: false)
        }
    }

    /// Overwrites the file's bytes with zeros and flushes them before removing it: a FAT directory entry removed
    /// leaves the data in place for anyone who reads the card's sectors. (The card's own wear levelling may still
    /// keep an old copy of the block; no file system call reaches that.) nil when done, else the problem.
    static func wipe(_ path: String) -> String? {
        let fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return String(cString: strerror(errno)) }
        var info = stat()
        var problem: String?
        if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
            let zeros = [UInt8](repeating: 0, count: 4096)
            var left = Int(info.st_size)
            while left > 0 {
                let n = zeros.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, min(left, zeros.count)) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { problem = "overwriting it: \(String(cString: strerror(errno)))"; break }
                left -= n
            }
            if problem == nil, fsync(fd) != 0 { problem = "fsync: \(String(cString: strerror(errno)))" }
        } else {
            problem = "not a regular file"
        }
        close(fd)
        if let problem { return problem }
        guard unlink(path) == 0 else { return "removing it: \(String(cString: strerror(errno)))" }
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
        let dir = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 {
            _ = fsync(dir)
            close(dir)
        }
        return nil
    }
}

/// A config's text as lines, edited one key at a time: a key's line is replaced; a key the owner left commented
/// out (`# latitude = 37.3875`) gets its line just after that comment; any other key goes at the end of its table,
/// and a table the config lacks is added at the end.
struct ConfigText {
    private(set) var lines: [String]

    init(_ text: String) {
        lines = text.isEmpty ? [] : text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
    }

    var text: String { lines.isEmpty ? "" : lines.joined(separator: "\n") + "\n" }

    /// The table a header line opens (`[a.b]` gives "a.b"); `[[...]]` gives a name no key table has.
    static func header(_ line: String) -> String? {
        let trimmed = line.trimmed()
        guard trimmed.hasPrefix("[") else { return nil }
        if trimmed.hasPrefix("[[") { return "[[array]]" }
        guard let close = trimmed.firstIndex(of: "]") else { return nil }
        return String(trimmed[trimmed.index(after: trimmed.startIndex)..<close]).trimmed()
    }

    /// The key a `key = value` line sets (quotes taken off), or nil.
    static func key(_ line: String) -> String? {
        let trimmed = line.trimmed()
        guard !trimmed.hasPrefix("#"), !trimmed.hasPrefix("["), let eq = trimmed.firstIndex(of: "=") else { return nil }
        return String(trimmed[..<eq]).trimmed(TrimmedCharacters(charactersIn: " \t\"'"))
    }

    /// The key of a commented-out assignment (`# key = value`), or nil.
    static func commentedKey(_ line: String) -> String? {
        let trimmed = line.trimmed()
        guard trimmed.hasPrefix("#") else { return nil }
        let rest = String(trimmed.drop { $0 == "#" }).trimmed()
        guard let eq = rest.firstIndex(of: "=") else { return nil }
        let key = String(rest[..<eq]).trimmed()
        guard !key.isEmpty, key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }) else { return nil }
        return key
    }

    mutating func set(table: String, key: String, assignment: String) {
        guard let start = lines.firstIndex(where: { Self.header($0) == table }) else {
            if let last = lines.last, !last.trimmed().isEmpty { lines.append("") }
            lines += ["[\(table)]", assignment]
            return
        }
        let end = lines[(start + 1)...].firstIndex { Self.header($0) != nil } ?? lines.count
        let section = (start + 1)..<end
        if let live = section.first(where: { Self.key(lines[$0]) == key }) {
            lines[live] = assignment
        } else if let commented = section.last(where: { Self.commentedKey(lines[$0]) == key }) {
            lines.insert(assignment, at: commented + 1)
        } else {
            // After the table's last key, not after the comments that open the next table.
            let lastKey = section.last { Self.key(lines[$0]) != nil } ?? start
            lines.insert(assignment, at: lastKey + 1)
        }
    }
}
