import Assembly
import CommandSupport
import DeviceAssembly
import Control
import ControlCore
import FoundationEssentials
import Glibc
import Houndify
import HoundifyAssembly
import Logging
import Platform
import SpeakerConfig
import SpeakerCore
import SpeakerRuntime
import Synchronization

/// `run` without working credentials (issue #64): the speaker works (timers, the time, volume: its own commands,
/// on the device), says where to go ("Open NAME.local on your phone; the code is ..."), and serves the setup page on
/// `[setup] listen`. A form with the right code is checked with a signed query to Houndify, saved into the config
/// (0600, under its lock), and the speaker goes on to ready with Houndify's search, without a restart; the setup
/// listener then closes.
///
/// Without credentials it opens at start. With credentials it waits, closed, and opens the first time Houndify
/// refuses them (a key mistyped on the card, or revoked on the dashboard): the page is the way to put them right
/// without a shell.
final class SetupMode: Sendable {
    enum Phase { case closed, opening, open, done }
    let gate: SetupGate
    let server: SetupServer
    /// "NAME.local", which avahi answers for on Raspberry Pi OS.
    let address: String
    private let listen: ControlAddress
    private let logger: Logger
    private let phase: Guarded<Phase>
    /// When the speaker last said where to go after a refusal.
    private let reminded = Guarded<ContinuousClock.Instant?>(nil)
    static let reminderInterval = Duration.seconds(300)
    private let loop: Later<SpeakerLoop>
    private let ended: Later<@Sendable () -> Void>
    private let opened: Later<@Sendable () -> Void>
    private let calendar: Later<SpeakerCalendar>

    /// The page is open (the snapshot's `setup_mode`).
    var isOpen: Bool { phase.withLock { $0 == .open } }

    init(config: SpeakerConfiguration, configPath: String, listen: ControlAddress, logger: Logger) {
        let address = SetupMode.localName()
        let loop = Later<SpeakerLoop>()
        let gateBox = Later<SetupGate>()
        let stopBox = Later<@Sendable () -> Void>()
        let ended = Later<@Sendable () -> Void>()
        let calendar = Later<SpeakerCalendar>()
        let phase = Guarded(Phase.closed)
        let page = ShippedFiles.locate("setup.html", in: .kiosk).flatMap { FileManager.default.contents(atPath: $0).map { Array($0) } }
        if page == nil { logger.warning("setup: the setup page is not installed (share/kiosk/setup.html): / will say so") }
        let server = SetupServer(desk: SetupDesk(), page: page, logger: logger, newCode: { code in
            loop.value?.send(.announce(SetupMode.guidance(address: address, code: code, new: true)))
        }, submit: { form in
            guard let gate = gateBox.value else { return SetupProblem("The speaker is still starting; try again.", status: 503) }
            let problem = await SetupMode.submit(form, configPath: configPath, gate: gate, calendar: calendar.value, logger: logger)
            if problem == nil {
                phase.withLock { $0 = .done }
                loop.value?.send(.setupMode(false))
                loop.value?.send(.announce("I'm set up. Ask me anything."))
                ended.value?()
                stopBox.value?()
            }
            return problem
        })
        let pageServer = server, name = address
        let setupGate = SetupGate { SetupMode.guidance(address: name, code: pageServer.code, new: false) }
        gateBox.set(setupGate)
        gate = setupGate
        self.server = server
        self.address = address
        self.loop = loop
        self.ended = ended
        self.opened = Later()
        self.calendar = calendar
        self.phase = phase
        self.listen = listen
        self.logger = logger
        stopBox.set({ [server] in
            // After the reply has gone: the page shows it, then nothing listens on the network any more.
            Task {
                try? await Task.sleep(for: .seconds(1))
                await server.stop()
                logger.notice("setup: done; the setup page is closed")
            }
        })
    }

    /// Called once the credentials are saved (the screen takes setup mode's panel down).
    func whenSetUp(_ body: @escaping @Sendable () -> Void) { ended.set(body) }
    /// Called when the page opens after the start (the screen puts setup mode's panel up).
    func whenOpened(_ body: @escaping @Sendable () -> Void) { opened.set(body) }

    /// The loop to tell (announcements, the LEDs), once it exists.
    func attach(_ speakerLoop: SpeakerLoop) { loop.set(speakerLoop) }
    /// The speaker's local time, which a zone from the page changes at once.
    func use(_ speakerCalendar: SpeakerCalendar) { calendar.set(speakerCalendar) }

    /// Without credentials, at start: binds the page's address (a port that cannot be had stops `run`, as the
    /// control API's does) and says once where to go.
    func start(loop speakerLoop: SpeakerLoop) async throws(CommandFailure) {
        loop.set(speakerLoop)
        phase.withLock { $0 = .opening }
        do {
            let port = try await server.start(host: listen.host, port: listen.port)
            phase.withLock { $0 = .open }
            logger.notice("setup mode: no Houndify credentials yet; the setup page is on \(pageAddress(port)), the code is said aloud and in `ctl status`")
        } catch {
            await server.stop()
            // Port 80 is a privileged port: the unit gives the service the right to it; a person running `run`
            // by hand without credentials needs another port (or the credentials).
            let hint = listen.port < 1024 && "\(error)".contains("Permission denied")
                ? "; a port under 1024 needs the unit's CAP_NET_BIND_SERVICE: outside the service, set [setup] listen = \"127.0.0.1:8081\", or the credentials"
                : ""
            throw CommandFailure(message: "no Houndify credentials yet, and the setup page: \(error)\(hint) ([setup] listen sets the address; \"\" turns setup mode off)", exitCode: 78)
        }
        speakerLoop.send(.setupMode(true))
        speakerLoop.send(.announce(Self.guidance(address: address, code: server.code, new: false)))
    }

    /// Houndify refused the credentials (the loop's report of a question that failed so): the first time, the
    /// page opens and the speaker says where to go; while it is open, it says so again after each refusal.
    func credentialsRefused() {
        let was = phase.withLock { p in
            defer { if p == .closed { p = .opening } }
            return p
        }
        switch was {
        case .closed:
            Task { await openAfterRefusal() }
        case .open:
            // Every question the device cannot answer itself is told "My Houndify key was refused."; where to go is
            // said again at most every few minutes, not after every timer set meanwhile.
            let now = ContinuousClock.now
            let due = reminded.withLock { last in
                guard last.map({ now - $0 >= Self.reminderInterval }) ?? true else { return false }
                last = now
                return true
            }
            if due { loop.value?.send(.announce(Self.refusedGuidance(address: address, code: server.code))) }
        case .opening, .done:
            break  // on its way; or set up through the page in this run, whose credentials Houndify took then
        }
    }

    private func openAfterRefusal() async {
        do {
            let port = try await server.start(host: listen.host, port: listen.port)
            phase.withLock { $0 = .open }
            logger.warning("setup mode: Houndify refused the client ID and key; the setup page is on \(pageAddress(port)), the code is said aloud and in `ctl status`",
                           metadata: ["event": "setup", "status": "credentials refused"])
        } catch {
            phase.withLock { $0 = .closed }  // tried again at the next refusal
            logger.error("setup mode: Houndify refused the client ID and key, and the setup page could not open: \(error) ([setup] listen sets its address)")
            return
        }
        opened.value?()
        reminded.withLock { $0 = .now }
        loop.value?.send(.setupMode(true))
        loop.value?.send(.announce(Self.refusedGuidance(address: address, code: server.code)))
    }

    private func pageAddress(_ port: Int) -> String {
        var shown = listen
        shown.port = port
        return "http://\(shown)/ (http://\(address)\(port == 80 ? "" : ":\(port)")/)"
    }

    static func guidance(address: String, code: String, new: Bool) -> String {
        let spokenAddress = address.replacing(".", with: " dot ")
        return new
            ? "There were too many wrong codes. The new code is \(SetupDesk.spoken(code))."
            : "I'm not set up yet. Open \(spokenAddress) on your phone; the code is \(SetupDesk.spoken(code))."
    }

    static func refusedGuidance(address: String, code: String) -> String {
        "To set me up again, open \(address.replacing(".", with: " dot ")) on your phone; the code is \(SetupDesk.spoken(code))."
    }

    /// This machine's name with ".local" (mDNS), or "the speaker's address" when it has none.
    static func localName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "localhost" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard !name.isEmpty else { return "localhost" }
        return name.contains(".") ? name : "\(name).local"
    }

    /// The form, checked and saved; nil when the speaker now answers with it.
    static func submit(_ form: SetupForm, configPath: String, gate: SetupGate, calendar: SpeakerCalendar?, logger: Logger) async -> SetupProblem? {
        var values: [SettingsImport.Setting] = [("houndify", "client_id", .string(form.clientID)), ("houndify", "client_key", .string(form.clientKey))]
        if let latitude = form.latitude, let longitude = form.longitude {
            values += [("location", "latitude", .number(latitude)), ("location", "longitude", .number(longitude))]
            let zone = form.timezone.isEmpty ? TimeZoneGuess.nearest(latitude: latitude, longitude: longitude) : form.timezone
            if let zone { values.append(("location", "timezone", .string(zone))) }
        } else if !form.timezone.isEmpty {
            values.append(("location", "timezone", .string(form.timezone)))
        }
        let source = "the setup page"
        let text: String
        do throws(SettingsImport.Failure) { text = try SettingsImport.preview(values, source: source, configPath: configPath) } catch {
            logger.warning("setup: the page's settings were refused: \(error)")
            return problem(error)
        }
        let config: SpeakerConfiguration
        let check: HoundifyClient
        do {
            config = try ConfigLoader.load(text: text, path: configPath, onDisk: false)
            check = try HoundifyClient(configuration: try config.houndifyClientConfiguration(), conversation: ConversationStore())
        } catch {
            return SetupProblem("\(error)".replacing("\(source): ", with: ""))
        }
        // The same signed query as `doctor`'s, with its own conversation: nothing of it is kept.
        do {
            _ = try await check.textSearch("what time is it")
        } catch {
            logger.warning("setup: the signed check failed: \(error) [\(error.code)]")
            switch error {
            case .authenticationFailed:
                return SetupProblem("Houndify refused this client ID and key. Copy both again from your client's page on the Houndify dashboard (the key is 88 characters ending in ==).", status: 422)
            case .connectionFailure, .connectionTimeout, .noResponseReceived:
                return SetupProblem("The speaker cannot reach Houndify to check them: is it on the network? Nothing was saved.", status: 503)
            default:
                return SetupProblem("Houndify did not answer the check (\(error.code)). Nothing was saved; try again in a moment.", status: 502)
            }
        }
        do throws(SettingsImport.Failure) { try SettingsImport.save(values, source: source, configPath: configPath) } catch {
            logger.error("setup: Houndify accepted the credentials, but they could not be saved: \(error)")
            return problem(error)
        }
        let client: HoundifyClient
        do throws(AssemblyError) { client = try HoundifyAssembly.client(config, logger: logger, forSpeaker: true) } catch {
            return SetupProblem("The settings were saved, but the speaker could not use them: \(error). Restart it.", status: 500)
        }
        gate.install(SpeakerAssembly.search(client, config: config))
        if !config.location.timezone.isEmpty { calendar?.set(zone: config.location.timezone) }
        logger.notice("setup: Houndify accepted the client ID and key; saved in \(configPath); the speaker answers with them now")
        return nil
    }

    static func problem(_ failure: SettingsImport.Failure) -> SetupProblem {
        switch failure {
        case .refused(let error): SetupProblem(error.key.map { "\($0): \(error.problem)" } ?? error.problem)
        case .io(let problem, _): SetupProblem("The speaker could not save its settings: \(problem)", status: 500)
        }
    }
}

/// A value set once the parts that need it exist (the loop is made after the setup mode that it uses).
final class Later<Value: Sendable>: Sendable {
    private let slot = Mutex<Value?>(nil)
    var value: Value? { slot.withLock { $0 } }
    func set(_ value: Value) { slot.withLock { $0 = value } }
}

/// A value shared between the setup mode and the closures it hands out, changed under a lock.
final class Guarded<Value: Sendable>: Sendable {
    private let slot: Mutex<Value>
    init(_ value: Value) { slot = Mutex(value) }
    func withLock<R>(_ body: (inout Value) -> R) -> R { slot.withLock { body(&$0) } }
}
