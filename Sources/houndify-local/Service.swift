import ArgumentParser
import LocalHoundify
import Logging
import CommandSupport
import HoundifyCore
import SpeakerConfig
import ServiceLifecycle
import UnixSignals

/// The local Houndify-compatible service, a program of its own: the speaker never runs it, so the binary that
/// goes to the Pi does not carry it (nor the date formatting it needs, which brings ICU's 34 MB of data).
/// `hound-speaker serve` and `hound-speaker demo` start this program from beside their own executable.
@main
struct HoundifyLocal: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "houndify-local",
        abstract: "The local Houndify-compatible service (for tests, the demo and development without an account).",
        discussion: """
            It checks requests against the config's client ID and key, answers text queries about the time, the \
            date, the weather and timers, and answers voice queries with the transcript given in RequestInfo \
            "LocalServiceTranscript" (or [serve] transcript): it does not recognise speech. It prints \
            "listening on http://HOST:PORT" once it accepts requests.
            """)

    @Option(help: "Port on 127.0.0.1 (0 picks a free one). Default: [serve] port.") var port: Int?
    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: ArgumentHelp("Misbehave for client tests: \(LocalServiceConfiguration.Fault.allCases.map(\.rawValue).joined(separator: ", ")).", visibility: .hidden))
    var fault: String = "none"
    @OptionGroup var options: ConfigOption

    func run() async throws {
        try await reporting("houndify-local") {
            let context = try AppContext(configPath: options.config)
            let config = context.config
            guard !config.houndify.clientID.isEmpty, !config.houndify.clientKey.isEmpty else {
                throw CommandFailure(message: "\(config.path ?? "config"): the service checks requests against [houndify] client_id and client_key (or HOUNDIFY_CLIENT_ID / HOUNDIFY_CLIENT_KEY); set both", exitCode: 78)
            }
            guard let faultMode = LocalServiceConfiguration.Fault(rawValue: fault) else {
                throw CommandFailure(message: "--fault: unknown mode \(fault)", exitCode: 64)
            }
            var settings = LocalServiceConfiguration(clientID: config.houndify.clientID, clientKey: config.houndify.clientKey,
                                                     defaultTranscript: config.serve.transcript)
            settings.fault = faultMode
            let service: LocalHoundifyService
            do { service = try LocalHoundifyService(configuration: settings, logger: context.logger) } catch {
                throw CommandFailure(message: "[houndify] client_key: \(error)", exitCode: 78)
            }
            // One service in a ServiceGroup, as `run` has its parts: SIGTERM and SIGINT are trapped before it
            // starts listening, and shut it down gracefully.
            let serving = Serving(service: service, host: host, port: port ?? config.serve.port, logger: context.logger)
            let group = ServiceGroup(configuration: ServiceGroupConfiguration(
                services: [.init(service: serving, successTerminationBehavior: .gracefullyShutdownGroup)],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: context.logger))
            try await group.run()
        }
    }
}

/// The service as the group runs it: listening, then until the group shuts down, then stopped.
struct Serving: Service {
    let service: LocalHoundifyService
    let host: String
    let port: Int
    let logger: Logger

    func run() async throws {
        let bound: Int
        do { bound = try await service.start(host: host, port: port) } catch {
            throw CommandFailure(message: "cannot listen on \(host):\(port): \(error)")
        }
        printLine("listening on http://\(host):\(bound)")
        try? await gracefulShutdown()
        logger.info("stopping")
        await service.stop()
    }
}
