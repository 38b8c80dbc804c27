import BoardCore
import ControlCore
import Foundation
import HomeAssistantCore
import JSONKit
import SpeakerCore
import Testing
import Timers

let kitchen = HomeAssistantDevice(discoveryPrefix: "homeassistant", nodeID: "kitchen", name: "Kitchen Speaker", version: "0.1.0")

func parse(_ text: String) throws -> JSONValue { try JSONValue(parsing: Data(text.utf8)) }

func snapshot(state: SpeakerState = .ready, muted: Bool = false, offline: Bool = false, volume: Int = 40,
              timers: [SpeakerTimer] = [], alarms: [SpeakerAlarm] = [], now: BootTime = 1000) -> SpeakerSnapshot {
    SpeakerSnapshot(state: state, muted: muted, offline: offline, volume: volume, soundOff: false, timers: timers, alarms: alarms, now: now)
}

@Suite struct DiscoveryTests {
    /// Each config as Home Assistant's MQTT discovery reads it: the topic's component and object, one device, the
    /// availability topic, and the fields each platform needs.
    @Test func everyEntityIsDiscoveredAsOneDevice() throws {
        let configs = kitchen.configs
        #expect(configs.map(\.topic) == [
            "homeassistant/sensor/kitchen/state/config", "homeassistant/switch/kitchen/mute/config",
            "homeassistant/number/kitchen/volume/config", "homeassistant/sensor/kitchen/question/config",
            "homeassistant/sensor/kitchen/answer/config", "homeassistant/sensor/kitchen/next_timer/config",
            "homeassistant/event/kitchen/button/config", "homeassistant/notify/kitchen/announce/config",
            "homeassistant/button/kitchen/stop/config", "homeassistant/light/kitchen/ring/config",
        ])
        // No ring on this board: its light's config is emptied, which removes one an earlier board had.
        #expect(configs.last?.payload == "")
        var uniqueIDs = Set<String>()
        for config in configs.dropLast() {
            let json = try parse(config.payload)
            #expect(json["availability_topic"] == "hound-speaker/kitchen/availability")
            #expect(json["device"]?["identifiers"] == ["hound_speaker_kitchen"])
            #expect(json["device"]?["name"] == "Kitchen Speaker")
            #expect(json["device"]?["sw_version"] == "0.1.0")
            let id = try #require(json["unique_id"]?.stringValue)
            uniqueIDs.insert(id)
            #expect(json["name"]?.stringValue?.isEmpty == false)
            // A state or a command topic: every entity has one or the other.
            #expect(json["state_topic"] != nil || json["command_topic"] != nil, "\(config.topic)")
        }
        #expect(uniqueIDs.count == configs.count - 1)
        let byTopic = Dictionary(uniqueKeysWithValues: try configs.dropLast().map { ($0.topic, try parse($0.payload)) })
        let mute = try #require(byTopic["homeassistant/switch/kitchen/mute/config"])
        #expect(mute["name"] == "Mute")
        #expect(mute["command_topic"] == "hound-speaker/kitchen/mute/set")
        #expect(mute["state_topic"] == "hound-speaker/kitchen/mute")
        #expect(mute["payload_on"] == "ON" && mute["payload_off"] == "OFF")
        let volume = try #require(byTopic["homeassistant/number/kitchen/volume/config"])
        #expect(volume["min"] == 0 && volume["max"] == 100 && volume["step"] == 1)
        let state = try #require(byTopic["homeassistant/sensor/kitchen/state/config"])
        #expect(state["device_class"] == "enum")
        #expect(state["options"] == ["idle", "listening", "thinking", "speaking", "ringing", "offline", "muted", "enrolling", "setup"])
        let timer = try #require(byTopic["homeassistant/sensor/kitchen/next_timer/config"])
        #expect(timer["device_class"] == "timestamp")
        #expect(timer["json_attributes_topic"] == "hound-speaker/kitchen/next_timer/attributes")
        let button = try #require(byTopic["homeassistant/event/kitchen/button/config"])
        #expect(button["event_types"] == ["press", "double", "long"])
        #expect(button["state_topic"] == "hound-speaker/kitchen/button")
        let announce = try #require(byTopic["homeassistant/notify/kitchen/announce/config"])
        #expect(announce["command_topic"] == "hound-speaker/kitchen/announce/set")
        #expect(announce["state_topic"] == nil)
        let stop = try #require(byTopic["homeassistant/button/kitchen/stop/config"])
        #expect(stop["payload_press"] == "PRESS")
        #expect(kitchen.subscriptions == ["hound-speaker/kitchen/mute/set", "hound-speaker/kitchen/volume/set",
                                          "hound-speaker/kitchen/announce/set", "hound-speaker/kitchen/stop/set", "homeassistant/status"])
    }

    /// A board with an LED ring: a light of Home Assistant's JSON schema, brightness in percent both ways.
    @Test func theRingIsALightWhereTheBoardHasOne() throws {
        var device = kitchen
        device.hasRing = true
        let config = try #require(device.configs.first { $0.topic == "homeassistant/light/kitchen/ring/config" })
        let light = try parse(config.payload)
        #expect(light["schema"] == "json" && light["brightness"] == true && light["brightness_scale"] == 100)
        #expect(light["supported_color_modes"] == ["brightness"])
        #expect(light["command_topic"] == "hound-speaker/kitchen/ring/set" && light["state_topic"] == "hound-speaker/kitchen/ring")
        #expect(light["name"] == "LED ring" && light["default_entity_id"] == "light.kitchen_speaker_ring")
        #expect(device.subscriptions.contains("hound-speaker/kitchen/ring/set"))
        #expect(!kitchen.subscriptions.contains("hound-speaker/kitchen/ring/set"))

        var s = snapshot()
        s.ring = RingSetting(on: true, percent: 32)
        let states = Dictionary(uniqueKeysWithValues: device.states(s, wallNow: 0).map { ($0.topic, $0.payload) })
        #expect(try parse(try #require(states["hound-speaker/kitchen/ring"])) == ["state": "ON", "brightness": 32, "color_mode": "brightness"])
        #expect(kitchen.states(s, wallNow: 0).allSatisfy { $0.topic != "hound-speaker/kitchen/ring" })

        func command(_ payload: String) -> Result<ControlCommand, ControlCommand.Problem>? {
            device.command(topic: "hound-speaker/kitchen/ring/set", payload: Array(payload.utf8))
        }
        #expect(command(#"{"state": "OFF"}"#) == .success(.ring(on: false, percent: nil)))
        #expect(command(#"{"state": "ON", "brightness": 40}"#) == .success(.ring(on: true, percent: 40)))
        #expect(command(#"{"state": "ON", "brightness": 12.6}"#) == .success(.ring(on: true, percent: 13)))
        #expect(command(#"{"brightness": 100}"#) == .success(.ring(on: nil, percent: 100)))
        #expect(command(#"{"state": "ON", "brightness": 0}"#) == .failure(.init("LED ring: \"percent\" is the ring's brightness, 1 to 100")))
        #expect(command(#"{"state": "DIM"}"#) == .failure(.init("LED ring: \"state\" is \"ON\" or \"OFF\", not \"DIM\"")))
        #expect(command("ON") == .failure(.init("LED ring: a JSON object such as {\"state\": \"ON\", \"brightness\": 40}, not \"ON\"")))
        #expect(command(#"{"brightness": "max"}"#) == .failure(.init("LED ring: \"brightness\" is a number from 1 to 100")))
        // Not this speaker's topic without a ring.
        #expect(kitchen.command(topic: "hound-speaker/kitchen/ring/set", payload: Array(#"{"state": "OFF"}"#.utf8)) == nil)
    }

    @Test func theDevicesNameMakesTheEntityIDs() throws {
        let device = HomeAssistantDevice(discoveryPrefix: "ha/discovery", nodeID: "n1", name: "Küche — Speaker!", version: "1")
        let json = try parse(try #require(device.configs.first).payload)
        #expect(json["default_entity_id"] == "sensor.k_che_speaker_state")
        #expect(device.configs.first?.topic == "ha/discovery/sensor/n1/state/config")
        #expect(device.birthTopic == "ha/discovery/status")
    }

    /// Commands read as the control API reads its own requests: the same commands, the same refusals.
    @Test func commandsAreTheControlAPIs() throws {
        func command(_ entity: String, _ payload: String) -> Result<ControlCommand, ControlCommand.Problem>? {
            kitchen.command(topic: "hound-speaker/kitchen/\(entity)/set", payload: Array(payload.utf8))
        }
        #expect(command("mute", "ON") == .success(.mute(true)))
        #expect(command("mute", "OFF") == .success(.mute(false)))
        #expect(command("volume", "35") == .success(.volume(.to(35))))
        #expect(command("volume", "35.0") == .success(.volume(.to(35))))
        #expect(command("volume", " 7.6 ") == .success(.volume(.to(8))))
        #expect(command("announce", "The laundry is done") == .success(.say("The laundry is done")))
        #expect(command("stop", "PRESS") == .success(.stop))
        #expect(command("mute", "maybe") == .failure(.init("Mute: \"ON\" or \"OFF\", not \"maybe\"")))
        #expect(command("volume", "150") == .failure(.init("Volume: \"percent\" is 0 to 100, not 150")))
        #expect(command("volume", "1e300") == .failure(.init("Volume: a number from 0 to 100, not \"1e300\"")))
        #expect(command("volume", "nan") == .failure(.init("Volume: a number from 0 to 100, not \"nan\"")))
        #expect(command("volume", "loud") == .failure(.init("Volume: a number from 0 to 100, not \"loud\"")))
        guard case .failure(let empty)? = command("announce", "  ") else { Issue.record("an empty announcement was taken"); return }
        #expect(empty.description.hasPrefix("Announce: \"say\" needs \"text\""))
        guard case .failure(let long)? = command("announce", String(repeating: "a", count: ControlCommand.longestText + 1)) else {
            Issue.record("an announcement over the limit was taken"); return
        }
        #expect(long.description == "Announce: \"text\" is longer than \(ControlCommand.longestText) characters")
        #expect(kitchen.command(topic: "hound-speaker/kitchen/announce/set", payload: [0xFF, 0xFE]) == .failure(.init("Announce: the message is not UTF-8 text")))
        // Not a command topic of this speaker's: nothing.
        #expect(kitchen.command(topic: "hound-speaker/kitchen/state/set", payload: Array("x".utf8)) == nil)
        #expect(kitchen.command(topic: "hound-speaker/hall/stop/set", payload: Array("PRESS".utf8)) == nil)
        #expect(kitchen.command(topic: "hound-speaker/kitchen/volume", payload: Array("3".utf8)) == nil)
    }
}

@Suite struct StateTests {
    @Test func theStateWordSaysWhatTheSpeakerDoes() {
        typealias Word = HomeAssistantDevice.StateWord
        #expect(HomeAssistantDevice.stateWord(snapshot()) == .idle)
        #expect(HomeAssistantDevice.stateWord(snapshot(state: .none)) == .idle)
        #expect(HomeAssistantDevice.stateWord(snapshot(state: .recording)) == .listening)
        #expect(HomeAssistantDevice.stateWord(snapshot(state: .searching)) == .thinking)
        #expect(HomeAssistantDevice.stateWord(snapshot(state: .speaking, muted: true)) == .speaking)
        #expect(HomeAssistantDevice.stateWord(snapshot(state: .ringing)) == .ringing)
        #expect(HomeAssistantDevice.stateWord(snapshot(state: .enrolling)) == .enrolling)
        #expect(HomeAssistantDevice.stateWord(snapshot(muted: true, offline: true)) == .muted)
        #expect(HomeAssistantDevice.stateWord(snapshot(offline: true)) == .offline)
        var setup = snapshot()
        setup.leds = .setup
        #expect(HomeAssistantDevice.stateWord(setup) == .setup)
        let ringing = SpeakerTimer(id: 1, name: "", seconds: 60, status: .ringing(since: 990))
        #expect(HomeAssistantDevice.stateWord(snapshot(muted: true, timers: [ringing])) == .ringing)
        // Every word the sensor can take is among its options (Home Assistant refuses any other).
        #expect(Set(Word.allCases.map(\.rawValue)).count == Word.allCases.count)
    }

    @Test func statesOfASnapshot() throws {
        var s = snapshot(muted: true, volume: 35, timers: [
            SpeakerTimer(id: 1, name: "pasta", seconds: 600, status: .running(endsAt: 1000 + 480)),
            SpeakerTimer(id: 2, name: "eggs", seconds: 300, status: .running(endsAt: 1000 + 120.4)),
            SpeakerTimer(id: 3, name: "tea", seconds: 60, status: .paused(remaining: 30)),
        ])
        s.transcript = "set a timer for two minutes"
        s.answer = String(repeating: "é", count: 300)
        let states = Dictionary(uniqueKeysWithValues: kitchen.states(s, wallNow: 1_700_000_000.7).map { ($0.topic, $0.payload) })
        #expect(states["hound-speaker/kitchen/state"] == "muted")
        #expect(states["hound-speaker/kitchen/mute"] == "ON")
        #expect(states["hound-speaker/kitchen/volume"] == "35")
        #expect(states["hound-speaker/kitchen/question"] == "set a timer for two minutes")
        // Home Assistant's 255 characters, counted as it counts them; the whole text in the attributes.
        let answer = try #require(states["hound-speaker/kitchen/answer"])
        #expect(answer.unicodeScalars.count == 255 && answer.hasSuffix("…"))
        #expect(try parse(try #require(states["hound-speaker/kitchen/answer/attributes"]))["text"]?.stringValue?.count == 300)
        // The eggs end first: 121 s (rounded up) after the wall clock.
        #expect(states["hound-speaker/kitchen/next_timer"] == HomeAssistantDevice.isoTime(1_700_000_121.7))
        #expect(states["hound-speaker/kitchen/next_timer"] == "2023-11-14T22:15:21+00:00")
        let attributes = try parse(try #require(states["hound-speaker/kitchen/next_timer/attributes"]))
        #expect(attributes == ["name": "eggs", "remaining_s": 121, "status": "running", "timers": 3])
        // Nothing empty: an empty retained message would delete the state at the broker.
        #expect(states.values.allSatisfy { !$0.isEmpty })
        let quiet = Dictionary(uniqueKeysWithValues: kitchen.states(snapshot(timers: [SpeakerTimer(id: 3, name: "tea", seconds: 60, status: .paused(remaining: 30))]),
                                                                    wallNow: 0).map { ($0.topic, $0.payload) })
        #expect(quiet["hound-speaker/kitchen/next_timer"] == "None")
        #expect(quiet["hound-speaker/kitchen/question"] == "None")
        #expect(try parse(try #require(quiet["hound-speaker/kitchen/next_timer/attributes"])) == ["timers": 1])
    }

    @Test func isoTimes() {
        #expect(HomeAssistantDevice.isoTime(0) == "1970-01-01T00:00:00+00:00")
        #expect(HomeAssistantDevice.isoTime(951_782_400) == "2000-02-29T00:00:00+00:00")
        #expect(HomeAssistantDevice.isoTime(4_102_444_799) == "2099-12-31T23:59:59+00:00")
        #expect(HomeAssistantDevice.isoTime(-1) == "1969-12-31T23:59:59+00:00")
        // No number traps it.
        for v in [Double.nan, .infinity, -.infinity, 1e300, -1e300, Double.greatestFiniteMagnitude] { _ = HomeAssistantDevice.isoTime(v) }
    }

    /// Only what changed is published again; the next timer's end moving by a second (the wall clock read at each
    /// look) is not a change.
    @Test func onlyChangesArePublished() {
        var published = PublishedStates()
        let topic = kitchen.stateTopic(.nextTimer)
        let timer = SpeakerTimer(id: 1, name: "", seconds: 300, status: .running(endsAt: 1300))
        let first = kitchen.states(snapshot(timers: [timer]), wallNow: 1_000_000)
        #expect(published.changes(first, timerTopic: topic) == first)
        #expect(published.changes(first, timerTopic: topic).isEmpty)
        #expect(published.changes(kitchen.states(snapshot(timers: [timer]), wallNow: 1_000_001.5), timerTopic: topic).isEmpty)
        let moved = published.changes(kitchen.states(snapshot(volume: 50, timers: [timer]), wallNow: 1_000_060), timerTopic: topic)
        #expect(moved.map(\.topic) == ["hound-speaker/kitchen/volume", topic])
        let noTimer = published.changes(kitchen.states(snapshot(volume: 50), wallNow: 1_000_060), timerTopic: topic)
        #expect(noTimer.map(\.payload) == ["None", "{\"timers\":0}"])
        published.forget()
        #expect(published.changes(first, timerTopic: topic).count == first.count)
    }
}
