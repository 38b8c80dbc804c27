import AudioCore
import BoardCore
public import JSONKit
public import SpeakerCore
public import Timers

/// One request to the control API (docs/control-api.md): `{"command": "say", "text": "..."}`. The server reads it
/// from its JSON (`parse`); `hound-speaker ctl` makes it from its words (`parse(words:)`) and sends its JSON
/// (`json`). Every value can be sent and is read back as it was: `ControlCommand.parse(command.json) == command`.
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
    case volume(Volume)
    /// The snapshot: state, mute, volume, timers and alarms, the last question and answer.
    case status
    case cancelTimer(Selection)
    case cancelAlarm(Selection)
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
    /// The LED ring on or off, and its brightness in percent (1-100); nil: as it is. At least one is given.
    case ring(on: Bool?, percent: Int?)

    /// A volume change as a request says it: `step`, `percent` or `sound_off`.
    public enum Volume: Sendable, Equatable {
        case step(up: Bool)
        /// To a level of 0-100.
        case to(Int)
        /// The output's sound off (true) or back on (false).
        case mute(Bool)

        /// What the speaker does for it.
        public var action: VolumeAction {
            switch self {
            case .step(let up): .step(up: up)
            case .to(let percent): .to(percent)
            case .mute(let off): .mute(off)
            }
        }
    }

    /// A timer or alarm as a request names it: its `id` (from `status`), its `name`, or `all`.
    public enum Selection: Sendable, Equatable {
        case id(Int)
        case named(String)
        case all

        public var timer: TimerSelection {
            switch self {
            case .id(let id): .id(id)
            case .named(let name): .named(name)
            case .all: .all
            }
        }

        public var alarm: AlarmSelection {
            switch self {
            case .id(let id): .id(id)
            case .named(let name): .named(name)
            case .all: .all
            }
        }
    }

    /// The command names a request may carry, each written once here, in the order errors and `ctl` list them.
    public enum Name: String, Sendable, CaseIterable {
        case listen, stop, text, say, mute, unmute, volume, status
        /// The status too (`ctl timers` prints its timers and alarms one a line).
        case timers
        case cancelTimer = "cancel_timer"
        case cancelAlarm = "cancel_alarm"
        case clear, wake, voices, forget
        case reloadHousehold = "reload_household"
        case enroll
        case ring
    }

    /// The command names, as a script writes them.
    public static let names = Name.allCases.map(\.rawValue)

    /// The name it is sent by, logged by and replied to by.
    public var name: Name {
        switch self {
        case .listen: .listen
        case .stop: .stop
        case .text: .text
        case .say: .say
        case .mute(let on): on ? .mute : .unmute
        case .volume: .volume
        case .status: .status
        case .cancelTimer: .cancelTimer
        case .cancelAlarm: .cancelAlarm
        case .clearConversation: .clear
        case .wake: .wake
        case .voices: .voices
        case .forget: .forget
        case .reloadHousehold: .reloadHousehold
        case .enroll: .enroll
        case .ring: .ring
        }
    }

    /// What a request lacked or got wrong, in words for whoever wrote it.
    public struct Problem: Error, Sendable, Equatable, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// Longest text or query accepted (a screenful; espeak-ng and Houndify take no more usefully).
    public static let longestText = 2000

    public static func parse(_ json: JSONValue) throws(Problem) -> ControlCommand {
        guard let object = json.objectValue else { throw Problem("a request is a JSON object, e.g. {\"command\":\"stop\"}") }
        guard let given = object["command"]?.stringValue else {
            throw Problem("\"command\" is missing (one of: \(names.joined(separator: ", ")))")
        }
        guard let name = Name(rawValue: given) else {
            throw Problem("unknown command \"\(given)\" (one of: \(names.joined(separator: ", ")))")
        }
        func text(_ key: String) throws(Problem) -> String {
            guard let value = object[key]?.stringValue, !value.allSatisfy(\.isWhitespace) else {
                throw Problem("\"\(given)\" needs \"\(key)\": the words, e.g. {\"command\":\"\(given)\",\"\(key)\":\"what time is it\"}")
            }
            guard value.count <= longestText else { throw Problem("\"\(key)\" is longer than \(longestText) characters") }
            return value
        }
        switch name {
        case .listen: return .listen
        case .stop: return .stop
        case .mute: return .mute(true)
        case .unmute: return .mute(false)
        case .status, .timers: return .status
        case .clear: return .clearConversation
        case .wake: return .wake
        case .voices: return .voices
        case .reloadHousehold: return .reloadHousehold
        case .text: return .text(try text("query"))
        case .say: return .say(try text("text"))
        case .enroll:
            guard let value = object["phrase"], value != .null else { return .enroll(phrase: nil) }
            guard let phrase = value.stringValue, !phrase.allSatisfy(\.isWhitespace) else {
                throw Problem("\"phrase\" is the words to teach, e.g. {\"command\":\"enroll\",\"phrase\":\"hey kitchen\"}; leave it out for the hot phrase")
            }
            if let problem = PhraseText.problem(phrase) { throw Problem("\"phrase\" \(problem)") }
            return .enroll(phrase: phrase)
        case .ring:
            let on: Bool?
            switch object["on"] {
            case nil, .null?: on = nil
            case let value?:
                guard let flag = value.boolValue else { throw Problem("\"on\" is true or false") }
                on = flag
            }
            var percent: Int? = nil
            if let value = object["percent"], value != .null {
                guard let number = value.int64Value, RingSetting.percentRange.contains(Int(clamping: number)) else {
                    throw Problem("\"percent\" is the ring's brightness, 1 to 100")
                }
                percent = Int(number)
            }
            guard on != nil || percent != nil else {
                throw Problem("\"ring\" needs \"on\" (true or false) or \"percent\" (1-100), e.g. {\"command\":\"ring\",\"on\":false}")
            }
            return .ring(on: on, percent: percent)
        case .forget:
            if object["negatives"]?.boolValue == true { return .forget(phrase: nil) }
            if let phrase = object["phrase"]?.stringValue, !phrase.allSatisfy(\.isWhitespace) { return .forget(phrase: phrase) }
            throw Problem("\"forget\" needs \"phrase\" (one of \"voices\") or \"negatives\": true")
        case .volume:
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
        case .cancelTimer, .cancelAlarm:
            let selection: Selection
            if let id = object["id"]?.int64Value {
                selection = .id(Int(id))
            } else if let label = object["name"]?.stringValue, !label.isEmpty {
                selection = .named(label)
            } else if object["all"]?.boolValue == true {
                selection = .all
            } else {
                throw Problem("\"\(given)\" needs \"id\" (a number from \"status\"), \"name\" or \"all\": true")
            }
            return name == .cancelTimer ? .cancelTimer(selection) : .cancelAlarm(selection)
        }
    }

    /// The request's JSON, as `parse` reads it back.
    public var json: JSONValue { json(named: name) }

    /// The request's JSON under `name`, one of the names that mean this command (`timers` for `status`, as
    /// `ctl timers` sends it).
    public func json(named name: Name) -> JSONValue {
        var object: [String: JSONValue] = ["command": .string(name.rawValue)]
        switch self {
        case .text(let query): object["query"] = .string(query)
        case .say(let text): object["text"] = .string(text)
        case .volume(.step(let up)): object["step"] = .string(up ? "up" : "down")
        case .volume(.to(let percent)): object["percent"] = .int(Int64(percent))
        case .volume(.mute(let off)): object["sound_off"] = .bool(off)
        case .cancelTimer(let selection), .cancelAlarm(let selection):
            switch selection {
            case .id(let id): object["id"] = .int(Int64(id))
            case .named(let label): object["name"] = .string(label)
            case .all: object["all"] = true
            }
        case .forget(let phrase?): object["phrase"] = .string(phrase)
        case .forget(nil): object["negatives"] = true
        case .enroll(let phrase?): object["phrase"] = .string(phrase)
        case .ring(let on, let percent):
            if let on { object["on"] = .bool(on) }
            if let percent { object["percent"] = .int(Int64(percent)) }
        case .enroll(nil), .listen, .stop, .mute, .status, .clearConversation, .wake, .voices, .reloadHousehold: break
        }
        return .object(object)
    }

    /// What the speaker's loop is sent for it (nil: nothing, the reply is the snapshot).
    public var event: SpeakerEvent? {
        switch self {
        case .listen: .listen
        case .stop: .cancel
        case .text(let query): .textQuery(query)
        case .say(let text): .announce(text)
        case .mute(let on): .setMuted(on)
        case .volume(let volume): .carryOut(.volume(volume.action))
        case .status: nil
        case .cancelTimer(let selection): .carryOut(.timer(.cancel(selection.timer)))
        case .cancelAlarm(let selection): .carryOut(.alarm(.cancel(selection.alarm)))
        case .clearConversation: .clearConversation
        case .wake, .voices, .forget, .reloadHousehold, .enroll, .ring: nil
        }
    }
}
