import Foundation
import Testing
@testable import SpeakerConfig

/// The key table (Sources/SpeakerConfig/ConfigKeys.swift) against the file that documents it and the reader that
/// checks values by it.
@Suite struct ConfigKeysTests {
    static let shipped: String = {
        // #filePath: Tests/SpeakerConfigTests/ConfigKeysTests.swift -> the package root.
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return (try? String(contentsOf: root.appendingPathComponent("config/speaker.toml"), encoding: .utf8)) ?? ""
    }()

    /// The names config/speaker.toml documents in each table: `key = ...` lines, set or commented out, and
    /// `[table.key]` or `[[table.key]]` headers, set or shown as an example in a comment.
    static var documented: [String: Set<String>] {
        var out: [String: Set<String>] = [:]
        var table = ""
        for raw in shipped.split(separator: "\n") {
            let line = raw.drop { $0 == " " || $0 == "#" }
            if line.hasPrefix("[") {
                let name = line.trimmingCharacters(in: CharacterSet(charactersIn: "[] "))
                let parts = name.split(separator: ".", maxSplits: 1).map(String.init)
                if raw.hasPrefix("[") { table = parts[0] }
                if parts.count == 2 { out[parts[0], default: []].insert(parts[1]) }
            } else if let eq = line.firstIndex(of: "="), !table.isEmpty {
                let key = line[..<eq].trimmingCharacters(in: .whitespaces)
                if !key.isEmpty, !key.contains(" ") { out[table, default: []].insert(key) }
            }
        }
        return out
    }

    @Test func theShippedConfigDocumentsEveryKey() {
        #expect(!Self.shipped.isEmpty)
        let documented = Self.documented
        for key in ConfigSchema.keys {
            #expect(documented[key.table]?.contains(key.name) == true, "[\(key.table)] \(key.name) is not in config/speaker.toml")
            #expect(!key.doc.isEmpty, "[\(key.table)] \(key.name) has no doc")
        }
        // And documents no key the reader does not know (a commented-out example must be one it would read).
        let known = Dictionary(grouping: ConfigSchema.keys, by: \.table).mapValues { Set($0.map(\.name)) }
        #expect(Set(documented.keys) == Set(known.keys))
        for (table, names) in documented {
            for name in names where known[table]?.contains(name) != true {
                // Inside [houndify.client_match] and the inline examples, the fields are the table's own.
                guard table != "houndify" || !["phrase", "expression", "response", "run", "action", "home_assistant", "InputLanguageIETFTag", "Domains"].contains(name) else { continue }
                Issue.record("config/speaker.toml documents [\(table)] \(name), which the reader does not know")
            }
        }
    }

    /// The config fuzzer's dictionary (Tests/fuzz/config.dict) names every table and key, so that its mutations
    /// reach each key's checks.
    @Test func theFuzzersDictionaryNamesEveryKey() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let dictionary = try String(contentsOf: root.appendingPathComponent("Tests/fuzz/config.dict"), encoding: .utf8)
        let entries = Set(dictionary.split(separator: "\n").map(String.init))
        let missing = Set(ConfigSchema.keys.map { "\"[\($0.table)]\"" }).union(ConfigSchema.keys.map { "\"\($0.name)\"" })
            .subtracting(entries)
        #expect(missing.isEmpty, "not in Tests/fuzz/config.dict: \(missing.sorted())")
    }

    @Test func everyTableIsDeclaredOnceWithUniqueKeys() {
        let pairs = ConfigSchema.keys.map { "\($0.table).\($0.name)" }
        #expect(Set(pairs).count == pairs.count)
        #expect(Reader.schema.values.map(\.count).reduce(0, +) == ConfigSchema.keys.count)
    }

    func problem(_ table: String, _ key: String, _ value: String) -> ConfigError? {
        do throws(ConfigError) {
            _ = try ConfigLoader.parse(text: "[\(table)]\n\(key) = \(value)\n", file: "k.toml")
            return nil
        } catch { return error }
    }

    /// The ranges and choices of the table are the reader's: just outside a range, or a value not in the list, is
    /// refused naming the key, its line and the range or every choice.
    @Test func theReaderChecksEachKeyByItsType() throws {
        var checked = 0
        for key in ConfigSchema.keys {
            let name = "[\(key.table)] \(key.name)"
            var outside: [(value: String, says: String)] = []
            switch key.type {
            case .integer(let range, _):
                if range.lowerBound > Int.min { outside.append(("\(range.lowerBound - 1)", "\(range.lowerBound)")) }
                if range.upperBound < Int.max { outside.append(("\(range.upperBound + 1)", "\(range.upperBound)")) }
            case .number(let range), .seconds(let range):
                outside = [("\(range.lowerBound - 1)", "\(range.lowerBound)"), ("\(range.upperBound + 1)", "\(range.upperBound)")]
            case .choice(let names):
                outside = [("\"not-one-of-them\"", names.map { "\"\($0)\"" }.joined(separator: "|"))]
            case .string, .bool, .table, .list:
                continue
            }
            for (value, says) in outside {
                let error = try #require(problem(key.table, key.name, value), "\(name) = \(value) loaded")
                #expect(error.line == 2 && error.key == name, "\(name) = \(value): \(error)")
                for part in says.split(separator: "|") {
                    #expect(error.problem.contains(part), "\(name) = \(value): \(error) does not say \(part)")
                }
                checked += 1
            }
        }
        #expect(checked > 50)
    }
}
