public import UnixSignals

/// SIGINT and SIGTERM, as swift-service-lifecycle's UnixSignals delivers them (a dispatch source per signal,
/// the default action switched off while it is watched).
public enum Signals {
    /// Traps SIGINT and SIGTERM from now on: their default action (the end of the process, with nothing saved) is
    /// off until the sequence returned is gone, and it delivers them. Made before a program says it is ready, so
    /// that a stop that comes at once still stops it cleanly.
    public static func trapTermination() async -> UnixSignalsSequence {
        await UnixSignalsSequence(trapping: .sigint, .sigterm)
    }

    /// Suspends until `signals` delivers one (or until the calling task is cancelled).
    public static func waitForTermination(_ signals: UnixSignalsSequence) async {
        for await _ in signals { return }
    }

    /// Suspends until SIGINT or SIGTERM (or until the calling task is cancelled), trapped from this call on.
    public static func waitForTermination() async {
        await waitForTermination(await trapTermination())
    }
}
