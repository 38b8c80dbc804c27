import JSONKit
public import SpeakerCore
import Timers
import BoardCore

extension HomeAssistantDevice {
    /// One retained message: an entity's state or attributes.
    public struct Message: Sendable, Equatable {
        public var topic: String
        public var payload: String
        public init(_ topic: String, _ payload: String) {
            self.topic = topic
            self.payload = payload
        }
    }

    /// Home Assistant keeps a sensor's state to 255 characters (a longer one is refused and logged there); the
    /// whole text goes in the attributes.
    public static let longestState = 255

    /// The state word for the snapshot: what the speaker is doing, else why it is not ready to listen.
    public static func stateWord(_ snapshot: SpeakerSnapshot) -> StateWord {
        switch snapshot.state {
        case .recording: return .listening
        case .searching: return .thinking
        case .speaking: return .speaking
        case .ringing: return .ringing
        case .enrolling: return .enrolling
        case .none, .ready:
            if snapshot.timers.contains(where: \.isRinging) || snapshot.alarms.contains(where: \.isRinging) { return .ringing }
            if snapshot.muted { return .muted }
            if snapshot.leds == .setup { return .setup }
            if snapshot.offline { return .offline }
            return .idle
        }
    }

    /// Every entity's retained state (and attributes) for the snapshot. `wallNow`: the wall clock, in seconds since
    /// 1970, that the next timer's end is counted from. Payloads are never empty: an empty retained message would
    /// delete the retained state at the broker; "None" is Home Assistant's "unknown".
    public func states(_ snapshot: SpeakerSnapshot, wallNow: Double) -> [Message] {
        var out: [Message] = [
            Message(stateTopic(.state), Self.stateWord(snapshot).rawValue),
            Message(stateTopic(.mute), snapshot.muted ? "ON" : "OFF"),
            Message(stateTopic(.volume), String(snapshot.volume)),
        ]
        for (entity, text) in [(Entity.question, snapshot.transcript), (.answer, snapshot.answer)] {
            out.append(Message(stateTopic(entity), Self.shortened(text)))
            out.append(Message(attributesTopic(entity), JSONValue.object(["text": .string(text)]).asciiJSON()))
        }
        let next = snapshot.timers.filter { $0.isRunning || $0.isRinging }
            .min { $0.remainingSeconds(at: snapshot.now) < $1.remainingSeconds(at: snapshot.now) }
        var attributes: [String: JSONValue] = ["timers": .int(Int64(snapshot.timers.count))]
        if let next {
            let remaining = next.remainingSeconds(at: snapshot.now)
            let ends = next.isRinging ? wallNow : wallNow + Double(remaining)
            out.append(Message(stateTopic(.nextTimer), Self.isoTime(ends)))
            attributes["name"] = .string(next.name)
            attributes["remaining_s"] = .int(Int64(remaining))
            attributes["status"] = .string(next.isRinging ? "ringing" : "running")
        } else {
            out.append(Message(stateTopic(.nextTimer), "None"))
        }
        out.append(Message(attributesTopic(.nextTimer), JSONValue.object(attributes).asciiJSON()))
        if hasRing, let ring = snapshot.ring {
            let light: JSONValue = ["state": .string(ring.on ? "ON" : "OFF"), "brightness": .int(Int64(ring.percent)),
                                    "color_mode": "brightness"]
            out.append(Message(stateTopic(.ring), light.asciiJSON()))
        }
        return out
    }

    static func shortened(_ text: String) -> String {
        if text.isEmpty { return "None" }
        let scalars = text.unicodeScalars
        guard scalars.count > longestState else { return text }
        var view = String.UnicodeScalarView()
        view.append(contentsOf: scalars.prefix(longestState - 1))
        view.append("…")
        return String(view)
    }

    /// `seconds` since 1970 as ISO 8601 in UTC, to the second (Home Assistant's timestamp sensors read it).
    public static func isoTime(_ seconds: Double) -> String {
        let whole = seconds.isFinite ? Int(max(-1e12, min(1e12, seconds)).rounded(.down)) : 0
        let days = whole >= 0 ? whole / 86_400 : (whole - 86_399) / 86_400
        let secondOfDay = whole - days * 86_400
        let (year, month, day) = CivilDate.civil(days: days)
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let y = year >= 0 && year < 10_000 ? String(repeating: "0", count: 4 - String(year).count) + String(year) : String(year)
        return "\(y)-\(two(month))-\(two(day))T\(two(secondOfDay / 3600)):\(two(secondOfDay % 3600 / 60)):\(two(secondOfDay % 60))+00:00"
    }
}

/// What has been published on this connection, and what a new set of states changes of it. The next timer's end,
/// counted from the wall clock at each look, moves by a second now and then with nothing changed: a move of at most
/// `timerSlack` seconds is not published again.
public struct PublishedStates: Sendable, Equatable {
    private var last: [String: String] = [:]
    public static let timerSlack: Int64 = 2

    public init() {}

    /// Everything is published again (a new connection, or Home Assistant restarted).
    public mutating func forget() { last = [:] }

    /// The messages of `states` that differ from what was published, which they now are.
    public mutating func changes(_ states: [HomeAssistantDevice.Message], timerTopic: String) -> [HomeAssistantDevice.Message] {
        var out: [HomeAssistantDevice.Message] = []
        for message in states where last[message.topic] != message.payload {
            if message.topic == timerTopic, let old = last[message.topic].flatMap(Self.seconds), let new = Self.seconds(message.payload),
               abs(new - old) <= Self.timerSlack {
                continue
            }
            last[message.topic] = message.payload
            out.append(message)
        }
        return out
    }

    /// The seconds since 1970 of an `isoTime` (nil for "None").
    static func seconds(_ iso: String) -> Int64? {
        let parts = iso.split(whereSeparator: { "-T:+".contains($0) }).map { Int($0) }
        guard parts.count >= 6, let y = parts[0], let mo = parts[1], let d = parts[2], let h = parts[3], let mi = parts[4], let s = parts[5] else {
            return nil
        }
        return Int64(CivilDate.days(year: y, month: mo, day: d)) * 86_400 + Int64(h * 3600 + mi * 60 + s)
    }
}
