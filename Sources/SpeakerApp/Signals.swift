import UnixSignals

/// SIGINT and SIGTERM, as swift-service-lifecycle's UnixSignals delivers them (a dispatch source per signal,
/// the default action switched off while it is watched).
public enum Signals {
    /// Suspends until SIGINT or SIGTERM (or until the calling task is cancelled).
    public static func waitForTermination() async {
        for await _ in await UnixSignalsSequence(trapping: .sigint, .sigterm) { return }
    }
}
