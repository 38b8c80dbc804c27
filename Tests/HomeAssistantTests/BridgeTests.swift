import BoardCore
import ControlCore
import Foundation
import HomeAssistant
import HomeAssistantCore
import JSONKit
import SpeakerCore
import Synchronization
import Testing
import TestSupport
import Timers

/// The bridge against a real broker (Debian's mosquitto), with mosquitto_sub and mosquitto_pub in Home Assistant's
/// place.
@Suite(.ownThread) struct BridgeTests {
    final class Performed: Sendable {
        let commands = Mutex<[ControlCommand]>([])
        let reply: JSONValue
        init(reply: JSONValue = ["ok": true]) { self.reply = reply }
        /// Long enough for a starved cooperative pool (the commands are carried out in tasks of its own).
        func wait(for count: Int, seconds: Double = 60) -> [ControlCommand] {
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline, commands.withLock({ $0.count }) < count { usleep(20_000) }
            return commands.withLock { $0 }
        }
    }

    static func settings(_ broker: Broker, user: String = "", password: String = "") -> MQTTConnection.Settings {
        var settings = MQTTConnection.Settings(host: "127.0.0.1", port: broker.port, tls: false, username: user, password: password,
                                               clientID: "hs-test-\(UUID().uuidString.prefix(8))", will: nil)
        settings.backoff = DeviceOutage(first: .milliseconds(100), maximum: .milliseconds(400))
        settings.keepAlive = 5
        return settings
    }

    static func bridge(_ broker: Broker, log: LogLines, speaker: FakeSpeaker, performed: Performed = Performed(),
                       user: String = "", password: String = "", device: HomeAssistantDevice = kitchen) throws -> HomeAssistantBridge {
        let bridge = try HomeAssistantBridge(device: device, settings: settings(broker, user: user, password: password), logger: log.logger,
                                             wallClock: { 1_700_000_000 }) { command in
            performed.commands.withLock { $0.append(command) }
            return performed.reply
        }
        bridge.attach(speaker)
        return bridge
    }

    static func online(_ broker: Broker) throws -> Bool {
        try broker.retained("hound-speaker/kitchen/availability") { $0 == "online" } == "online"
    }

    /// What Home Assistant finds when it starts after the speaker: every config retained, the speaker online, every
    /// state retained.
    @Test func discoveryAndStatesAreRetained() async throws {
        let broker = try Broker()
        let log = LogLines()
        let bridge = try Self.bridge(broker, log: log, speaker: FakeSpeaker(snapshot(volume: 35)))
        try bridge.start()
        #expect(log.wait(for: "connected to the MQTT broker at mqtt://127.0.0.1:\(broker.port)"))
        // Published in order, the availability after the configs: a subscriber that sees "online" has all of them.
        var retained: [String: String] = [:]
        for _ in 0..<50 {
            retained = try broker.retained("#", seconds: 1)
            if retained["hound-speaker/kitchen/volume"] != nil { break }
        }
        let configs = retained.filter { $0.key.hasPrefix("homeassistant/") }
        // An emptied config (the ring's, on a board without one) is a removal: the broker keeps nothing of it.
        let kept = kitchen.configs.filter { !$0.payload.isEmpty }
        #expect(Set(configs.keys) == Set(kept.map(\.topic)))
        for config in kept { #expect(retained[config.topic] == config.payload) }
        #expect(retained["hound-speaker/kitchen/availability"] == "online")
        #expect(retained["hound-speaker/kitchen/state"] == "idle")
        #expect(retained["hound-speaker/kitchen/mute"] == "OFF")
        #expect(retained["hound-speaker/kitchen/volume"] == "35")
        #expect(retained["hound-speaker/kitchen/next_timer"] == "None")
        await bridge.stop()
        // Said goodbye: "offline", retained, from the speaker itself.
        #expect(try broker.retained("hound-speaker/kitchen/availability") { $0 == "offline" } == "offline")
    }

    /// Mute, volume, an announcement and Stop from Home Assistant arrive as the control API's commands; a bad
    /// message is refused in the log and performs nothing; a refusal of the speaker's is logged.
    @Test func commandsFromHomeAssistant() async throws {
        let broker = try Broker()
        let log = LogLines()
        let performed = Performed(reply: ["ok": false, "error": "the speaker is not running yet"])
        let bridge = try Self.bridge(broker, log: log, speaker: FakeSpeaker(snapshot()), performed: performed)
        try bridge.start()
        // Subscribed once "online" is out: the broker takes a client's packets in order, the subscriptions first.
        #expect(try Self.online(broker))
        try broker.publish("hound-speaker/kitchen/mute/set", "ON")
        try broker.publish("hound-speaker/kitchen/volume/set", "35.0")
        try broker.publish("hound-speaker/kitchen/volume/set", "loud")
        try broker.publish("hound-speaker/kitchen/announce/set", "The laundry is done")
        try broker.publish("hound-speaker/kitchen/stop/set", "PRESS")
        let commands = performed.wait(for: 4)
        #expect(commands == [.mute(true), .volume(.to(35)), .say("The laundry is done"), .stop])
        #expect(log.wait(for: "warning Home Assistant: Volume: a number from 0 to 100, not \"loud\""))
        #expect(log.wait(for: "warning Home Assistant: stop: the speaker is not running yet", seconds: 60))
        await bridge.stop()
    }

    /// A board with an LED ring: Home Assistant's light switches it and dims it, and sees it as the speaker has it.
    @Test func theRingIsALightInHomeAssistant() async throws {
        let broker = try Broker()
        let log = LogLines()
        var device = kitchen
        device.hasRing = true
        var first = snapshot()
        first.ring = RingSetting(on: true, percent: 32)
        let speaker = FakeSpeaker(first)
        let performed = Performed()
        let bridge = try Self.bridge(broker, log: log, speaker: speaker, performed: performed, device: device)
        let listener = try Listener(port: broker.port, topic: "hound-speaker/kitchen/ring")
        try bridge.start()
        #expect(listener.wait(forLine: #"hound-speaker/kitchen/ring {"brightness":32,"color_mode":"brightness","state":"ON"}"#))
        #expect(try broker.retained("homeassistant/light/kitchen/ring/config") { $0 != nil }?.contains(#""schema":"json""#) == true)
        try broker.publish("hound-speaker/kitchen/ring/set", #"{"state":"OFF"}"#)
        try broker.publish("hound-speaker/kitchen/ring/set", #"{"state":"ON","brightness":75}"#)
        #expect(performed.wait(for: 2) == [.ring(on: false, percent: nil), .ring(on: true, percent: 75)])
        // The speaker's own change (ctl ring off) reaches Home Assistant's light.
        speaker.current.withLock { $0.ring = RingSetting(on: false, percent: 32) }
        bridge.observe(.ring(RingSetting(on: false, percent: 32)))
        #expect(listener.wait(forLine: #"hound-speaker/kitchen/ring {"brightness":32,"color_mode":"brightness","state":"OFF"}"#))
        await bridge.stop()
    }

    /// The speaker's changes reach Home Assistant as they happen; only what changed is sent; the button's gestures
    /// are events, not retained.
    @Test func changesAndButtonEvents() async throws {
        let broker = try Broker()
        let log = LogLines()
        let speaker = FakeSpeaker(snapshot())
        let bridge = try Self.bridge(broker, log: log, speaker: speaker)
        let listener = try Listener(port: broker.port, topic: "hound-speaker/kitchen/#")
        try bridge.start()
        #expect(listener.wait(forLine: "hound-speaker/kitchen/state idle"))
        speaker.current.withLock {
            $0.state = .speaking
            $0.answer = "It is 5 o'clock."
            $0.transcript = "what time is it"
        }
        bridge.observe(.stateChanged(from: .ready, to: .speaking))
        #expect(listener.wait(forLine: "hound-speaker/kitchen/state speaking"))
        #expect(listener.wait(forLine: "hound-speaker/kitchen/answer It is 5 o'clock."))
        #expect(listener.wait(forLine: "hound-speaker/kitchen/question what time is it"))
        // A level reading changes nothing Home Assistant shows: nothing is looked at, nothing sent.
        let before = listener.received.count
        speaker.current.withLock { $0.volume = 55 }
        bridge.observe(.level(dBFS: -30))
        usleep(300_000)
        #expect(listener.received.count == before)
        bridge.observe(.volume(55))
        #expect(listener.wait(forLine: "hound-speaker/kitchen/volume 55"))
        // Sent once each: the state did not change again.
        #expect(listener.received.filter { $0 == "hound-speaker/kitchen/state speaking" }.count == 1)
        bridge.button(.pressed)
        bridge.button(.released(held: .milliseconds(80)))
        bridge.button(.doublePress)
        bridge.button(.longPress)
        #expect(listener.wait(for: { lines in
            lines.filter { $0.hasPrefix("hound-speaker/kitchen/button ") } == [
                "hound-speaker/kitchen/button {\"event_type\":\"press\"}", "hound-speaker/kitchen/button {\"event_type\":\"double\"}",
                "hound-speaker/kitchen/button {\"event_type\":\"long\"}",
            ]
        }))
        #expect(try broker.retained("hound-speaker/kitchen/button").isEmpty)
        await bridge.stop()
    }

    /// Home Assistant restarting (its birth message) gets the configs again; a broker that restarts (and so has
    /// forgotten everything) gets everything again once the speaker is back.
    @Test func homeAssistantsRestartAndTheBrokersAreSurvived() async throws {
        let broker = try Broker()
        let log = LogLines()
        let bridge = try Self.bridge(broker, log: log, speaker: FakeSpeaker(snapshot(volume: 20)))
        let listener = try Listener(port: broker.port, topic: "homeassistant/#")
        try bridge.start()
        let configs = kitchen.configs.count
        #expect(listener.wait(for: { $0.filter { $0.contains("/config ") }.count == configs }))
        try broker.publish("homeassistant/status", "online")
        #expect(listener.wait(for: { $0.filter { $0.contains("/config ") }.count == 2 * configs }))
        // Another word on the birth topic (Home Assistant going away) asks for nothing.
        try broker.publish("homeassistant/status", "offline")
        usleep(300_000)
        #expect(listener.received.filter { $0.contains("/config ") }.count == 2 * configs)

        broker.stop()
        #expect(log.wait(for: "warning Home Assistant: cannot reach the MQTT broker at mqtt://127.0.0.1:\(broker.port)"))
        try broker.start()
        #expect(log.wait(for: "connected to the MQTT broker", seconds: 1) || true)
        var retained: [String: String] = [:]
        for _ in 0..<50 {
            retained = try broker.retained("#", seconds: 1)
            if retained["hound-speaker/kitchen/volume"] != nil { break }
        }
        #expect(retained["hound-speaker/kitchen/availability"] == "online")
        #expect(retained["hound-speaker/kitchen/volume"] == "20")
        #expect(retained.keys.filter { $0.hasSuffix("/config") }.count == kitchen.configs.filter { !$0.payload.isEmpty }.count)
        // Said once for the outage and each reason in it (lost, then refused), however many tries it took.
        let lines: [String] = log.all.filter { $0.contains("cannot reach the MQTT broker") }
        let told: [String] = lines.map { (line: String) -> String in String(line.split(separator: ". Trying again").first ?? "") }
        #expect(!told.isEmpty && told.count <= 2 && Set(told).count == told.count, "\(told)")
        #expect(log.all.filter { $0.contains("connected to the MQTT broker") }.count == 2)
        await bridge.stop()
    }

    /// A wrong password is told in the log, once, without the password; the right one connects.
    @Test func wrongCredentialsAreToldWithoutThePassword() async throws {
        let broker = try Broker(user: ("speaker", "right-horse-battery"))
        let log = LogLines()
        let wrong = try Self.bridge(broker, log: log, speaker: FakeSpeaker(snapshot()), user: "speaker", password: "wrong-staple-42")
        try wrong.start()
        #expect(log.wait(for: "error Home Assistant: the MQTT broker at mqtt://127.0.0.1:\(broker.port) refused the login (Connection Refused: not authorised.)"))
        usleep(600_000)
        #expect(log.all.filter { $0.contains("refused the login") }.count == 1)
        #expect(!log.all.contains { $0.contains("wrong-staple-42") })
        #expect(try broker.retained("hound-speaker/#", seconds: 1).isEmpty)
        await wrong.stop()

        let rightLog = LogLines()
        let right = try Self.bridge(broker, log: rightLog, speaker: FakeSpeaker(snapshot()), user: "speaker", password: "right-horse-battery")
        try right.start()
        #expect(rightLog.wait(for: "connected to the MQTT broker"))
        #expect(!rightLog.all.contains { $0.contains("right-horse-battery") })
        await right.stop()
    }

    /// A broker that is not there: told once, and stop still returns at once.
    @Test func noBrokerIsToldOnce() async throws {
        let held = try HeldPort()
        let log = LogLines()
        var settings = MQTTConnection.Settings(host: "127.0.0.1", port: held.port, tls: false, username: "", password: "", clientID: "hs-none", will: nil)
        settings.backoff = DeviceOutage(first: .milliseconds(50), maximum: .milliseconds(100))
        let bridge = try HomeAssistantBridge(device: kitchen, settings: settings, logger: log.logger) { _ in ["ok": true] }
        try bridge.start()
        #expect(log.wait(for: "cannot reach the MQTT broker at mqtt://127.0.0.1:\(held.port): Connection refused"))
        usleep(500_000)
        #expect(log.all.filter { $0.contains("cannot reach") }.count == 1)
        await bridge.stop()
        #expect(log.wait(for: "Home Assistant: stopped"))
    }

    /// mqtts:// to a broker whose certificate no authority of the system signed: refused, with OpenSSL's reason.
    @Test func anUntrustedCertificateIsNamed() async throws {
        let broker = try Broker(tls: true)
        let log = LogLines()
        var settings = Self.settings(broker)
        settings.tls = true
        let bridge = try HomeAssistantBridge(device: kitchen, settings: settings, logger: log.logger) { _ in ["ok": true] }
        try bridge.start()
        #expect(log.wait(for: "cannot reach the MQTT broker at mqtts://127.0.0.1:\(broker.port): A TLS error occurred (OpenSSL Error[0]: "))
        // The first try may fail otherwise (OpenSSL's reason depends on when the broker hangs up); a reason that
        // changes is told again, so the lasting one is read.
        #expect(log.wait(for: "SSL routines::certificate verify failed): the broker's certificate must name this host and be signed by an authority in /etc/ssl/certs"), "\(log.all)")
        await bridge.stop()
    }

    @Test func clientIDsAreTheNodesAndNewAtEachStart() {
        let a = HomeAssistantBridge.clientID(nodeID: "kitchen")
        let b = HomeAssistantBridge.clientID(nodeID: "kitchen")
        #expect(a.hasPrefix("hs-kitchen-") && a.count == 19 && a != b)
        #expect(HomeAssistantBridge.clientID(nodeID: String(repeating: "x", count: 64)).count == 23)
    }

    /// Two speakers with one node id (a copied config): each keeps its connection, neither logs an outage.
    @Test func twoSpeakersWithOneNodeIDBothStayConnected() async throws {
        let broker = try Broker()
        let logs = [LogLines(), LogLines()]
        var bridges: [HomeAssistantBridge] = []
        for log in logs {
            var settings = Self.settings(broker)
            settings.clientID = HomeAssistantBridge.clientID(nodeID: "kitchen")
            let bridge = try HomeAssistantBridge(device: kitchen, settings: settings, logger: log.logger) { _ in ["ok": true] }
            bridge.attach(FakeSpeaker(snapshot()))
            try bridge.start()
            bridges.append(bridge)
        }
        for log in logs { #expect(log.wait(for: "connected to the MQTT broker")) }
        usleep(1_500_000)
        for log in logs {
            #expect(log.all.filter { $0.contains("connected to the MQTT broker") }.count == 1)
            #expect(!log.all.contains { $0.contains("cannot reach") })
        }
        for bridge in bridges { await bridge.stop() }
    }

    @Test func theNodeIDIsTheMachinesOwnAndHidesIt() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hs-machine-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "0123456789abcdef0123456789abcdef\n".write(toFile: "\(dir)/a", atomically: true, encoding: .utf8)
        try "fedcba9876543210fedcba9876543210\n".write(toFile: "\(dir)/b", atomically: true, encoding: .utf8)
        let a = HomeAssistantBridge.defaultNodeID(machineIDFile: "\(dir)/a")
        #expect(a == HomeAssistantBridge.defaultNodeID(machineIDFile: "\(dir)/a"))
        #expect(a != HomeAssistantBridge.defaultNodeID(machineIDFile: "\(dir)/b"))
        #expect(a.count == 12 && a.allSatisfy(\.isHexDigit))
        #expect(!"0123456789abcdef0123456789abcdef".contains(a))
        // No machine id: the host's name, as a topic level.
        let host = HomeAssistantBridge.defaultNodeID(machineIDFile: "\(dir)/none")
        #expect(!host.isEmpty && host.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
    }
}
