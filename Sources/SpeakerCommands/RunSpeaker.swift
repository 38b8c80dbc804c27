import DeviceCommands
import Assembly
import HoundifyAssembly
import HoundifyCore
import DeviceAssembly
import Board
import CommandSupport
import BoardCore
import Control
import HomeAssistant
import HomeAssistantCore
import Houndify
import FoundationEssentials
import Platform
import Glibc
import Logging
import Speech
import SpeakerConfig
import SpeakerCore
import SpeakerRuntime
import ServiceLifecycle
import Systemd

/// `hound-speaker run`: the speaker from its config, until SIGINT or SIGTERM. The loop and the signal watcher are
/// children of this call; when it returns, both have ended.
public enum RunSpeaker {
    public static func run(configPath: String?, eventsJSON: Bool) async throws {
        // A speaker runs for months: large passing buffers (a long answer, a big response) must go back to the
        // system when freed. glibc would raise its mmap threshold after the first such buffer is freed and keep
        // the later ones in its heap for good (the soak saw a 5 MB step after the second 12 MB answer);
        // fixing the threshold at its default keeps every allocation over 128 kB in its own mapping.
        Malloc.fixMmapThreshold(128 * 1024)
        let context = try AppContext(configPath: configPath)
        // Alarms ring at the speaker's local time, the configured zone (SpeakerCalendar), else the system's. TZ is
        // set too, read once here before any thread, for anything else that asks the C library for local time.
        let zone = context.config.location.timezone
        if !zone.isEmpty {
            setenv("TZ", zone, 1)
            tzset()
        }
        let logger = context.logger
        var speaker: SpeakerAssembly
        // A setup page to serve (SetupMode.swift): opened at start without credentials (rather than exit 78), or
        // later, if Houndify refuses the ones there are.
        let houndify = context.config.houndify
        let setup = context.config.setup.listen.map {
            SetupMode(config: context.config, configPath: context.config.path ?? ConfigLoader.systemPath, listen: $0, logger: logger)
        }
        let setUp = !houndify.clientID.isEmpty && !houndify.clientKey.isEmpty
        do throws(AssemblyError) {
            let client = setUp || setup == nil ? try HoundifyAssembly.client(context.config, logger: logger, forSpeaker: true) : nil
            speaker = try SpeakerAssembly(config: context.config, logger: logger, client: client, output: .device(context.config.audio.output))
            if let setup {
                if let search = speaker.search { setup.gate.install(search) }
                speaker.setupGate = setup.gate
            }
            speaker.board = try DeviceAssembly.board(context.config.board) { event in
                switch event {
                case .lost(let problem):
                    logger.error("board lost: \(problem)", metadata: ["event": "board", "status": "lost", "problem": "\(problem)"])
                case .recovered:
                    logger.notice("board is back: the button and the LEDs work again", metadata: ["event": "board", "status": "recovered"])
                case .ringLost(let problem):
                    logger.error("LED ring failing: \(problem)", metadata: ["event": "board", "status": "ring lost", "problem": "\(problem)"])
                case .ringRecovered:
                    logger.notice("LED ring is back", metadata: ["event": "board", "status": "ring recovered"])
                }
            }
        } catch { throw CommandFailure(error) }
        if eventsJSON { speaker.observers.append { printLine($0.json) } }
        // A key from the environment cannot be put right by the page (the environment would still win over the file).
        let config = context.config
        if let setup, setUp, config.path != nil, config.clientIDSource == config.path, config.clientKeySource == config.path {
            setup.gate.whenRefused { setup.credentialsRefused() }
        }
        let prompt = context.config.board.driver == .simulated ? "press Space or Enter to talk" : "press the button to talk"
        // Under systemd (Type=notify): READY=1 and then WATCHDOG=1 come from inside the loop (deploy/hound-speaker.service).
        let notifier = ServiceNotifier()
        if notifier.isActive {
            let interval = notifier.watchdogInterval.map { $0 / 2 }
            if let interval { context.logger.info("systemd watchdog: the loop reports every \(interval)") }
            speaker.settings.heartbeat = LoopHeartbeat(interval: interval) { notifier.loopAlive(status: "ready: \(prompt)") }
        }
        let hub = ControlHub()
        let control = context.config.control
        if control.listen != nil { speaker.observers.append { hub.publish($0) } }
        let homeAssistant = try homeAssistant(context.config, hub: hub, logger: logger)
        let homeControl = context.config.homeAssistant
        if !homeControl.url.isEmpty {
            // At most 8 s, and half the searching limit: with Houndify's own time it stays inside that limit.
            let limit = context.config.speaker.machine.searchingLimitMS
            let client = ConversationClient(url: homeControl.url, token: homeControl.token, agentID: homeControl.agentID,
                                            timeoutMS: max(1_000, min(8_000, limit / 2)), logger: logger)
            speaker.wrapSearch = { HomeAssistantHandOff(inner: $0, client: client) }
            logger.info("Home Assistant: home commands go to its conversation API at \(homeControl.url)")
        }
        if let homeAssistant {
            speaker.observers.append { homeAssistant.observe($0) }
            speaker.buttonObservers.append { homeAssistant.button($0) }
        }
        let loop = speaker.makeLoop()
        speaker.board?.showTimers { [loop] in RingTimers.next(in: loop.snapshot) }
        hub.attach(loop)
        homeAssistant?.attach(loop)
        if let setup {
            setup.attach(loop)
            setup.use(speaker.calendar)
            hub.attach(setup: { setup.isOpen ? (setup.address, setup.server.code) : nil })
            setup.whenSetUp { hub.setupEnded() }
            setup.whenOpened { hub.setupStarted() }
        }
        // A settings file on the SD card that `setup --import` refused (the unit runs it first) is said once ready.
        if let notice = ImportNotice.read(environment: ProcessInfo.processInfo.environment) {
            logger.warning("the SD card's settings file was not used: \(notice.detail)", metadata: ["event": "setup", "status": "import refused"])
            loop.send(.announce(notice.sentence))
        }
        if let listener = speaker.hotPhrase { hub.attach(household: listener) }
        let server = try await startControl(control, hub: hub, context: context)
        do throws(MQTTError) { try homeAssistant?.start() } catch {
            await server?.stop()
            throw CommandFailure(message: "Home Assistant: \(error)")
        }
        if let setup, !setUp {
            do { try await setup.start(loop: loop) } catch {
                await server?.stop()
                throw error
            }
        }
        // The loop, the control server and the board as services (SpeakerServices): SIGTERM and SIGINT are trapped
        // when the group starts, before the loop can say it is ready (a stop right then, `systemctl stop` just after
        // the start, once found SIGTERM's default action still in place and ended the process with nothing saved).
        let group = SpeakerServices.group(loop: loop, board: speaker.board, control: server, setup: setup?.server, notifier: notifier, logger: logger)
        context.logger.notice("hound-speaker running: \(prompt)")
        do {
            try await group.run()
        } catch {
            // The control server failed while the speaker ran (logged by its service); the rest has stopped in order.
            await homeAssistant?.stop()
            throw CommandFailure(message: "\(error)")
        }
        // Home Assistant hears "offline" from the speaker itself (a stop, not a lost connection).
        await homeAssistant?.stop()
    }

    /// The bridge to Home Assistant if `[home_assistant] mqtt` is set: commands from it go the control API's way.
    static func homeAssistant(_ config: SpeakerConfiguration, hub: ControlHub, logger: Logger) throws(CommandFailure) -> HomeAssistantBridge? {
        let section = config.homeAssistant
        guard let broker = section.mqtt else { return nil }
        let nodeID = section.nodeID.isEmpty ? HomeAssistantBridge.defaultNodeID() : section.nodeID
        let device = HomeAssistantDevice(discoveryPrefix: section.discoveryPrefix, nodeID: nodeID, name: section.name, version: HoundifySDK.version,
                                         hasRing: config.board.hasRing)
        let settings = MQTTConnection.Settings(host: broker.host, port: broker.port, tls: broker.tls, username: section.username,
                                               password: section.password, clientID: HomeAssistantBridge.clientID(nodeID: nodeID), will: nil)
        do throws(MQTTError) {
            return try HomeAssistantBridge(device: device, settings: settings, logger: logger) { command in
                await hub.perform(command, waitForAnswer: false)
            }
        } catch {
            throw CommandFailure(message: "Home Assistant: \(error)")
        }
    }

    /// The control API and kiosk page, if configured. An address that cannot be had (the port taken by another
    /// program, or by a speaker already running) stops `run` with the reason: a speaker without its screen and
    /// remote control would look dead to whoever uses them, while an exit is seen (systemd restarts the service and
    /// `systemctl status` shows why).
    static func startControl(_ control: SpeakerConfiguration.ControlSection, hub: ControlHub, context: AppContext) async throws(CommandFailure) -> ControlServer? {
        guard let address = control.listen else { return nil }
        let page = ShippedFiles.locate("index.html", in: .kiosk).flatMap { FileManager.default.contents(atPath: $0).map { Array($0) } }
        if page == nil { context.logger.warning("control API: the kiosk page is not installed (share/kiosk/index.html): / will say so") }
        let server = ControlServer(hub: hub, token: control.token, page: page, logger: context.logger)
        do {
            let port = try await server.start(host: address.host, port: address.port)
            var shown = address
            shown.port = port
            context.logger.notice("control API and kiosk page on http://\(shown)/\(control.token.isEmpty ? "" : " (token required from other machines)")")
            return server
        } catch {
            await server.stop()
            throw CommandFailure(message: "control API: \(error) (is another hound-speaker running? [control] listen in \(context.config.path ?? "the config") sets the address; \"\" turns the API off)")
        }
    }
}
