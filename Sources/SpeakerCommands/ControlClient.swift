public import CommandSupport
import ControlCore
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
        let (name, command) = try ControlClient.command(words)
        let context = try AppContext(configPath: configPath)
        let reply = try await ControlClient.send(command.json(named: name), config: context.config)
        switch name {
        case .text: for line in ControlClient.answerLines(reply) { printLine(line) }
        case .timers: for line in ControlClient.timerLines(reply) { printLine(line) }
        case .status: printLine(reply.asciiJSON())
        case .voices, .forget, .reloadHousehold: for line in ControlClient.voiceLines(reply) { printLine(line) }
        case .enroll:
            guard try await ControlClient.followEnrollment(reply["enrollment"] ?? .null, config: context.config, print: printLine) else {
                throw CommandFailure(message: "nothing was kept", exitCode: 1)
            }
        case .ring:
            let ring = reply["ring"] ?? .null
            printLine(ring["on"]?.boolValue == true ? "LED ring on at \(ring["percent"]?.int64Value ?? 0) %" : "LED ring off")
        case .listen, .stop, .say, .mute, .unmute, .volume, .cancelTimer, .cancelAlarm, .clear, .wake: break
        }
    }

    /// The command for the words a script types (`say dinner is ready`, `volume 30`, `cancel-timer pasta`), read
    /// as the control API's vocabulary says (ControlCommand.parse(words:)), with the name typed.
    static func command(_ words: [String]) throws(CommandFailure) -> (name: ControlCommand.Name, command: ControlCommand) {
        do { return try ControlCommand.parse(words: words) } catch { throw usage(error.description) }
    }

    /// The commands and what follows each, as the usage lists them.
    public static let commands = ControlCommand.usage

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
            progress = try await send(ControlCommand.status.json, config: config)["enrollment"] ?? .null
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
