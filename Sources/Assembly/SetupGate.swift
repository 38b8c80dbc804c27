public import SpeakerCore
public import JSONKit
import Synchronization

/// Houndify's search while the speaker is in setup mode (issue #64): until the credentials are saved, every question
/// is told where to go (`SearchFailure.notSetUp`, with the words `guidance` gives: the page's address and the code),
/// and the device's own commands still work behind it (OfflineFallbackSearch); once they are, the search installed
/// answers, without a restart. A search installed from the start (credentials in the config) goes through it too:
/// `whenRefused` hears every time Houndify refuses them, whatever the device makes of the question afterwards.
public final class SetupGate: VoiceSearchService {
    private let inner = Mutex<(any VoiceSearchService)?>(nil)
    private let guidance: @Sendable () -> String
    private let refused = Mutex<(@Sendable () -> Void)?>(nil)

    public init(guidance: @escaping @Sendable () -> String) {
        self.guidance = guidance
    }

    /// Houndify's search, now that there are credentials.
    public func install(_ search: any VoiceSearchService) { inner.withLock { $0 = search } }

    public var isSetUp: Bool { inner.withLock { $0 != nil } }

    /// Called (on no thread in particular) whenever a search reports that Houndify refused the credentials.
    public func whenRefused(_ body: @escaping @Sendable () -> Void) { refused.withLock { $0 = body } }

    private func watched(_ start: () throws(SearchError) -> any VoiceSearchSession) throws(SearchError) -> any VoiceSearchSession {
        let onRefused = refused.withLock { $0 }
        let session: any VoiceSearchSession
        do throws(SearchError) { session = try start() } catch {
            if error.failure == .authentication { onRefused?() }
            throw error
        }
        guard let onRefused else { return session }
        return RefusalWatch(session, refused: onRefused)
    }

    private func current() throws(SearchError) -> any VoiceSearchService {
        if let search = inner.withLock({ $0 }) { return search }
        var error = SearchError(.notSetUp, detail: "no Houndify credentials yet: the speaker is in setup mode", code: "NotSetUp")
        error.spoken = guidance()
        throw error
    }

    public func startVoiceSearch(afterHotPhrase: Bool, endsAtSafeToStop: Bool) throws(SearchError) -> any VoiceSearchSession {
        let search = try current()
        return try watched { () throws(SearchError) in try search.startVoiceSearch(afterHotPhrase: afterHotPhrase, endsAtSafeToStop: endsAtSafeToStop) }
    }

    public func startTextSearch(_ query: String) throws(SearchError) -> any VoiceSearchSession {
        let search = try current()
        return try watched { () throws(SearchError) in try search.startTextSearch(query) }
    }

    public func keepConversation(_ state: JSONValue) { inner.withLock { $0 }?.keepConversation(state) }
    public func clearConversation() { inner.withLock { $0 }?.clearConversation() }
    public func reachable() async -> Bool { await inner.withLock({ $0 })?.reachable() ?? false }
}

/// A search's events passed on as they come, with a refusal of the credentials told on the way.
final class RefusalWatch: VoiceSearchSession {
    let events: AsyncStream<SearchEvent>
    private let inner: any VoiceSearchSession

    init(_ inner: any VoiceSearchSession, refused: @escaping @Sendable () -> Void) {
        self.inner = inner
        let (stream, continuation) = AsyncStream.makeStream(of: SearchEvent.self)
        events = stream
        let source = inner.events
        let forward = Task {
            for await event in source {
                if case .failed(let error) = event, error.failure == .authentication { refused() }
                continuation.yield(event)
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in forward.cancel() }
    }

    func write(_ samples: UnsafeBufferPointer<Int16>) -> Bool { inner.write(samples) }
    func finish() { inner.finish() }
    func cancel() { inner.cancel() }
    var firstAudioSent: ContinuousClock.Instant? { inner.firstAudioSent }
}
