public import CommandSupport
import FoundationEssentials
import HotPhrase
import Houndify
public import JSONKit
import Platform
public import SpeakerConfig
import Timers

/// `hound-speaker ctl`: one command to a running speaker's control API (`POST /api/command`, docs/control-api.md),
/// over libcurl.
public enum ControlClient {
    /// `ctl WORDS...`: the command sent, and what its reply says printed (docs/control-api.md).
    public static func run(_ words: [String], configPath: String?) async throws {
        let request = try ControlClient.request(words)
        let context = try AppContext(configPath: configPath)
        let reply = try await ControlClient.send(request, config: context.config)
        switch request["command"]?.stringValue {
        case "text": for line in ControlClient.answerLines(reply) { printLine(line) }
        case "timers": for line in ControlClient.timerLines(reply) { printLine(line) }
        case "status": printLine(reply.asciiJSON())
        case "voices", "forget": for line in ControlClient.voiceLines(reply) { printLine(line) }
        case "enroll":
            guard try await ControlClient.followEnrollment(reply["enrollment"] ?? .null, config: context.config, print: printLine) else {
                throw CommandFailure(message: "nothing was kept", exitCode: 1)
            }
        default: break
        }
    }

    /// The command's JSON from the words a script types: `say dinner is ready`, `volume 30`, `cancel-timer pasta`.
    public static func request(_ words: [String]) throws(CommandFailure) -> JSONValue {
        guard let name = words.first else { throw usage("a command is needed") }
        let rest = words.dropFirst().joined(separator: " ")
        func needsWords(_ what: String) throws(CommandFailure) {
            if rest.allSatisfy(\.isWhitespace) { throw usage("\(name) needs \(what)") }
        }
        switch name {
        case "listen", "stop", "mute", "unmute", "status", "timers", "clear", "wake", "voices":
            guard rest.isEmpty else { throw usage("\(name) takes nothing after it") }
            return ["command": .string(name)]
        case "text":
            try needsWords("a question, e.g. ctl text what time is it")
            return ["command": "text", "query": .string(rest)]
        case "say":
            try needsWords("the words, e.g. ctl say dinner is ready")
            return ["command": "say", "text": .string(rest)]
        case "volume":
            switch rest {
            case "up", "down": return ["command": "volume", "step": .string(rest)]
            case "off": return ["command": "volume", "sound_off": true]
            case "on": return ["command": "volume", "sound_off": false]
            default:
                guard let percent = Int(rest), (0...100).contains(percent) else { throw usage("volume takes 0-100, up, down, off or on") }
                return ["command": "volume", "percent": .int(Int64(percent))]
            }
        case "cancel-timer", "cancel-alarm":
            try needsWords("a number (from ctl timers), a name, or all")
            var request: [String: JSONValue] = ["command": .string(name == "cancel-timer" ? "cancel_timer" : "cancel_alarm")]
            if rest == "all" { request["all"] = true } else if let id = Int(rest) { request["id"] = .int(Int64(id)) } else { request["name"] = .string(rest) }
            return .object(request)
        case "enroll":
            if rest.isEmpty { return ["command": "enroll"] }
            guard words.count > 2, words[1] == "--phrase", !words.dropFirst(2).allSatisfy({ $0.allSatisfy(\.isWhitespace) }) else {
                throw usage("enroll takes nothing (the hot phrase) or --phrase TEXT")
            }
            return ["command": "enroll", "phrase": .string(words.dropFirst(2).joined(separator: " "))]
        case "forget":
            try needsWords("a phrase (from ctl voices) or --negatives")
            if rest == "--negatives" { return ["command": "forget", "negatives": true] }
            return ["command": "forget", "phrase": .string(rest)]
        default:
            throw usage("unknown command \"\(name)\"")
        }
    }

    public static let commands = "listen, stop, text QUESTION, say WORDS, mute, unmute, volume N|up|down|off|on, status, timers, cancel-timer ID|NAME|all, cancel-alarm ID|NAME|all, clear, wake, voices, forget PHRASE|--negatives, enroll [--phrase TEXT]"

    static func usage(_ problem: String) -> CommandFailure {
        CommandFailure(message: "ctl: \(problem) (commands: \(commands))", exitCode: 64)
    }

    /// What `ctl text` prints of a reply: the answer, and what the speaker did, when it carried the question out
    /// itself (`"done"`: "stopped", "ran ..."), in brackets on a line of its own.
    public static func answerLines(_ reply: JSONValue) -> [String] {
        let answer = reply["answer"]?.stringValue ?? "", done = reply["done"]?.stringValue ?? ""
        return (answer.isEmpty && !done.isEmpty ? [] : [answer]) + (done.isEmpty ? [] : ["(\(done))"])
    }

    /// What `ctl timers` prints of the snapshot: each timer and alarm, one a line, with the number `cancel-timer`
    /// and `cancel-alarm` take; or that there are none.
    public static func timerLines(_ snapshot: JSONValue) -> [String] {
        let timers = snapshot["timers"]?.arrayValue ?? [], alarms = snapshot["alarms"]?.arrayValue ?? []
        guard !timers.isEmpty || !alarms.isEmpty else { return ["no timers or alarms"] }
        func named(_ item: JSONValue, _ kind: String) -> String {
            let name = item["name"]?.stringValue ?? ""
            return name.isEmpty || name == kind ? kind : "\(kind) \"\(name)\""
        }
        var lines = timers.map { timer in
            let left = Int(timer["remaining_s"]?.int64Value ?? 0), status = timer["status"]?.stringValue ?? "?"
            func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
            let time = left >= 3600 ? "\(left / 3600):\(two(left % 3600 / 60)):\(two(left % 60))" : "\(left / 60):\(two(left % 60))"
            return "\(timer["id"]?.int64Value ?? 0)  \(named(timer, "timer")): \(time) left of \(SpokenDuration.words(Int(timer["seconds"]?.int64Value ?? 0))), \(status)"
        }
        lines += alarms.map { alarm in
            let days = (alarm["days"]?.arrayValue ?? []).compactMap(\.stringValue)
            let when = (alarm["time"]?.stringValue ?? "?") + (days.isEmpty ? "" : " on " + days.joined(separator: ", "))
            return "\(alarm["id"]?.int64Value ?? 0)  \(named(alarm, "alarm")): \(when), \(alarm["status"]?.stringValue ?? "?")"
        }
        return lines
    }

    /// What `ctl voices` (and `ctl forget`) print of the household: each phrase with its takes (and how many
    /// templates answered wakes taught it, and its personal heads), one a line, its
    /// false wakes, and whether the personal scorer runs.
    public static func voiceLines(_ reply: JSONValue) -> [String] {
        let household = reply["household"] ?? .null
        let phrases = household["phrases"]?.arrayValue ?? []
        var lines = phrases.map { p in
            let added = (p["added"]?.arrayValue ?? []).compactMap(\.stringValue)
            let takes = p["takes"]?.int64Value ?? Int64(added.count)
            let learned = p["learned"]?.int64Value ?? 0
            let heads = p["heads"]?.int64Value ?? 0
            return "\"\(p["text"]?.stringValue ?? "?")\": \(takes) take\(takes == 1 ? "" : "s")" + (added.isEmpty ? "" : " (added \(added.joined(separator: ", ")))")
                + (learned > 0 ? "; \(learned) learned from answered wakes" : "")
                + (heads > 0 ? "; " + PersonalHead.counted(Int(heads)) : "")
        }
        if lines.isEmpty { lines = ["no phrases enrolled (hound-speaker enroll)"] }
        let negatives = household["negatives"]?.int64Value ?? 0
        lines.append("\(negatives) household false wake\(negatives == 1 ? "" : "s") kept")
        lines.append("personal scorer: " + (household["personal_active"]?.boolValue == true ? "active" : "off (the generic model alone)"))
        return lines
    }

    /// Follows the spoken enrollment just started (`enroll`'s reply, `first`) through the status until it ends,
    /// printing each step once as it is seen (`progressLine`); true when its takes were saved, false when it
    /// ended keeping nothing (the reason printed last).
    public static func followEnrollment(_ first: JSONValue, config: SpeakerConfiguration, print: (String) -> Void) async throws(CommandFailure) -> Bool {
        var last = ""
        var progress = first
        while true {
            let line = progressLine(progress)
            if line != last { print(line) }
            last = line
            switch progress["step"]?.stringValue {
            case "done": return true
            case "failed", "aborted", nil: return false
            default: break
            }
            try? await Task.sleep(for: .milliseconds(200))
            progress = try await send(["command": "status"], config: config)["enrollment"] ?? .null
        }
    }

    /// One step of a spoken enrollment, as `ctl enroll` and `hound-speaker enroll` print it.
    public static func progressLine(_ progress: JSONValue) -> String {
        let take = progress["take"]?.int64Value ?? 0, needed = progress["needed"]?.int64Value ?? 3
        let accepted = progress["accepted"]?.int64Value ?? 0, phrase = progress["phrase"]?.stringValue ?? "?"
        switch progress["step"]?.stringValue ?? "" {
        case "prompting":
            if let refusal = progress["refusal"]?.stringValue { return "take \(take) of \(needed): not kept: \(refusal)" }
            return accepted == 0 ? "say \"\(phrase)\" when asked" : "take \(accepted) of \(needed): kept"
        case "listening": return "take \(take) of \(needed): listening"
        case "checking": return "take \(take) of \(needed): checking"
        case "saving": return "take \(accepted) of \(needed): kept; saving"
        case "done": return "done: \"\(phrase)\" has \(accepted) new takes"
        case let step: return "\(step.isEmpty ? "no enrollment" : step): \(progress["reason"]?.stringValue ?? "")"
        }
    }

    /// Where the speaker of this config listens, as a URL a client on this machine can reach.
    public static func baseURL(_ config: SpeakerConfiguration) throws(CommandFailure) -> String {
        guard var address = config.control.listen else {
            throw CommandFailure(message: "\(config.path ?? "config"): [control] listen is \"\": the control API is off", exitCode: 78)
        }
        // A speaker listening on every address is reached here through loopback.
        if address.host == "0.0.0.0" { address.host = "127.0.0.1" }
        if address.host == "::" { address.host = "::1" }
        return "http://\(address)"
    }

    /// Sends the command; the reply's JSON, or why there is none.
    public static func send(_ request: JSONValue, config: SpeakerConfiguration) async throws(CommandFailure) -> JSONValue {
        let base = try baseURL(config)
        let token = config.control.token
        let outcome = await withCheckedContinuation { continuation in
            OwnedThread.start(name: "hs-ctl") {
                continuation.resume(returning: post(url: "\(base)/api/command", body: Array(request.asciiJSON().utf8), token: token))
            }
        }
        switch outcome {
        case .failure(let problem):
            throw CommandFailure(message: "cannot reach the speaker at \(base): \(problem) (is `hound-speaker run` running with this config's [control] listen?)")
        case .success(let (status, body)):
            guard let reply = try? JSONValue(parsing: Data(body)) else {
                throw CommandFailure(message: "\(base) answered HTTP \(status) without JSON: is it the speaker's control API?")
            }
            guard reply["ok"] == .bool(true) else {
                throw CommandFailure(message: "the speaker refused it (HTTP \(status)): \(reply["error"]?.stringValue ?? "no reason given")")
            }
            return reply
        }
    }

    /// One blocking POST (on the caller's own thread), through the Houndify layer's libcurl (never a proxy).
    static func post(url: String, body: [UInt8], token: String) -> Result<(Int, [UInt8]), LocalHTTP.Problem> {
        let headers = ["Content-Type: application/json"] + (token.isEmpty ? [] : ["Authorization: Bearer \(token)"])
        // A question waits for its answer (the API gives up at 30 s).
        return LocalHTTP.post(url: url, body: body, headers: headers, connectTimeoutMS: 3_000, timeoutMS: 40_000)
            .map { ($0.status, $0.body) }
    }
}
