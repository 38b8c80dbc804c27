public import SpeakerCore
public import JSONKit
import Synchronization

/// Houndify's search while the speaker is in setup mode (issue #64): until the credentials are saved, every question
/// is told where to go (`SearchFailure.notSetUp`, with the words `guidance` gives: the page's address and the code),
/// and the device's own commands still work behind it (OfflineFallbackSearch); once they are, the search installed
/// answers, without a restart.
public final class SetupGate: VoiceSearchService {
    private let inner = Mutex<(any VoiceSearchService)?>(nil)
    private let guidance: @Sendable () -> String

    public init(guidance: @escaping @Sendable () -> String) {
        self.guidance = guidance
    }

    /// Houndify's search, now that there are credentials.
    public func install(_ search: any VoiceSearchService) { inner.withLock { $0 = search } }

    public var isSetUp: Bool { inner.withLock { $0 != nil } }

    private func current() throws(SearchError) -> any VoiceSearchService {
        if let search = inner.withLock({ $0 }) { return search }
        var error = SearchError(.notSetUp, detail: "no Houndify credentials yet: the speaker is in setup mode", code: "NotSetUp")
        error.spoken = guidance()
        throw error
    }

    public func startVoiceSearch(afterHotPhrase: Bool, endsAtSafeToStop: Bool) throws(SearchError) -> any VoiceSearchSession {
        try current().startVoiceSearch(afterHotPhrase: afterHotPhrase, endsAtSafeToStop: endsAtSafeToStop)
    }

    public func startTextSearch(_ query: String) throws(SearchError) -> any VoiceSearchSession {
        try current().startTextSearch(query)
    }

    public func keepConversation(_ state: JSONValue) { inner.withLock { $0 }?.keepConversation(state) }
    public func clearConversation() { inner.withLock { $0 }?.clearConversation() }
    public func reachable() async -> Bool { await inner.withLock({ $0 })?.reachable() ?? false }
}
