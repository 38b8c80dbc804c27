import BoardCore
import JSONKit

/// `hound-speaker ctl`'s words for the control API's commands: each name's word is the name with a hyphen for
/// each underscore (`cancel-timer`), then what the usage says follows it.
extension ControlCommand.Name {
    /// The word `ctl` takes for it.
    public var word: String { String(rawValue.map { $0 == "_" ? "-" : $0 }) }

    /// What follows the word in `ctl`'s usage; "": nothing may.
    public var arguments: String {
        switch self {
        case .text: "QUESTION"
        case .say: "WORDS"
        case .volume: "N|up|down|off|on"
        case .cancelTimer, .cancelAlarm: "ID|NAME|all"
        case .forget: "PHRASE|--negatives"
        case .enroll: "[--phrase TEXT]"
        case .ring: "on|off|PERCENT"
        case .listen, .stop, .mute, .unmute, .status, .timers, .clear, .wake, .voices, .reloadHousehold: ""
        }
    }

    /// The name `ctl` takes `word` for, if any.
    public init?(word: String) {
        guard let name = Self.allCases.first(where: { $0.word == word }) else { return nil }
        self = name
    }
}

extension ControlCommand {
    /// `ctl`'s commands as its usage lists them: `listen, stop, text QUESTION, ...`.
    public static let usage = Name.allCases.map { $0.arguments.isEmpty ? $0.word : "\($0.word) \($0.arguments)" }
        .joined(separator: ", ")

    /// The command for the words a script types after `ctl` (`say dinner is ready`, `volume 30`, `cancel-timer
    /// pasta`), with the name typed: `timers` is the status, which `ctl` prints as its timers.
    public static func parse(words: [String]) throws(Problem) -> (name: Name, command: ControlCommand) {
        guard let word = words.first else { throw Problem("a command is needed") }
        guard let name = Name(word: word) else { throw Problem("unknown command \"\(word)\"") }
        let rest = words.dropFirst().joined(separator: " ")
        func needs(_ what: String) throws(Problem) -> String {
            if rest.allSatisfy(\.isWhitespace) { throw Problem("\(word) needs \(what)") }
            return rest
        }
        switch name {
        case .listen, .stop, .mute, .unmute, .status, .timers, .clear, .wake, .voices, .reloadHousehold:
            guard rest.isEmpty else { throw Problem("\(word) takes nothing after it") }
            // The word alone means what its name alone means in a request.
            return (name, try parse(.object(["command": .string(name.rawValue)])))
        case .text:
            return (name, .text(try needs("a question, e.g. ctl text what time is it")))
        case .say:
            return (name, .say(try needs("the words, e.g. ctl say dinner is ready")))
        case .volume:
            switch rest {
            case "up", "down": return (name, .volume(.step(up: rest == "up")))
            case "off": return (name, .volume(.mute(true)))
            case "on": return (name, .volume(.mute(false)))
            default:
                guard let percent = Int(rest), (0...100).contains(percent) else { throw Problem("volume takes 0-100, up, down, off or on") }
                return (name, .volume(.to(percent)))
            }
        case .cancelTimer, .cancelAlarm:
            let what = try needs("a number (from ctl timers), a name, or all")
            let selection: Selection
            if what == "all" { selection = .all } else if let id = Int(what) { selection = .id(id) } else { selection = .named(what) }
            return (name, name == .cancelTimer ? .cancelTimer(selection) : .cancelAlarm(selection))
        case .enroll:
            if rest.isEmpty { return (name, .enroll(phrase: nil)) }
            guard words.count > 2, words[1] == "--phrase", !words.dropFirst(2).allSatisfy({ $0.allSatisfy(\.isWhitespace) }) else {
                throw Problem("enroll takes nothing (the hot phrase) or --phrase TEXT")
            }
            return (name, .enroll(phrase: words.dropFirst(2).joined(separator: " ")))
        case .ring:
            switch rest {
            case "on", "off": return (name, .ring(on: rest == "on", percent: nil))
            default:
                guard let percent = Int(rest.hasSuffix("%") ? String(rest.dropLast()) : rest), RingSetting.percentRange.contains(percent) else {
                    throw Problem("ring takes on, off or a brightness of 1-100")
                }
                return (name, .ring(on: nil, percent: percent))
            }
        case .forget:
            let what = try needs("a phrase (from ctl voices) or --negatives")
            return (name, .forget(phrase: what == "--negatives" ? nil : what))
        }
    }
}
