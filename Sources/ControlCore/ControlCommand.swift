public import JSONKit
public import SpeakerCore
public import Timers

/// One request to the control API (docs/control-api.md), read from its JSON: `{"command": "say", "text": "..."}`.
public enum ControlCommand: Sendable, Equatable {
    /// As a tap on the button (over an answer: the next question at once).
    case listen
    /// Stops whatever the speaker is doing: speech, a question, a ringing timer.
    case stop
    /// A typed question in the same conversation.
    case text(String)
    /// An announcement: a chime, then the words, when the speaker is free.
    case say(String)
    case mute(Bool)
    case volume(VolumeAction)
    /// The snapshot: state, mute, volume, timers and alarms, the last question and answer.
    case status
    case cancelTimer(TimerSelection)
    case cancelAlarm(AlarmSelection)
    /// The next question starts a new conversation.
    case clearConversation
    /// The screen was touched: back to full brightness (it dims again after the quiet time).
    case wake
    /// The household's enrolled phrases and their takes, and its false wakes (docs/household.md).
    case voices
    /// Removes one phrase's takes (`phrase`), or the household's false wakes (nil).
    case forget(phrase: String?)
    /// Reads the household's file again (after `hound-speaker enroll`).
    case reloadHousehold
    /// Starts the spoken enrollment ("Teach it my voice") of `phrase` (nil: the model's, "OK Hound").
    case enroll(phrase: String?)

    /// The command names, as a script writes them.
    public static let names = ["listen", "stop", "text", "say", "mute", "unmute", "volume", "status", "timers",
                               "cancel_timer", "cancel_alarm", "clear", "wake", "voices", "forget", "reload_household", "enroll"]

    /// What a request lacked or got wrong, in words for whoever wrote it.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// Longest text or query accepted (a screenful; espeak-ng and Houndify take no more usefully).
    public static let longestText = 2000

    public static func parse(_ json: JSONValue) throws(Problem) -> ControlCommand {
        guard let object = json.objectValue else { throw Problem("a request is a JSON object, e.g. {\"command\":\"stop\"}") }
        guard let name = object["command"]?.stringValue else {
            throw Problem("\"command\" is missing (one of: \(names.joined(separator: ", ")))")
        }
        func text(_ key: String) throws(Problem) -> String {
            guard let value = object[key]?.stringValue, !value.allSatisfy(\.isWhitespace) else {
                throw Problem("\"\(name)\" needs \"\(key)\": the words, e.g. {\"command\":\"\(name)\",\"\(key)\":\"what time is it\"}")
            }
            guard value.count <= longestText else { throw Problem("\"\(key)\" is longer than \(longestText) characters") }
            return value
        }
        switch name {
        case "listen": return .listen
        case "stop": return .stop
        case "text": return .text(try text("query"))
        case "say": return .say(try text("text"))
        case "mute": return .mute(true)
        case "unmute": return .mute(false)
        case "status", "timers": return .status
        case "clear": return .clearConversation
        case "wake": return .wake
        case "voices": return .voices
        case "reload_household": return .reloadHousehold
        case "enroll":
            guard let value = object["phrase"], value != .null else { return .enroll(phrase: nil) }
            guard let phrase = value.stringValue, !phrase.allSatisfy(\.isWhitespace) else {
                throw Problem("\"phrase\" is the words to teach, e.g. {\"command\":\"enroll\",\"phrase\":\"hey kitchen\"}; leave it out for the hot phrase")
            }
            guard phrase.count <= 100 else { throw Problem("\"phrase\" is longer than 100 characters: a wake phrase is a few words") }
            return .enroll(phrase: phrase)
        case "forget":
            if object["negatives"]?.boolValue == true { return .forget(phrase: nil) }
            if let phrase = object["phrase"]?.stringValue, !phrase.allSatisfy(\.isWhitespace) { return .forget(phrase: phrase) }
            throw Problem("\"forget\" needs \"phrase\" (one of \"voices\") or \"negatives\": true")
        case "volume":
            if let step = object["step"]?.stringValue {
                guard step == "up" || step == "down" else { throw Problem("\"step\" is \"up\" or \"down\", not \"\(step)\"") }
                return .volume(.step(up: step == "up"))
            }
            if let percent = object["percent"]?.int64Value {
                guard (0...100).contains(percent) else { throw Problem("\"percent\" is 0 to 100, not \(percent)") }
                return .volume(.to(Int(percent)))
            }
            if let off = object["sound_off"]?.boolValue { return .volume(.mute(off)) }
            throw Problem("\"volume\" needs \"percent\" (0-100), \"step\" (\"up\" or \"down\") or \"sound_off\" (true or false)")
        case "cancel_timer", "cancel_alarm":
            let timer = name == "cancel_timer"
            if let id = object["id"]?.int64Value { return timer ? .cancelTimer(.id(Int(id))) : .cancelAlarm(.id(Int(id))) }
            if let label = object["name"]?.stringValue, !label.isEmpty { return timer ? .cancelTimer(.named(label)) : .cancelAlarm(.named(label)) }
            if object["all"]?.boolValue == true { return timer ? .cancelTimer(.all) : .cancelAlarm(.all) }
            throw Problem("\"\(name)\" needs \"id\" (a number from \"status\"), \"name\" or \"all\": true")
        default:
            throw Problem("unknown command \"\(name)\" (one of: \(names.joined(separator: ", ")))")
        }
    }

    /// What the speaker's loop is sent for it (nil: nothing, the reply is the snapshot).
    public var event: SpeakerEvent? {
        switch self {
        case .listen: .listen
        case .stop: .cancel
        case .text(let query): .textQuery(query)
        case .say(let text): .announce(text)
        case .mute(let on): .setMuted(on)
        case .volume(let action): .carryOut(.volume(action))
        case .status: nil
        case .cancelTimer(let selection): .carryOut(.timer(.cancel(selection)))
        case .cancelAlarm(let selection): .carryOut(.alarm(.cancel(selection)))
        case .clearConversation: .clearConversation
        case .wake, .voices, .forget, .reloadHousehold, .enroll: nil
        }
    }
}
