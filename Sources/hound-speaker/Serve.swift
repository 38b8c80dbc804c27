import ArgumentParser
import Dispatch
import FoundationEssentials
import Glibc
import Houndify
import LocalHoundify
import Logging
import Platform
import SpeakerConfig

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the local Houndify-compatible service (for tests, the demo and development without an account).",
        discussion: """
            It checks requests against the config's client ID and key, answers text queries about the time, the \
            date, the weather and timers, and answers voice queries with the transcript given in RequestInfo \
            "LocalServiceTranscript" (or [serve] transcript): it does not recognise speech.
            """)

    @Option(help: "Port on 127.0.0.1 (0 picks a free one). Default: [serve] port.") var port: Int?
    @Option(help: "Address to listen on.") var host = "127.0.0.1"
    @Option(help: ArgumentHelp("Misbehave for client tests: \(LocalServiceConfiguration.Fault.allCases.map(\.rawValue).joined(separator: ", ")).", visibility: .hidden))
    var fault: String = "none"
    @OptionGroup var options: ConfigOption

    func run() async throws {
        try await reporting {
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
            let bound: Int
            do { bound = try await service.start(host: host, port: port ?? config.serve.port) } catch {
                throw CommandFailure(message: "cannot listen on \(host):\(port ?? config.serve.port): \(error)")
            }
            printLine("listening on http://\(host):\(bound)")
            await Signals.waitForTermination()
            context.logger.info("stopping")
            await service.stop()
        }
    }
}

enum Signals {
    /// Suspends until SIGINT or SIGTERM.
    static func waitForTermination() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let queue = DispatchQueue(label: "signals")
            let once = OnceFlag()
            var sources: [any DispatchSourceSignal] = []
            for sig in [SIGINT, SIGTERM] {
                signal(sig, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
                source.setEventHandler {
                    if once.fire() { continuation.resume() }
                }
                source.resume()
                sources.append(source)
            }
            SignalSources.keep(sources)
        }
    }
}

/// Signal sources must outlive the wait; they are kept for the life of the process.
enum SignalSources {
    nonisolated(unsafe) private static var kept: [any DispatchSourceSignal] = []
    private static let lock = Lock()
    static func keep(_ sources: [any DispatchSourceSignal]) {
        lock.lock(); defer { lock.unlock() }
        kept += sources
    }
}

final class OnceFlag: @unchecked Sendable {
    private let lock = Lock()
    private var fired = false
    func fire() -> Bool {
        lock.lock(); defer { lock.unlock() }
        if fired { return false }
        fired = true
        return true
    }
}
