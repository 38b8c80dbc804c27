public import BoardCore
public import ControlCore
import Digests
import Glibc
public import HomeAssistantCore
public import JSONKit
public import Logging
public import SpeakerCore
import Platform
import Synchronization

/// The speaker in Home Assistant (issue #65): its discovery configs, states and the button's presses go to the
/// broker; Home Assistant's commands come back through `perform`, the control API's own path (the same checks and
/// refusals as `ctl`). The loop only hands activities over (`observe`): the broker's thread reads the snapshot and
/// publishes what changed, so a slow or absent broker never holds the speaker up.
public final class HomeAssistantBridge: Sendable {
    public let device: HomeAssistantDevice
    private struct State {
        var speaker: (any ControlledSpeaker)?
        var dirty = true
        var buttons: [HomeAssistantDevice.ButtonEvent] = []
        var published = PublishedStates()
        /// What the last problem logged said: a problem is logged when an outage begins, and again only if its
        /// reason changes (a first attempt that fails for another reason must not hide the one that lasts).
        var lastProblem: String?
    }

    private let state = Mutex(State())
    private let logger: Logger
    private let perform: @Sendable (ControlCommand) async -> JSONValue
    private let wallClock: @Sendable () -> Double
    private let connection: MQTTConnection

    /// The connection's handler reaches the bridge through this (weakly: the bridge owns the connection).
    private final class Relay: Sendable {
        private struct Ref { weak var bridge: HomeAssistantBridge? }
        private let ref = Mutex(Ref())
        func set(_ bridge: HomeAssistantBridge) { ref.withLock { $0.bridge = bridge } }
        var bridge: HomeAssistantBridge? { ref.withLock { $0.bridge } }
    }

    /// `settings`' will is set here (the availability topic, "offline"). `perform` carries out a command as the
    /// control API does and replies as it does (`{"ok":true}` or `{"ok":false,"error":...}`).
    public init(device: HomeAssistantDevice, settings: MQTTConnection.Settings, logger: Logger,
                wallClock: @escaping @Sendable () -> Double = HomeAssistantBridge.wallClockNow,
                perform: @escaping @Sendable (ControlCommand) async -> JSONValue) throws(MQTTError) {
        self.device = device
        self.logger = logger
        self.perform = perform
        self.wallClock = wallClock
        var settings = settings
        settings.will = (device.availabilityTopic, "offline")
        let relay = Relay()
        connection = try MQTTConnection(settings: settings) { event, session in relay.bridge?.handle(event, session) }
        relay.set(self)
    }

    /// The speaker whose snapshot is published (its loop, once made).
    public func attach(_ speaker: any ControlledSpeaker) {
        state.withLock { $0.speaker = speaker; $0.dirty = true }
        connection.wake()
    }

    public func start() throws(MQTTError) {
        logger.info("Home Assistant: connecting to the MQTT broker at \(connection.settings.address) as \(device.base)")
        try connection.start()
    }

    /// Publishes "offline" and leaves the broker.
    public func stop() async {
        await connection.stop()
        logger.info("Home Assistant: stopped (the speaker is shown unavailable)")
    }

    /// The loop's observer: notes that the states may have changed. Never waits.
    public func observe(_ activity: SpeakerActivity) {
        switch activity {
        // Five times a second while listening, and not in any state Home Assistant sees.
        case .level, .partialTranscript, .timings, .display: return
        default: break
        }
        state.withLock { $0.dirty = true }
        connection.wake()
    }

    /// A gesture of the board's button: the event entity fires.
    public func button(_ gesture: ButtonGestures.Event) {
        let event: HomeAssistantDevice.ButtonEvent
        switch gesture {
        case .pressed: event = .press
        case .doublePress: event = .double
        case .longPress: event = .long
        case .released, .setupHold: return
        }
        state.withLock { $0.buttons.append(event) }
        connection.wake()
    }

    // MARK: On the broker's thread

    private func handle(_ event: MQTTConnection.Event, _ session: MQTTConnection.Session) {
        let address = connection.settings.address
        switch event {
        case .connected:
            state.withLock { $0.lastProblem = nil }
            logger.notice("Home Assistant: connected to the MQTT broker at \(address)", metadata: ["event": "home_assistant", "status": "connected"])
            for topic in device.subscriptions { session.subscribe(topic) }
            publishEverything(session)
        case .refused(let words, let begins, let retry):
            if tellProblem("refused: \(words)", begins: begins) {
                logger.error("Home Assistant: the MQTT broker at \(address) refused the login (\(words)): check [home_assistant] username and password. Trying again in \(retry), then less often",
                             metadata: ["event": "home_assistant", "status": "refused"])
            }
        case .unreachable(let why, let begins, let retry):
            if tellProblem(why, begins: begins) {
                logger.warning("Home Assistant: cannot reach the MQTT broker at \(address): \(why). Trying again in \(retry), then less often",
                               metadata: ["event": "home_assistant", "status": "unreachable"])
            }
        case .message(let topic, let payload):
            if topic == device.birthTopic {
                // Home Assistant restarted: it has forgotten nothing retained, but its own birth asks for the
                // configs again (its documentation's advice for discovery).
                if payload == Array("online".utf8) { publishEverything(session) }
                return
            }
            guard let parsed = device.command(topic: topic, payload: payload) else { return }
            switch parsed {
            case .failure(let problem):
                logger.warning("Home Assistant: \(problem.description)", metadata: ["event": "home_assistant", "status": "refused command"])
            case .success(let command):
                let perform = self.perform
                let logger = self.logger
                Task {
                    let reply = await perform(command)
                    if reply["ok"] != .bool(true) {
                        logger.warning("Home Assistant: \(command.name.rawValue): \(reply["error"]?.stringValue ?? "refused")",
                                       metadata: ["event": "home_assistant", "status": "refused command"])
                    }
                }
            }
        case .woken:
            let (buttons, dirty) = state.withLock { s in
                defer { s.buttons = []; s.dirty = false }
                return (s.buttons, s.dirty)
            }
            for button in buttons {
                session.publish(device.stateTopic(.button), JSONValue.object(["event_type": .string(button.rawValue)]).asciiJSON(), retain: false)
            }
            if dirty { publishStates(session) }
        }
    }

    /// Whether to log a problem: the first of an outage, or one whose reason is not the last one logged.
    private func tellProblem(_ reason: String, begins: Bool) -> Bool {
        state.withLock { s in
            defer { s.lastProblem = reason }
            return begins || s.lastProblem != reason
        }
    }

    private func publishEverything(_ session: MQTTConnection.Session) {
        for config in device.configs { session.publish(config.topic, config.payload, retain: true) }
        session.publish(device.availabilityTopic, "online", retain: true)
        state.withLock { $0.published.forget() }
        publishStates(session)
    }

    private func publishStates(_ session: MQTTConnection.Session) {
        guard let speaker = state.withLock({ $0.speaker }) else { return }
        let states = device.states(speaker.snapshot, wallNow: wallClock())
        let changes = state.withLock { $0.published.changes(states, timerTopic: device.stateTopic(.nextTimer)) }
        for message in changes { session.publish(message.topic, message.payload, retain: true) }
    }

    /// Seconds since 1970 (CLOCK_REALTIME).
    public static func wallClockNow() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// The MQTT client id: the node's, and a part new at each start. A broker drops the older of two clients with
    /// one id, so two speakers given the same id (a copied config, a cloned SD card) would take the connection from
    /// each other every second; this way both stay connected. 23 characters at most, what every broker must take.
    public static func clientID(nodeID: String) -> String {
        let suffix = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        return "hs-\(nodeID.prefix(11))-\(String(repeating: "0", count: 8 - suffix.count))\(suffix)"
    }

    /// The device's id when the config gives none: made from /etc/machine-id (keyed, so the machine's own id is not
    /// published), the same at every start and different on every speaker; the host's name if there is no
    /// machine id.
    public static func defaultNodeID(machineIDFile: String = "/etc/machine-id") -> String {
        if case .bytes(let bytes) = AtomicFile.read(machineIDFile, limit: 64) {
            let id = bytes.filter { $0 != 0x0A && $0 != 0x20 }
            if id.count >= 16 {
                return Digests.hex(Array(Digests.hmacSHA256(key: id, message: Array("hound-speaker home assistant".utf8)).prefix(6)))
            }
        }
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, name.count - 1)
        let host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let cleaned = String(host.lowercased().map { $0.isASCII && ($0.isLetter || $0.isNumber) ? $0 : "_" })
        return cleaned.isEmpty ? "speaker" : cleaned
    }
}
