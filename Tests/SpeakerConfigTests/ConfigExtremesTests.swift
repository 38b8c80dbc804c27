import Foundation
import JSONKit
import Testing
import TestSupport
import HoundifyCore
@testable import SpeakerConfig

/// Every key of the config at the extremes an owner (or a bad editor) can write: numbers at 0, tiny, huge,
/// infinite and NaN, strings empty and not UTF-8, and each key given a value of every other type. Each must load
/// into a value the speaker can use or be refused naming its key and line; none may crash the loader or the
/// conversions after it (the milliseconds for libcurl once overflowed: SIGILL at every start).
@Suite(.ownThread) struct ConfigExtremesTests {
    static let values = ["0", "-1", "1", "1e-300", "0.0004", "1e300", "9223372036854775807", "-9223372036854775808",
                         "inf", "-inf", "nan", "\"\"", "\" \"", "\"x\"", "true", "[]", "{}", "[1, \"a\"]", "{ a = nan }",
                         "1979-05-27T07:32:00Z"]

    static var everyKey: [(table: String, key: String)] {
        Reader.schema.keys.sorted().flatMap { table in Reader.schema[table]!.sorted().map { (table, $0) } }
    }

    @Test func everyKeyAtEveryExtremeLoadsOrIsNamed() throws {
        var loaded = 0
        for (table, key) in Self.everyKey {
            for value in Self.values {
                // The key on line 3, after a comment, so a wrong line is told apart from "the first line".
                let text = "# extremes\n[\(table)]\n\(key) = \(value)\n"
                let config: SpeakerConfiguration
                do throws(ConfigError) {
                    config = try ConfigLoader.parse(text: text, file: "extremes.toml")
                } catch {
                    #expect(error.file == "extremes.toml" || key == "profile", "\(table).\(key) = \(value): \(error)")
                    if key != "profile" {
                        #expect(error.line == 3, "\(table).\(key) = \(value): \(error)")
                        #expect(error.key?.contains(key) == true, "\(table).\(key) = \(value): \(error)")
                    }
                    #expect(!error.problem.isEmpty)
                    continue
                }
                loaded += 1
                try checkUsable(config, "\(table).\(key) = \(value)")
            }
        }
        #expect(loaded > 0)  // some values are fine (an empty device_id, say): the loop reached the conversions
    }

    /// A string that is not UTF-8 in any key: the file is refused with that line and the byte, whatever the key.
    @Test func aByteThatIsNotUTF8InAnyKeyNamesItsLine() throws {
        for (table, key) in Self.everyKey {
            let bytes = [UInt8]("# extremes\n[\(table)]\n\(key) = \"ab".utf8) + [0xFF] + [UInt8]("\"\n".utf8)
            #expect(throws: ConfigError(file: "x.toml", line: 3, key: nil, problem: "is not UTF-8 text (byte 0xFF here); save it as UTF-8"),
                    "\(table).\(key)") {
                try ConfigLoader.parse(contents: bytes, file: "x.toml")
            }
        }
    }

    /// What is built from a loaded config at start: the Houndify timeouts in milliseconds (as the client takes them,
    /// Sources/HoundifyAssembly/HoundifyClientSettings.swift) and the RequestInfo JSON. A value the speaker cannot send is
    /// refused at load, so it is never silently changed.
    func checkUsable(_ config: SpeakerConfiguration, _ what: String) throws {
        #expect(config.houndify.connectTimeoutMS >= 100 && config.houndify.responseTimeoutMS >= 1000, "\(what)")
        let info = JSONValue.object(config.houndify.requestInfoExtra).asciiJSON()
        #expect(!info.contains("null") || config.houndify.requestInfo.values.contains(.null), "\(what): \(info)")
    }

    @Test func requestInfoRefusesNumbersJSONCannotCarry() throws {
        for value in ["nan", "inf", "-inf", "[1, nan]", "{ a = inf }"] {
            let text = "[houndify.request_info]\n# a comment\nx = \(value)\n"
            #expect(throws: ConfigError.self, "\(value)") { try ConfigLoader.parse(text: text, file: "r.toml") }
            do throws(ConfigError) { _ = try ConfigLoader.parse(text: text, file: "r.toml") } catch {
                #expect(error.line == 3 && error.key?.hasPrefix("[houndify.request_info] x") == true && error.problem.contains("JSON"), "\(value): \(error)")
            }
        }
    }

    /// toml++ (inside TOMLKit) aborts the process on a table header that does not start with a name; found by
    /// Tests/fuzz. These must be ordinary errors with their line (ParserProbe).
    @Test(arguments: ["[)", "[)hnn", "[\n", "[ \t", "[[ =]]", "[[)]]", "[ ?]", "[audio]\nx = 1\n[.a]", "[\u{00A0}a]"])
    func aTableHeaderWithoutANameIsAnErrorNotACrash(text: String) throws {
        let expectedLine = text.hasPrefix("[audio]") ? 3 : 1
        do throws(ConfigError) {
            _ = try ConfigLoader.parse(text: text, file: "h.toml")
            Issue.record("\(text.debugDescription) loaded")
        } catch {
            #expect(error.line == expectedLine, "\(text.debugDescription): \(error)")
            #expect(error.problem.hasPrefix("not valid TOML"), "\(text.debugDescription): \(error)")
        }
    }

    /// Anything else that makes toml++ abort (found by Tests/fuzz: a date whose time does not start with a digit) is
    /// parsed first in a child process, and the line it dies on is named. These once killed every command.
    @Test(arguments: [("x = 1979-05-27T`7:32:00Z\n", 1), ("[board]\n# a comment\nprofile = 1979-05-27T`7:32:00Z\nled = \"GPIO1\"\n", 3)])
    func aLineThatCrashesTheTOMLParserIsNamed(text: String, line: Int) throws {
        do throws(ConfigError) {
            _ = try ConfigLoader.parse(text: text, file: "c.toml")
            Issue.record("\(text.debugDescription) loaded")
        } catch {
            #expect(error.line == line && error.problem.contains("the TOML parser cannot read this line"), "\(error)")
        }
    }

    /// The probe that guards toml++ must not refuse valid TOML: brackets inside strings, multi-line strings and
    /// arrays that span lines, quoted table names.
    @Test func validTablesAndValuesWithBracketsStillLoad() throws {
        let text = """
            [houndify]
            device_id = "[)"
            client_id = '''
            [)
            '''
            endpoint = "http://127.0.0.1:9000"  # [)
            [houndify.request_info]
            list = [
              [1, 2],
              { a = "[)" },
            ]
            note = \"\"\"
            line one \\
            [) still a string\"\"\"
            [ "location" ]
            latitude = 1
            longitude = 2
            [[houndify.request_info.more]]
            b = 1

            """
        let config = try ConfigLoader.parse(text: text, file: "v.toml")
        #expect(config.houndify.deviceID == "[)")
        #expect(config.houndify.clientID == "[)\n")
        #expect(config.location.latitude == 1)
        #expect(config.houndify.requestInfo["list"]?[1]?["a"] == .string("[)"))
        // A bad header after all that is still found, on its own line.
        do throws(ConfigError) { _ = try ConfigLoader.parse(text: text + "[)\n", file: "v.toml"); Issue.record("loaded") } catch {
            #expect(error.line == 20, "\(error)")
        }
    }
}
