import JSONKit

/// The local service's client commands (docs/houndify-protocol.md, "Client commands"): timers, alarms, volume
/// and a phone call, answered with the shapes Houndify uses. The top-level texts are what a client that does not
/// carry the command out says; the dynamic responses are the branches a client that does picks from. Each branch
/// has its own ConversationState (`LocalServiceBranch` names it), so a test can see which one the client kept.
struct ClientCommandAnswers {
    let query: String
    let state: [String: JSONValue]

    /// The command for `query`, or nil when it is not one.
    func answer() -> [String: JSONValue]? {
        let words = query.split(whereSeparator: { !$0.isLetter && !$0.isNumber && $0 != "'" }).map(String.init)
        let has = { (w: String) in words.contains(w) }
        if has("call") || has("phone") || (has("text") && has("message")) {
            return command("PhoneCommand", kinds: [:], native: nil, unsupported: "Phone calls are not supported by this client.",
                           succeeded: "Calling.", failed: "The call could not be made.")
        }
        if has("alarm") || has("alarms") { return alarm(words) }
        if has("timer") || has("timers") { return timer(words) }
        if has("volume") || has("mute") || has("unmute") { return volume(words) }
        return nil
    }

    // MARK: Timers

    private func timer(_ words: [String]) -> [String: JSONValue]? {
        let has = { (w: String) in words.contains(w) }
        let title = Self.title(words, before: ["timer", "timers"])
        var criteria: JSONValue? = title.map { [["Title": .string($0)]] }
        if criteria == nil, let seconds = Self.duration(words), !has("add"), !has("set"), !has("start") {
            criteria = [["DurationInSeconds": .int(Int64(seconds))]]
        }
        func onTimers(_ kind: String, verb: String, extra: [String: JSONValue] = [:], criterion: [String: JSONValue]? = nil) -> [String: JSONValue] {
            var native = extra
            if let criterion {
                native["TimerCriteria"] = [.object(criterion.merging(criteria?[0]?.objectValue ?? [:]) { a, _ in a })]
            } else if let criteria {
                native["TimerCriteria"] = criteria
            }
            var result = command("TimerCommand", kinds: ["TimerCommandKind": .string(kind)], native: .object(native),
                                 unsupported: "Timers are not supported by this client.")
            for (branch, said) in [("Single", "Done: the timer is \(verb)."), ("Multi", "Done: the timers are \(verb)."),
                                   ("All", "Done: all your timers are \(verb)."), ("NoMatch", "There's no timer like that."),
                                   ("PartialMatch", "Some of those timers aren't there.")] {
                result["\(Self.verbKey(kind))\(branch)DynamicResponse"] = dynamic(said, branch: branch)
            }
            return result
        }
        if has("cancel") || has("delete") || has("remove") || has("clear") {
            return onTimers("TimerDeleteCommand", verb: "cancelled")
        }
        if has("pause") || (has("stop") && !has("stopwatch")) { return onTimers("TimerStopCommand", verb: "paused") }
        if has("resume") || has("continue") || has("unpause") { return onTimers("TimerResumeCommand", verb: "running again") }
        if has("reset") || has("restart") { return onTimers("TimerResetCommand", verb: "reset") }
        if has("add"), let seconds = Self.duration(words) {
            return onTimers("TimerAddTimeCommand", verb: "longer", criterion: ["SecondsToAdd": .int(Int64(seconds))])
        }
        if has("left") || has("remaining") || has("long") && (has("how") || has("much")) {
            return onTimers("TimerDisplayCommand", verb: "shown", extra: ["IsTimeRemainingQuery": true])
        }
        guard let seconds = Self.duration(words) else { return nil }  // "set a timer": the two-turn conversation
        return setTimer(seconds: seconds, title: title)
    }

    /// TimerSetCommand for `seconds` (also the second turn of "set a timer" ... "ten minutes").
    func setTimer(seconds: Int, title: String?) -> [String: JSONValue] {
        var timer: [String: JSONValue] = ["DurationInSeconds": .int(Int64(seconds)), "IsCountdown": true]
        if seconds >= 3600 { timer["Hours"] = .int(Int64(seconds / 3600)) }
        if seconds % 3600 >= 60 { timer["Minutes"] = .int(Int64(seconds % 3600 / 60)) }
        if seconds % 60 > 0 { timer["Seconds"] = .int(Int64(seconds % 60)) }
        if let title { timer["Title"] = .string(title) }
        let what = title.map { "\($0) timer" } ?? "timer"
        return command("TimerCommand", kinds: ["TimerCommandKind": "TimerSetCommand"], native: ["Timer": .object(timer)],
                       unsupported: "Timers are not supported by this client.",
                       succeeded: "Your \(what) is set for \(Self.words(seconds)).", failed: "Sorry, I couldn't set the \(what).")
    }

    private static func verbKey(_ kind: String) -> String {
        switch kind {
        case "TimerDeleteCommand": "Delete"
        case "TimerStopCommand": "Stop"
        case "TimerResumeCommand": "Resume"
        case "TimerResetCommand": "Reset"
        case "TimerAddTimeCommand": "AddTime"
        default: "Display"
        }
    }

    // MARK: Alarms

    private func alarm(_ words: [String]) -> [String: JSONValue]? {
        let has = { (w: String) in words.contains(w) }
        if has("cancel") || has("delete") || has("remove") || has("clear") || has("turn") && has("off") {
            var native: [String: JSONValue] = [:]
            if let title = Self.title(words, before: ["alarm"]) {
                native["AlarmCriteria"] = [["Title": .string(title)]]
            } else if let (hour, minute) = Self.clockTime(words) {
                native["AlarmCriteria"] = [["Hour": .int(Int64(hour)), "Minute": .int(Int64(minute))]]
            } else if !has("alarms") && !has("all") {
                native["AlarmCriteria"] = [[:]]
            }
            var result = command("AlarmCommand", kinds: ["AlarmCommandKind": "AlarmUnsetCommand"], native: .object(native),
                                 unsupported: "Alarms are not supported by this client.")
            for (branch, said) in [("Single", "Your alarm is cancelled."), ("Multi", "Those alarms are cancelled."),
                                   ("All", "All your alarms are cancelled."), ("NoMatch", "There's no alarm like that.")] {
                result["Delete\(branch)DynamicResponse"] = dynamic(said, branch: branch)
            }
            return result
        }
        if has("what") || has("which") || has("list") || has("show") {
            return command("AlarmCommand", kinds: ["AlarmCommandKind": "AlarmDisplayCommand"], native: nil,
                           unsupported: "Alarms are not supported by this client.")
        }
        guard let (hour, minute) = Self.clockTime(words) else { return nil }
        var days: [JSONValue] = []
        let names = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
        for (index, name) in names.enumerated() where has(name) || has(name + "s") { days.append(.string(Self.capitalized(names[index]))) }
        if has("weekday") || has("weekdays") { days = names.prefix(5).map { .string(Self.capitalized($0)) } }
        let everyDay = has("every") && (has("day") || has("morning") || has("night"))
        var alarm: [String: JSONValue] = ["Hour": .int(Int64(hour)), "Minute": .int(Int64(minute)), "Second": 0,
                                          "IsRecurring": .bool(!days.isEmpty || everyDay), "IsWake": .bool(hour < 12)]
        if !days.isEmpty { alarm["DaysOfWeek"] = .array(days) }
        if let title = Self.title(words, before: ["alarm"]) { alarm["Title"] = .string(title) }
        let time = String(format: hour, minute)
        return command("AlarmCommand", kinds: ["AlarmCommandKind": "AlarmSetCommand"], native: ["Alarms": [.object(alarm)]],
                       unsupported: "Alarms are not supported by this client.",
                       succeeded: "Your alarm is set for \(time).", failed: "Sorry, I couldn't set the alarm.")
    }

    // MARK: Volume

    private func volume(_ words: [String]) -> [String: JSONValue]? {
        let has = { (w: String) in words.contains(w) }
        var fields: [String: JSONValue]
        if has("unmute") { fields = ["CommandType": "UnMuteSound"] }
        else if has("mute") { fields = ["CommandType": "MuteSound"] }
        else if let n = Self.number(words), has("to") || has("set") { fields = ["CommandType": "SetVolume", "VolumeValue": .int(Int64(n))] }
        else if has("up") || has("louder") || has("increase") || has("raise") {
            fields = ["CommandType": "AdjustVolume", "VolumeDelta": .int(Int64(Self.number(words) ?? 10))]
        } else if has("down") || has("quieter") || has("decrease") || has("lower") {
            fields = ["CommandType": "AdjustVolume", "VolumeDelta": .int(-Int64(Self.number(words) ?? 10))]
        } else { return nil }
        fields["DeviceControlCommandKind"] = "VolumeCommand"
        return command("DeviceControlCommand", kinds: fields, native: nil, unsupported: "Volume control is not supported by this client.",
                       succeeded: "OK.", failed: "Sorry, I couldn't change the volume.")
    }

    // MARK: Shapes

    private func dynamic(_ said: String, branch: String) -> JSONValue {
        var branchState = state
        branchState["LocalServiceBranch"] = .string(branch)
        return ["SpokenResponse": .string(said), "SpokenResponseLong": .string(said), "WrittenResponse": .string(said),
                "WrittenResponseLong": .string(said), "ConversationState": .object(branchState)]
    }

    /// A client command: the top level is the answer for a client that cannot do it (as Houndify words it), the
    /// succeeded/failed results the alternatives.
    private func command(_ kind: String, kinds: [String: JSONValue], native: JSONValue?, unsupported: String,
                         succeeded: String? = nil, failed: String? = nil) -> [String: JSONValue] {
        var result: [String: JSONValue] = [
            "CommandKind": .string(kind), "SpokenResponse": .string(unsupported), "SpokenResponseLong": .string(unsupported),
            "WrittenResponse": .string(unsupported), "WrittenResponseLong": .string(unsupported), "AutoListen": false,
            "ViewType": ["Native", "None"],
        ]
        for (key, value) in kinds { result[key] = value }
        if let native { result["NativeData"] = native }
        if let succeeded { result["ClientActionSucceededResult"] = dynamic(succeeded, branch: "Succeeded") }
        if let failed { result["ClientActionFailedResult"] = dynamic(failed, branch: "Failed") }
        return result
    }

    // MARK: Reading the query

    static let numbers = ["one": 1, "a": 1, "an": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                          "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15, "twenty": 20,
                          "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "ninety": 90]

    static func number(_ words: [String]) -> Int? {
        for word in words {
            if let n = Int(word) { return n }
            if word != "a", word != "an", let n = numbers[word] { return n }
        }
        return nil
    }

    /// "ten minutes", "90 seconds", "an hour and a half" (not), "1 hour 30 minutes": the sum of number-unit pairs.
    static func duration(_ words: [String]) -> Int? {
        var total = 0, found = false
        for (index, word) in words.enumerated() where index > 0 {
            let unit: Int
            switch word {
            case "second", "seconds": unit = 1
            case "minute", "minutes": unit = 60
            case "hour", "hours": unit = 3600
            default: continue
            }
            let before = words[index - 1]
            guard let n = Int(before) ?? numbers[before] else { continue }
            // Saturating: "9999999999999999 hours" is a question, not a reason for the service to trap. The speaker
            // refuses it as too long.
            let (product, overflow) = n.multipliedReportingOverflow(by: unit)
            let (sum, sumOverflow) = total.addingReportingOverflow(product)
            total = overflow || sumOverflow ? Int.max : sum
            found = true
        }
        return found ? total : nil
    }

    /// The name in "the pasta timer" / "a timer called pasta": the word before the noun that is not a number, a
    /// unit or a determiner.
    static func title(_ words: [String], before nouns: Set<String>) -> String? {
        if let called = words.firstIndex(where: { $0 == "called" || $0 == "named" }), called + 1 < words.count {
            return words[called + 1]
        }
        guard let index = words.firstIndex(where: nouns.contains), index > 0 else { return nil }
        let candidate = words[index - 1]
        let skip: Set<String> = ["a", "an", "the", "my", "this", "that", "all", "second", "seconds", "minute", "minutes", "hour",
                                 "hours", "set", "new", "another", "first", "any", "your", "our", "wake", "morning", "am", "pm", "o'clock"]
        guard !skip.contains(candidate), Int(candidate) == nil, numbers[candidate] == nil else { return nil }
        return candidate
    }

    /// "7 am", "7:30 pm", "6 30 am" (as a transcript has it): the hour (0-23) and minute.
    static func clockTime(_ words: [String]) -> (Int, Int)? {
        for (index, word) in words.enumerated() {
            let parts = word.split(separator: ":").compactMap { Int($0) }
            guard let hour = parts.first ?? numbers[word].flatMap({ word == "a" || word == "an" ? nil : $0 }), (0...23).contains(hour) else { continue }
            var minute = parts.count > 1 ? parts[1] : 0
            var next = index + 1
            if parts.count == 1, next < words.count, let m = Int(words[next]), (0...59).contains(m) { minute = m; next += 1 }
            let meridiem = next < words.count ? words[next] : ""
            guard meridiem == "am" || meridiem == "pm" || parts.count > 1 else { continue }
            var h = hour % 12
            if meridiem == "pm" { h += 12 } else if meridiem != "am" { h = hour }
            return (h, minute)
        }
        return nil
    }

    static func capitalized(_ word: String) -> String { word.prefix(1).uppercased() + word.dropFirst() }

    static func words(_ seconds: Int) -> String {
        let parts = [(seconds / 3600, "hour"), (seconds % 3600 / 60, "minute"), (seconds % 60, "second")]
            .filter { $0.0 > 0 }.map { "\($0.0) \($0.1)\($0.0 == 1 ? "" : "s")" }
        return parts.joined(separator: " and ")
    }
}

private extension String {
    /// "7:05 AM".
    init(format hour: Int, _ minute: Int) {
        let h = hour % 12 == 0 ? 12 : hour % 12
        self = "\(h):\(minute < 10 ? "0" : "")\(minute) \(hour < 12 ? "AM" : "PM")"
    }
}
