import Audio
import AudioCore
import FoundationEssentials
public import Houndify
public import HoundifyCore
public import JSONKit
public import SpeakerCore
import Timers

/// Reads Houndify's answer into what the speaker does (docs/houndify-protocol.md, "Client commands"): the timer,
/// alarm and volume commands it carries out, with the dynamic responses for each outcome; the answers that need a
/// feature it has (RequiredFeatures); the client actions it cannot do (a call, a message, music), which get a
/// sentence of their own rather than Houndify's "not supported by this client"; and the plain answers.
public struct ClientCommandReader: Sendable {
    /// Say `SpokenResponseLong` (true) or `SpokenResponse`.
    public var longAnswers: Bool
    /// The client features Houndify may ask for in `RequiredFeatures`.
    public var supportedFeatures: Set<String>
    /// The owner's phrases, as sent in ClientMatches (their index comes back in the ClientMatchCommand).
    public var clientMatches: [HoundifySettings.ClientMatch]

    public init(longAnswers: Bool = true, supportedFeatures: Set<String> = [], clientMatches: [HoundifySettings.ClientMatch] = []) {
        self.longAnswers = longAnswers
        self.supportedFeatures = supportedFeatures
        self.clientMatches = clientMatches
    }

    /// Result kinds that only ever ask the client to act, which a speaker cannot: a phone, messages, a music
    /// player, a map. (Most client actions also carry ClientActionSucceededResult, which is enough to tell.)
    static let actionsElsewhere: Set<String> = ["PhoneCommand", "SMSCommand", "EmailCommand", "MusicPlayerCommand", "NavigationCommand"]

    /// The answer, and the conversation state to keep at once when the branch is already known here (an answer
    /// the speaker cannot act on, or RequiredFeaturesSupportedResult). For an action, the loop keeps the state of
    /// the branch it took (`ActionResponses`).
    public func read(_ response: HoundServerResponse) -> (answer: SpeakerAnswer, keepNow: JSONValue?) {
        let transcript = response.transcript ?? ""
        guard let best = response.best else { return (SpeakerAnswer(transcript: transcript, text: ""), nil) }
        if homeAssistantPhrase(best) {
            var answer = SpeakerAnswer(transcript: transcript, text: best.text(long: longAnswers))
            answer.handOff = .always
            return (answer, best.conversationState)
        }
        if let action = clientAction(best) {
            return (SpeakerAnswer(transcript: transcript, text: best.text(long: longAnswers), action: action.action,
                                  responses: action.responses), nil)
        }
        if !best.requiredFeatures.isEmpty, best.requiredFeatures.allSatisfy(supportedFeatures.contains),
           let supported = best.dynamicResponse("RequiredFeaturesSupportedResult") {
            return (SpeakerAnswer(transcript: transcript, text: supported.text(long: longAnswers), autoListen: supported.autoListen),
                    supported.conversationState ?? best.conversationState)
        }
        if Self.actionsElsewhere.contains(best.commandKind)
            || best.dynamicResponse("ClientActionSucceededResult") != nil || best.dynamicResponse("ClientActionFailedResult") != nil {
            // Home Assistant may be able to (Houndify's home-automation commands are client actions too).
            var answer = SpeakerAnswer(transcript: transcript, text: SpeakerAnswer.cannotDoThat)
            answer.handOff = .ifUnderstood
            return (answer, best.conversationState)
        }
        var answer = SpeakerAnswer(transcript: transcript, text: best.text(long: longAnswers), autoListen: best.autoListen,
                                   voice: Self.recording(best), display: Self.display(best))
        if best.commandKind == "NoResultCommand" { answer.handOff = .ifUnderstood }
        return (answer, best.isClientAction ? best.conversationState : nil)
    }

    /// One of the owner's phrases tied to Home Assistant (`home_assistant = true`).
    func homeAssistantPhrase(_ result: CommandResult) -> Bool {
        guard result.commandKind == "ClientMatchCommand", let index = result.json["Result"]?["HoundSpeakerMatch"]?.int64Value,
              clientMatches.indices.contains(Int(index)) else { return false }
        return clientMatches[Int(index)].action == .homeAssistant
    }

    /// Why `text` and `voice`, which only print, cannot give this answer (nil: they can): it is a command the speaker
    /// carries out itself (a timer, an alarm, the volume, one of the owner's phrases), whose words depend on what it
    /// did. Houndify's own text for it is a fallback ("Timers are not supported by this client."), not the answer.
    public func notCarriedOutHere(_ response: HoundServerResponse, query: String) -> String? {
        guard let best = response.best else { return nil }
        let quoted = query.contains("\"") ? "'\(query)'" : "\"\(query)\""
        if homeAssistantPhrase(best) {
            return "not answered here: that is one of the owner's phrases ([[houndify.client_match]]) the speaker hands to Home Assistant. "
                + "Ask the speaker (`hound-speaker run`), or, while it runs, `hound-speaker ctl text \(quoted)`"
        }
        guard let (action, _) = clientAction(best) else { return nil }
        let what = switch action {
        case .timer: "timers live on the speaker, which sets them"
        case .alarm: "alarms live on the speaker, which sets them"
        case .volume: "the volume is the speaker's to change"
        case .run, .muteMicrophone: "that is one of the owner's phrases ([[houndify.client_match]]), which the speaker carries out"
        }
        return "not answered here: \(what). Ask the speaker (`hound-speaker run`), or, while it runs, `hound-speaker ctl text \(quoted)`"
    }

    /// The parts of a result a screen shows (docs/control-api.md, "display"); nil when it has none of them.
    static func display(_ result: CommandResult) -> JSONValue? {
        var shown: [String: JSONValue] = [:]
        for key in ["WrittenResponse", "WrittenResponseLong", "ViewType", "TemplateName", "TemplateData", "HTMLData", "NativeData"] {
            if let value = result.json[key], value != .null { shown[key] = value }
        }
        if let weather = WeatherCard.read(result.json) { shown["Weather"] = weather }
        return shown.keys.contains(where: { $0 != "WrittenResponse" && $0 != "WrittenResponseLong" && $0 != "ViewType" }) ? .object(shown) : nil
    }

    /// Houndify's own voice for the answer (`ResponseAudioBytes`, base64 of a WAV, when RequestInfo asked for a
    /// `ResponseAudioVoice`), decoded by libsndfile. Nil (espeak-ng speaks instead) when there is none, the
    /// service refused it (`ResponseAudioError`) or it cannot be read.
    static func recording(_ result: CommandResult) -> MonoAudio? {
        guard let base64 = result.json["ResponseAudioBytes"]?.stringValue, let data = Data(base64Encoded: base64), !data.isEmpty else {
            return nil
        }
        return data.withUnsafeBytes { try? AudioFile.readMono(bytes: $0, name: "Houndify's ResponseAudioBytes", targetRate: 22_050) }
    }

    // MARK: Commands the speaker carries out

    func clientAction(_ result: CommandResult) -> (action: ClientAction, responses: ActionResponses)? {
        let json = result.json
        let native = json["NativeData"]
        let action: ClientAction
        switch result.commandKind {
        case "TimerCommand":
            guard let timer = Self.timerAction(json["TimerCommandKind"]?.stringValue ?? "", native) else { return nil }
            action = .timer(timer)
        case "AlarmCommand":
            guard let alarm = Self.alarmAction(json["AlarmCommandKind"]?.stringValue ?? "", native) else { return nil }
            action = .alarm(alarm)
        case "DeviceControlCommand":
            guard json["DeviceControlCommandKind"]?.stringValue == "VolumeCommand", let volume = Self.volumeAction(json) else { return nil }
            action = .volume(volume)
        case "ClientMatchCommand":
            // One of the owner's phrases: its Result holds the index it was sent with.
            guard let index = json["Result"]?["HoundSpeakerMatch"]?.int64Value, clientMatches.indices.contains(Int(index)) else { return nil }
            let said = DynamicReply(result.text(long: longAnswers), conversationState: result.conversationState)
            let done = ActionResponses(succeeded: said, conversationState: result.conversationState)
            switch clientMatches[Int(index)].action {
            case .homeAssistant: return nil  // no action of the speaker's: `read` hands the words over
            case .run(let command): return (.run(command: command), done)
            case .builtIn(.microphoneOff): return (.muteMicrophone, done)
            case .builtIn(.volumeUp): return (.volume(.step(up: true)), done)
            case .builtIn(.volumeDown): return (.volume(.step(up: false)), done)
            case .builtIn(.soundOff): return (.volume(.mute(true)), done)
            case .builtIn(.soundOn): return (.volume(.mute(false)), done)
            }
        default:
            return nil
        }
        return (action, responses(result))
    }

    /// Each outcome's branch: a set or volume command has ClientActionSucceededResult and ClientActionFailedResult;
    /// a command on existing timers has `<Verb>SingleDynamicResponse`, `...Multi...`, `...All...`, `...NoMatch...`.
    func responses(_ result: CommandResult) -> ActionResponses {
        func reply(_ response: DynamicResponse?) -> DynamicReply? {
            response.map { DynamicReply($0.text(long: longAnswers), conversationState: $0.conversationState) }
        }
        let single = result.dynamicResponse(endingWith: "SingleDynamicResponse")
        let several = result.dynamicResponse(endingWith: "MultiDynamicResponse") ?? result.dynamicResponse(endingWith: "AllDynamicResponse")
        let noMatch = result.dynamicResponse(endingWith: "NoMatchDynamicResponse")
        return ActionResponses(
            succeeded: reply(result.dynamicResponse("ClientActionSucceededResult") ?? single),
            succeededSeveral: reply(several),
            noMatch: reply(noMatch),
            failed: reply(result.dynamicResponse("ClientActionFailedResult")),
            conversationState: result.conversationState)
    }

    static func timerAction(_ kind: String, _ native: JSONValue?) -> TimerAction? {
        let selection = timerSelection(native?["TimerCriteria"])
        switch kind {
        case "TimerSetCommand":
            guard let timer = native?["Timer"] ?? native?["Timers"]?[0] else { return nil }
            // IsCountdown false is a stopwatch, which this speaker does not have.
            if timer["IsCountdown"]?.boolValue == false { return nil }
            return .set(seconds: duration(timer) ?? 0, name: timer["Title"]?.stringValue ?? "")
        case "TimerAddTimeCommand":
            let criterion = native?["TimerCriteria"]?[0]
            guard let seconds = criterion?["SecondsToAdd"]?.doubleValue.map(wholeSeconds) ?? native?["Timer"].flatMap(duration) else { return nil }
            return .addTime(seconds: seconds, selection)
        case "TimerDeleteCommand", "TimerUnsetCommand": return .cancel(selection)
        case "TimerDisplayCommand": return .timeLeft(selection)
        case "TimerResetCommand": return .reset(selection)
        case "TimerResumeCommand": return .resume(selection)
        case "TimerStopCommand": return .pause(selection)
        default: return nil  // TimerStartModeCommand, TimerNotUnderstoodCommand: Houndify's own words
        }
    }

    /// No criteria: every timer (Houndify then picks the All, Single or Multi branch by how many there are);
    /// otherwise the first criterion, by title, position or length.
    static func timerSelection(_ criteria: JSONValue?) -> TimerSelection {
        guard let criterion = criteria?[0] ?? criteria.flatMap({ $0.objectValue == nil ? nil : $0 }) else { return .all }
        if let title = criterion["Title"]?.stringValue, !title.allSatisfy(\.isWhitespace) { return .named(title) }
        if let position = criterion["Position"]?.int64Value, position > 0 { return .position(Int(position)) }
        if let seconds = duration(criterion), seconds > 0 { return .length(seconds: seconds) }
        return .the
    }

    /// Seconds from Houndify, as a whole number that cannot trap: a length beyond Int32 is as absurd as one at its
    /// edge (TimerBook refuses anything over a day, saying so), and a NaN (inf - inf among the parts) is no length.
    static func wholeSeconds(_ value: Double) -> Int {
        Saturating.int(value, in: Int(Int32.min)...Int(Int32.max))
    }

    /// A Timer's or criterion's length: DurationInSeconds, else the sum of its parts (Hours, Minutes, ...).
    static func duration(_ timer: JSONValue) -> Int? {
        if let seconds = timer["DurationInSeconds"]?.doubleValue { return wholeSeconds(seconds) }
        let parts: [(String, Double)] = [("Centuries", 3_153_600_000), ("Decades", 315_360_000), ("Years", 31_536_000),
                                         ("Months", 2_592_000), ("Weeks", 604_800), ("Days", 86_400), ("Hours", 3_600),
                                         ("Minutes", 60), ("Seconds", 1)]
        var total = 0.0, any = false
        for (key, unit) in parts {
            if let n = timer[key]?.doubleValue { total += n * unit; any = true }
        }
        return any ? wholeSeconds(total) : nil
    }

    static func alarmAction(_ kind: String, _ native: JSONValue?) -> AlarmAction? {
        switch kind {
        case "AlarmSetCommand":
            guard let alarm = native?["Alarms"]?[0] ?? native?["Alarm"], let hour = alarm["Hour"]?.int64Value else { return nil }
            var days = Set((alarm["DaysOfWeek"]?.arrayValue ?? []).compactMap { $0.stringValue.flatMap(weekday) })
            if days.isEmpty, alarm["IsRecurring"]?.boolValue == true { days = Set(Weekday.allCases) }
            return .set(minuteOfDay: minuteOfDay(hour: hour, minute: alarm["Minute"]?.int64Value ?? 0), days: days, name: alarm["Title"]?.stringValue ?? "")
        case "AlarmUnsetCommand":
            guard let criterion = native?["AlarmCriteria"]?[0] else { return .cancel(.all) }
            if let title = criterion["Title"]?.stringValue, !title.allSatisfy(\.isWhitespace) { return .cancel(.named(title)) }
            if let hour = criterion["Hour"]?.int64Value {
                return .cancel(.at(minuteOfDay: minuteOfDay(hour: hour, minute: criterion["Minute"]?.int64Value ?? 0)))
            }
            return .cancel(.the)
        case "AlarmDisplayCommand": return .list
        default: return nil  // AlarmStartCommand (Houndify asks for the time), AlarmNotUnderstoodCommand
        }
    }

    static func weekday(_ name: String) -> Weekday? { Weekday.allCases.first { $0.name == name } }

    /// Minutes after midnight, or -1 (no time of day: TimerBook answers "What time should the alarm be for?", and
    /// a cancel matches nothing) when the hour or minute is out of range; `hour * 60` on any Int64 could trap.
    static func minuteOfDay(hour: Int64, minute: Int64) -> Int {
        guard (0..<24).contains(hour), (0..<60).contains(minute) else { return -1 }
        return Int(hour) * 60 + Int(minute)
    }

    /// VolumeCommand: `CommandType` AdjustVolume (by `VolumeDelta`),
    /// SetVolume (`VolumeValue` or `VolumeLevel`), MuteSound, UnMuteSound. A value of at most 1 is read as a
    /// fraction of the range, above 1 as a percentage.
    static func volumeAction(_ json: JSONValue) -> VolumeAction? {
        // Saturating at the ends of the range: a level or step beyond them means the end, and Int(_:) would trap.
        func percent(_ value: Double) -> Int { Saturating.int(abs(value) <= 1 ? value * 100 : value, in: -100...100) }
        switch json["CommandType"]?.stringValue {
        case "AdjustVolume":
            guard let delta = json["VolumeDelta"]?.doubleValue, delta != 0 else { return nil }
            return .by(percent(delta))
        case "SetVolume":
            guard let value = json["VolumeValue"]?.doubleValue ?? json["VolumeLevel"]?.doubleValue else { return nil }
            return .to(max(0, percent(value)))
        case "MuteSound": return .mute(true)
        case "UnMuteSound": return .mute(false)
        default: return nil
        }
    }
}
