public import SpeakerCore
import Timers

/// What the speaker can do with no one to ask: a command it carries out itself, as Houndify's would be.
public enum OwnAction: Sendable, Equatable {
    /// A timer, alarm or volume command, carried out as Houndify's client command is.
    case client(ClientAction)
    /// Stop, or the IP address.
    case local(LocalCommand)
    /// The time or the date, from the speaker's clock.
    case tellTime
    case tellDate

    /// Each thing the speaker carries out, once: the switches below have no default, so a new timer, alarm,
    /// volume or local command does not compile until it has a kind, and the table's test then asks for its phrases.
    public enum Kind: String, Sendable, CaseIterable {
        case timerSet, timerCancel, timerTimeLeft, timerAddTime, timerPause, timerResume, timerReset
        case alarmSet, alarmCancel, alarmList
        case volumeStep, volumeBy, volumeTo, volumeMute, volumeUnmute
        case stop, ipAddress, time, date
        /// An owner's phrase runs a command Houndify matched (ClientMatches): there is no table of them offline.
        case ownerCommand
        /// Houndify's "turn off the microphone" (a ClientMatch too); the double press does it offline.
        case muteMicrophone

        /// The kinds the offline recogniser does not hear, and why.
        public static let notOffline: [Kind: String] = [
            .ownerCommand: "an owner's phrases are Houndify's ClientMatches, matched in the cloud",
            .muteMicrophone: "a double press mutes the microphone; by voice it is an owner's ClientMatch",
        ]
    }

    public var kind: Kind {
        switch self {
        case .tellTime: .time
        case .tellDate: .date
        case .local(let command):
            switch command {
            case .stop: .stop
            case .ipAddress: .ipAddress
            case .volumeUp, .volumeDown: .volumeStep
            }
        case .client(let action):
            switch action {
            case .run: .ownerCommand
            case .muteMicrophone: .muteMicrophone
            case .volume(let v):
                switch v {
                case .step: .volumeStep
                case .by: .volumeBy
                case .to: .volumeTo
                case .mute(let on): on ? .volumeMute : .volumeUnmute
                }
            case .timer(let t):
                switch t {
                case .set: .timerSet
                case .cancel: .timerCancel
                case .timeLeft: .timerTimeLeft
                case .addTime: .timerAddTime
                case .pause: .timerPause
                case .resume: .timerResume
                case .reset: .timerReset
                }
            case .alarm(let a):
                switch a {
                case .set: .alarmSet
                case .cancel: .alarmCancel
                case .list: .alarmList
                }
            }
        }
    }
}

/// The values a template's slots were filled with, by slot (a template has each slot at most once).
public struct Filled: Sendable {
    var values: [Slot: SlotValue]
    /// "all" was said ("cancel all timers").
    var allSaid: Bool
    /// Up, unless a word says down.
    var up: Bool
    /// No a.m., p.m., morning, afternoon, evening or night was said.
    var noPartOfDay: Bool
    /// "wake me up at six": a plain hour is the morning's.
    var wakeMe: Bool
    public func number(_ s: Slot) -> Int? { if case .number(let n)? = values[s] { n } else { nil } }
    public var seconds: Int? { if case .seconds(let n)? = values[.duration] { n } else { nil } }
    public var minuteOfDay: Int? { if case .minuteOfDay(let n)? = values[.time] { n } else { nil } }
    public var name: String? { if case .name(let n)? = values[.name] { n } else { nil } }

    /// Which timer: by name, by length, by order, or the one there is.
    var timer: TimerSelection {
        if let name { return .named(name) }
        if let seconds { return .length(seconds: seconds) }
        if let n = number(.ordinal) { return .position(n) }
        return .the
    }
}

/// One command: its phrases (templates) and what it does with what they filled in.
public struct OwnCommand: Sendable {
    public let kind: OwnAction.Kind
    public let templates: [String]
    let patterns: [Pattern]
    let make: @Sendable (Filled) -> OwnAction?

    init(_ kind: OwnAction.Kind, _ templates: [String], _ make: @escaping @Sendable (Filled) -> OwnAction?) {
        self.kind = kind
        self.templates = templates
        do { patterns = try templates.map { template throws(PatternError) in try Pattern.parse(template) } } catch { fatalError("the command table: \(error)") }
        self.make = make
    }
}

/// The speaker's own commands: the one table the offline grammar is written from and the recogniser's words are
/// read back with, each entry making the action the speaker already carries out for Houndify's command.
public enum OwnCommands {
    static let the = "[the | my]"
    static let timerWords = "(timer | timers)"

    public static let table: [OwnCommand] = [
        OwnCommand(.timerSet, [
            "[please] [(set | start | make)] [a | an] [<name>] timer for <duration>",
            "[please] [(set | start | make)] [a | an] <duration> [<name>] timer",
            "[please] (set | start) [a | an] [<name>] timer <duration>",
            "remind me in <duration>",
        ]) { f in f.seconds.map { .client(.timer(.set(seconds: $0, name: f.name ?? ""))) } },
        OwnCommand(.timerCancel, [
            "(cancel | stop | delete | remove | clear) \(the) [<name> | <duration> | <ordinal>] timer",
            "(cancel | stop | delete | remove | clear) all [the | my] timers",
        ]) { f in .client(.timer(.cancel(f.values.isEmpty && f.allSaid ? .all : f.timer))) },
        OwnCommand(.timerTimeLeft, [
            "how (much time | long) [is] left [on \(the) [<name> | <ordinal>] timer]",
            "how much longer [on \(the) [<name> | <ordinal>] timer]",
            "(what's | what is) left on \(the) [<name> | <ordinal>] timer",
            "(check | how's | how is) \(the) [<name> | <ordinal>] timer",
        ]) { f in .client(.timer(.timeLeft(f.timer))) },
        OwnCommand(.timerAddTime, [
            "add <duration> [to \(the) [<name> | <ordinal>] timer]",
            "add <duration> more",
        ]) { f in
            guard let seconds = f.seconds else { return nil }
            let which: TimerSelection = f.name.map { .named($0) } ?? f.number(.ordinal).map { .position($0) } ?? .the
            return .client(.timer(.addTime(seconds: seconds, which)))
        },
        OwnCommand(.timerPause, ["pause \(the) [<name> | <duration> | <ordinal>] timer", "pause it"]) { f in .client(.timer(.pause(f.timer))) },
        OwnCommand(.timerResume, ["(resume | continue | unpause | restart) \(the) [<name> | <duration> | <ordinal>] timer"]) { f in
            .client(.timer(.resume(f.timer)))
        },
        OwnCommand(.timerReset, ["reset \(the) [<name> | <duration> | <ordinal>] timer"]) { f in .client(.timer(.reset(f.timer))) },
        OwnCommand(.alarmSet, [
            "[please] set [an] alarm (for | at) <time> [tomorrow]",
            "[please] wake me [up] at <time> [tomorrow]",
            "[please] set [an] alarm <time>",
        ]) { f in
            guard var minute = f.minuteOfDay else { return nil }
            if f.wakeMe, f.noPartOfDay, (13 * 60..<19 * 60).contains(minute) { minute -= 12 * 60 }
            return .client(.alarm(.set(minuteOfDay: minute, days: [], name: "")))
        },
        OwnCommand(.alarmCancel, [
            "(cancel | delete | remove | turn off) \(the) [<time>] alarm",
            "(cancel | delete | remove | turn off) \(the) alarm (for | at) <time>",
            "(cancel | delete | remove | turn off) all [the | my] alarms",
        ]) { f in
            if let minute = f.minuteOfDay { return .client(.alarm(.cancel(.at(minuteOfDay: minute)))) }
            return .client(.alarm(.cancel(f.allSaid ? .all : .the)))
        },
        OwnCommand(.alarmList, [
            "(what | which) alarms [do i have | are set | have i set]",
            "do i have any alarms [set]",
            "(list | show) \(the) alarms",
        ]) { _ in .client(.alarm(.list)) },
        OwnCommand(.volumeStep, [
            "[please] turn [it | the volume | the sound] (up | down) [a bit]",
            "[please] turn (up | down) the (volume | sound)",
            "[the] volume (up | down)",
            "(louder | quieter | softer) [please]",
            "(increase | decrease | raise | lower) the volume",
        ]) { f in .client(.volume(.step(up: f.up))) },
        OwnCommand(.volumeBy, ["turn [it | the volume] (up | down) by <number> [percent]"]) { f in
            f.number(.number).map { .client(.volume(.by(f.up ? $0 : -$0))) }
        },
        OwnCommand(.volumeTo, ["[set] [the] volume [to] <percent>", "set it to <percent>"]) { f in
            f.number(.percent).map { .client(.volume(.to($0))) }
        },
        OwnCommand(.volumeMute, ["mute [the (sound | speaker)]", "sound off", "turn the sound off"]) { _ in .client(.volume(.mute(true))) },
        OwnCommand(.volumeUnmute, ["unmute [the (sound | speaker)]", "sound on", "turn the sound [back] on"]) { _ in .client(.volume(.mute(false))) },
        OwnCommand(.stop, [
            "stop [it] | cancel | never mind | be quiet | that's (all | it) | thank you [very much] | thanks | no thanks | nothing",
        ]) { _ in .local(.stop) },
        OwnCommand(.ipAddress, ["(what's | what is) [your] ip address", "(tell me | say) your ip address"]) { _ in .local(.ipAddress) },
        OwnCommand(.time, ["(what's | what is) the time [now]", "what time is it [now]", "tell me the time"]) { _ in .tellTime },
        OwnCommand(.date, [
            "(what's | what is) [the] date [today]",
            "(what's | what is) today's date",
            "what (day | date) is it [today]",
            "what day is today",
            "tell me the date",
        ]) { _ in .tellDate },
    ]

    /// What may come before a command: the hot phrase, or its end.
    static let wake: Pattern = {
        do { return try Pattern.parse("[ok | okay] hound") } catch { fatalError("the hot phrase's template: \(error)") }
    }()

    /// The command `heard` (the recogniser's words) says, nil when they are none of the table's.
    public static func match(_ heard: String) -> OwnAction? {
        var words = heard.lowercased().split(separator: " ").map(String.init)
        if let prefix = wake.paths(words, from: 0).first { words.removeFirst(prefix.end) }
        guard !words.isEmpty else { return nil }
        for command in table {
            for pattern in command.patterns {
                for path in pattern.paths(words, from: 0) where path.end == words.count {
                    var values: [Slot: SlotValue] = [:]
                    var ok = true
                    for (slot, range) in path.captures {
                        guard let v = slot.value(words[range]) else { ok = false; break }
                        values[slot] = v
                    }
                    guard ok else { continue }
                    let filled = Filled(values: values, words: words)
                    if let action = command.make(filled) { return action }
                }
            }
        }
        return nil
    }

    /// The whole grammar, in JSGF (as PocketSphinx reads it): one public rule of every template, and a rule per slot.
    public static var jsgf: String {
        var lines = ["#JSGF V1.0;", "", "grammar speaker;", ""]
        let all = table.flatMap(\.patterns).map(\.jsgf).map { "(\($0))" }
        // The end of "OK Hound" before a question the hot phrase woke (its pre-roll), or the whole phrase said to
        // `hound-speaker offline`: heard as such, not forced into a command's words.
        lines.append("public <command> = [\(wake.jsgf)] <own>;")
        lines.append("<own> = " + all.joined(separator: "\n    | ") + ";")
        lines.append("")
        for slot in Slot.allCases {
            lines.append("<\(slot.rawValue)> = \(slot.pattern.jsgf);")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Every word the grammar can produce (each must be in the recogniser's dictionary).
    public static var words: Set<String> {
        table.flatMap(\.patterns).reduce(into: wake.words) { $0.formUnion($1.words) }
    }
}

extension Filled {
    init(values: [Slot: SlotValue], words: [String]) {
        self.values = values
        allSaid = words.contains("all")
        up = !words.contains { ["down", "quieter", "softer", "decrease", "lower"].contains($0) }
        noPartOfDay = !words.contains { ["a.m.", "p.m.", "morning", "afternoon", "evening", "night"].contains($0) }
        wakeMe = words.contains("wake")
    }
}
