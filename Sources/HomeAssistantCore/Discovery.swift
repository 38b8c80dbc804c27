public import ControlCore
import FoundationEssentials
import BoardCore
import JSONKit
import SpeakerCore

/// The speaker as Home Assistant's MQTT integration discovers it (issue #65; Home Assistant's "MQTT discovery"
/// documentation): one device, its entities' retained configs, their states, and the commands they send back.
/// Pure: the broker connection (HomeAssistant) publishes what this says.
public struct HomeAssistantDevice: Sendable, Equatable {
    /// Home Assistant's discovery prefix (`homeassistant`).
    public var discoveryPrefix: String
    /// The device's id in topics and in Home Assistant's registry.
    public var nodeID: String
    /// The device's name.
    public var name: String
    /// The speaker's version, shown on the device's page.
    public var version: String
    /// The board has an LED ring: it is a light entity.
    public var hasRing: Bool

    public init(discoveryPrefix: String, nodeID: String, name: String, version: String, hasRing: Bool = false) {
        self.discoveryPrefix = discoveryPrefix
        self.nodeID = nodeID
        self.name = name
        self.version = version
        self.hasRing = hasRing
    }

    /// The entities this speaker has (the ring only where the board has one).
    public var entities: [Entity] { Entity.allCases.filter { $0 != .ring || hasRing } }

    /// Every topic of the speaker's own starts here.
    public var base: String { "hound-speaker/\(nodeID)" }
    /// "online" (retained) while connected; the broker's last will sets "offline".
    public var availabilityTopic: String { "\(base)/availability" }
    /// Home Assistant says "online" here when it (re)starts: the configs are published again.
    public var birthTopic: String { "\(discoveryPrefix)/status" }

    /// The entities, each under `<prefix>/<component>/<node>/<object>/config`.
    public enum Entity: String, Sendable, CaseIterable {
        case state, mute, volume, question, answer, nextTimer = "next_timer", button, announce, stop, ring

        var component: String {
            switch self {
            case .state, .question, .answer, .nextTimer: "sensor"
            case .mute: "switch"
            case .volume: "number"
            case .button: "event"
            case .announce: "notify"
            case .stop: "button"
            case .ring: "light"
            }
        }

        var name: String {
            switch self {
            case .state: "State"
            case .mute: "Mute"
            case .volume: "Volume"
            case .question: "Last question"
            case .answer: "Last answer"
            case .nextTimer: "Next timer"
            case .button: "Button"
            case .announce: "Announce"
            case .stop: "Stop"
            case .ring: "LED ring"
            }
        }
    }

    /// The words the state sensor takes (its `options`).
    public enum StateWord: String, Sendable, CaseIterable {
        case idle, listening, thinking, speaking, ringing, offline, muted, enrolling, setup
    }

    /// What the button's event entity fires.
    public enum ButtonEvent: String, Sendable, CaseIterable {
        case press, double, long
    }

    public func stateTopic(_ entity: Entity) -> String { "\(base)/\(entity.rawValue)" }
    public func attributesTopic(_ entity: Entity) -> String { "\(base)/\(entity.rawValue)/attributes" }
    public func commandTopic(_ entity: Entity) -> String { "\(base)/\(entity.rawValue)/set" }
    public func configTopic(_ entity: Entity) -> String {
        "\(discoveryPrefix)/\(entity.component)/\(nodeID)/\(entity.rawValue)/config"
    }

    /// The topics the speaker subscribes to: every entity's commands and Home Assistant's birth.
    public var subscriptions: [String] {
        entities.filter(\.takesCommands).map(commandTopic) + [birthTopic]
    }

    /// Each entity's retained discovery config, in `Entity` order. Without a ring, the ring's config topic gets an
    /// empty retained message, which removes the light a board with a ring once had (Home Assistant's rule).
    public var configs: [(topic: String, payload: String)] {
        Entity.allCases.map { entity in
            (configTopic(entity), entities.contains(entity) ? JSONValue.object(config(entity)).asciiJSON() : "")
        }
    }

    func config(_ entity: Entity) -> [String: JSONValue] {
        var c: [String: JSONValue] = [
            "name": .string(entity.name),
            "unique_id": .string("hound_speaker_\(nodeID)_\(entity.rawValue)"),
            // The entity's id in Home Assistant ("notify.kitchen_speaker_announce"); object_id before 2025.10.
            "default_entity_id": .string("\(entity.component).\(slug(name))_\(entity.rawValue)"),
            "availability_topic": .string(availabilityTopic),
            "device": .object([
                "identifiers": .array([.string("hound_speaker_\(nodeID)")]),
                "name": .string(name), "manufacturer": "hound-speaker", "model": "Raspberry Pi speaker (Houndify)",
                "sw_version": .string(version),
            ]),
            "origin": .object(["name": "hound-speaker", "sw_version": .string(version)]),
        ]
        if entity.takesCommands { c["command_topic"] = .string(commandTopic(entity)) }
        switch entity {
        case .state:
            c["state_topic"] = .string(stateTopic(entity))
            c["device_class"] = "enum"
            c["options"] = .array(StateWord.allCases.map { .string($0.rawValue) })
            c["icon"] = "mdi:speaker-message"
        case .mute:
            c["state_topic"] = .string(stateTopic(entity))
            c["payload_on"] = "ON"
            c["payload_off"] = "OFF"
            c["icon"] = "mdi:microphone-off"
        case .volume:
            c["state_topic"] = .string(stateTopic(entity))
            c["min"] = 0
            c["max"] = 100
            c["step"] = 1
            c["unit_of_measurement"] = "%"
            c["mode"] = "slider"
            c["icon"] = "mdi:volume-high"
        case .question, .answer:
            c["state_topic"] = .string(stateTopic(entity))
            c["json_attributes_topic"] = .string(attributesTopic(entity))
            c["icon"] = entity == .question ? "mdi:account-voice" : "mdi:message-reply-text"
        case .nextTimer:
            c["state_topic"] = .string(stateTopic(entity))
            c["json_attributes_topic"] = .string(attributesTopic(entity))
            c["device_class"] = "timestamp"
            c["icon"] = "mdi:timer-outline"
        case .button:
            c["state_topic"] = .string(stateTopic(entity))
            c["event_types"] = .array(ButtonEvent.allCases.map { .string($0.rawValue) })
            c["device_class"] = "button"
        case .announce:
            c["icon"] = "mdi:bullhorn"
        case .stop:
            c["payload_press"] = "PRESS"
            c["icon"] = "mdi:stop"
        case .ring:
            // The JSON schema: {"state": "ON", "brightness": 40}, brightness in percent both ways.
            c["schema"] = "json"
            c["state_topic"] = .string(stateTopic(entity))
            c["brightness"] = true
            c["brightness_scale"] = .int(Int64(RingSetting.percentRange.upperBound))
            c["supported_color_modes"] = ["brightness"]
            c["icon"] = "mdi:led-strip-variant"
        }
        return c
    }

    /// The command a message on one of the command topics asks for, read as the control API reads its own (the
    /// same checks, so the same refusals); nil when the topic is none of the speaker's command topics.
    public func command(topic: String, payload: [UInt8]) -> Result<ControlCommand, ControlCommand.Problem>? {
        guard let entity = entities.first(where: { $0.takesCommands && commandTopic($0) == topic }) else { return nil }
        guard let text = String(validating: payload, as: UTF8.self) else {
            return .failure(.init("\(entity.name): the message is not UTF-8 text"))
        }
        let trimmed = text.trimmingWhitespace
        let request: JSONValue
        switch entity {
        case .mute:
            switch trimmed.uppercased() {
            case "ON": request = ["command": "mute"]
            case "OFF": request = ["command": "unmute"]
            default: return .failure(.init("Mute: \"ON\" or \"OFF\", not \"\(trimmed.prefix(40))\""))
            }
        case .volume:
            // Home Assistant's number sends "35" or "35.0".
            guard let value = Double(trimmed), value.isFinite, abs(value) < 1e9 else {
                return .failure(.init("Volume: a number from 0 to 100, not \"\(trimmed.prefix(40))\""))
            }
            request = ["command": "volume", "percent": .int(Int64(value.rounded()))]
        case .announce: request = ["command": "say", "text": .string(text)]
        case .stop: request = ["command": "stop"]
        case .ring:
            guard let message = try? JSONValue(parsing: Data(trimmed.utf8)), let object = message.objectValue else {
                return .failure(.init("LED ring: a JSON object such as {\"state\": \"ON\", \"brightness\": 40}, not \"\(trimmed.prefix(40))\""))
            }
            var ring: [String: JSONValue] = ["command": "ring"]
            switch object["state"]?.stringValue?.uppercased() {
            case "ON"?: ring["on"] = true
            case "OFF"?: ring["on"] = false
            case nil: break
            case let other?: return .failure(.init("LED ring: \"state\" is \"ON\" or \"OFF\", not \"\(other.prefix(40))\""))
            }
            if let brightness = object["brightness"] {
                // Home Assistant scales to brightness_scale (100) and may send a fraction; 0 would be off.
                guard let value = brightness.doubleValue, value.isFinite, abs(value) < 1e9 else {
                    return .failure(.init("LED ring: \"brightness\" is a number from 1 to 100"))
                }
                ring["percent"] = .int(Int64(value.rounded()))
            }
            request = .object(ring)
        case .state, .question, .answer, .nextTimer, .button: return nil
        }
        do throws(ControlCommand.Problem) {
            return .success(try ControlCommand.parse(request))
        } catch {
            return .failure(.init("\(entity.name): \(error.description)"))
        }
    }
}

extension HomeAssistantDevice.Entity {
    var takesCommands: Bool { self == .mute || self == .volume || self == .announce || self == .stop || self == .ring }
}

/// Lower-case letters, digits and _ (Home Assistant's entity ids).
func slug(_ text: String) -> String {
    var out = ""
    for c in text.lowercased() {
        if c.isASCII && (c.isLetter || c.isNumber) { out.append(c) } else if !out.hasSuffix("_") { out.append("_") }
    }
    while out.hasSuffix("_") { out.removeLast() }
    while out.hasPrefix("_") { out.removeFirst() }
    return out.isEmpty ? "hound_speaker" : out
}

extension String {
    var trimmingWhitespace: String {
        var s = Substring(self)
        while let f = s.first, f.isWhitespace { s.removeFirst() }
        while let l = s.last, l.isWhitespace { s.removeLast() }
        return String(s)
    }
}
