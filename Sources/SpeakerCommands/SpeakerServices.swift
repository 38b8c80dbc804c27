import Board
import Control
import Logging
import ServiceLifecycle
import SpeakerCore
import SpeakerRuntime
import Synchronization
import Systemd
import UnixSignals

/// `run`'s parts as swift-service-lifecycle services, in the order `SpeakerServices.group` starts them. On SIGTERM
/// or SIGINT the group shuts them down one at a time in the reverse order, each ended before the next is told:
/// the stop is announced (log, systemd's STOPPING=1), the control API stops taking requests, the loop finishes its
/// shutdown (its devices closed, the LEDs told off, the timers saved), and the board's thread ends (LEDs off, lines
/// released).
enum SpeakerServices {
    /// The service group of `run`. `control` is nil when the API is off.
    static func group(loop: SpeakerLoop, board: BoardRunner?, control: ControlServer?, setup: SetupServer? = nil, notifier: ServiceNotifier,
                      logger: Logger) -> ServiceGroup {
        let reason = StopReason()
        var services: [any ServiceLifecycle.Service] = []
        if let board { services.append(BoardService(runner: board, logger: logger)) }
        services.append(LoopService(loop: loop, logger: logger))
        if let control { services.append(ControlService(server: control, reason: reason, logger: logger)) }
        if let setup { services.append(SetupService(server: setup)) }
        services.append(StopNotice(reason: reason, notifier: notifier, logger: logger))
        // Any of them ending on its own (the control server failing) stops the rest in the same order, not abruptly;
        // but the setup page ends once the speaker is set up, and the speaker goes on.
        let configurations = services.map {
            ServiceGroupConfiguration.ServiceConfiguration(service: $0, successTerminationBehavior: $0 is SetupService ? .ignore : .gracefullyShutdownGroup,
                                                           failureTerminationBehavior: .gracefullyShutdownGroup)
        }
        return ServiceGroup(configuration: ServiceGroupConfiguration(services: configurations, gracefulShutdownSignals: [.sigterm, .sigint],
                                                                     logger: logger))
    }
}

/// Why the speaker stops, when it is not a signal (the control server failed).
final class StopReason: Sendable {
    private let reason = Mutex<String?>(nil)
    func set(_ why: String) { reason.withLock { if $0 == nil { $0 = why } } }
    var description: String { reason.withLock { $0 } ?? "signal" }
}

/// Shut down first: says that the speaker is stopping, before anything stops.
struct StopNotice: ServiceLifecycle.Service, CustomStringConvertible {
    let reason: StopReason
    let notifier: ServiceNotifier
    let logger: Logger
    var description: String { "stop notice" }

    func run() async throws {
        try? await gracefulShutdown()
        logger.notice("stopping (\(reason.description))")
        notifier.stopping()
    }
}

/// The control API and kiosk page (bound before the group runs, so that a taken port stops `run` at once).
struct ControlService: ServiceLifecycle.Service, CustomStringConvertible {
    let server: ControlServer
    let reason: StopReason
    let logger: Logger
    var description: String { "control API" }

    func run() async throws {
        do {
            try await server.run()
        } catch {
            reason.set("the control API failed: \(error)")
            logger.error("control API failed: \(error)")
            throw error
        }
        logger.info("control API stopped")
    }
}

/// Setup mode's page (bound before the group runs): served until the speaker is set up, or the group stops.
struct SetupService: ServiceLifecycle.Service, CustomStringConvertible {
    let server: SetupServer
    var description: String { "setup page" }

    func run() async throws {
        await withGracefulShutdownHandler {
            await server.run()
        } onGracefulShutdown: {
            Task { await server.stop() }
        }
    }
}

/// The speaker's loop: told to shut down on the group's shutdown (or cancellation), returns once it has.
struct LoopService: ServiceLifecycle.Service, CustomStringConvertible {
    let loop: SpeakerLoop
    let logger: Logger
    var description: String { "speaker loop" }

    func run() async throws {
        await withTaskCancellationOrGracefulShutdownHandler {
            await loop.run()
        } onCancelOrGracefulShutdown: {
            loop.send(.shutdown)
        }
        logger.info("speaker loop stopped")
    }
}

/// The button and LEDs on their thread: started with the group, ended last.
struct BoardService: ServiceLifecycle.Service, CustomStringConvertible {
    let runner: BoardRunner
    let logger: Logger
    var description: String { "board" }

    func run() async throws {
        runner.start()
        try? await gracefulShutdown()
        // The loop has told it to stop already (its shutdown turns the LEDs off); a second stop changes nothing.
        runner.stop()
        await runner.waitUntilStopped()
        logger.info("board stopped: LEDs off, lines released")
    }
}
