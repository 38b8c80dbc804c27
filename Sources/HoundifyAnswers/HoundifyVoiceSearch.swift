public import Houndify
public import JSONKit
public import SpeakerCore
import Synchronization

/// Voice searches with the Houndify client (libcurl), answers reduced to what the speaker acts on.
public final class HoundifyVoiceSearch: VoiceSearchService {
    public let client: HoundifyClient
    public let reader: ClientCommandReader
    private let requestInfo: Mutex<[String: JSONValue]>

    /// `requestInfo`: extra RequestInfo for every voice query (the demo's and the tests' transcript for the local
    /// service). The client should leave the state of client actions to the caller (`callerKeepsActionState`): the
    /// loop keeps that of the branch it took, through `keepConversation`.
    public init(client: HoundifyClient, reader: ClientCommandReader = ClientCommandReader(), requestInfo: [String: JSONValue] = [:]) {
        self.client = client
        self.reader = reader
        self.requestInfo = Mutex(requestInfo)
    }

    public func keepConversation(_ state: JSONValue) { client.keepConversation(state) }

    /// RequestInfo added to the next voice queries.
    public func setRequestInfo(_ info: [String: JSONValue]) { requestInfo.withLock { $0 = info } }

    public func startVoiceSearch(afterHotPhrase: Bool, endsAtSafeToStop: Bool) throws(SearchError) -> any VoiceSearchSession {
        var extra = requestInfo.withLock { $0 }
        if afterHotPhrase && extra["WakeUpPattern"] == nil {
            // The pre-roll carries the end of "OK Hound": say so, so Houndify drops the phrase from the query.
            extra["WakeUpPattern"] = .string("[[\"OK\" | \"Okay\"] . \"Hound\"]")
        }
        do throws(HoundifyError) { let search = try client.startVoiceSearch(extra: extra, stopAudioOnSafeToStop: endsAtSafeToStop)
            return Session(search, reader: reader, client: client) } catch {
            throw Self.searchError(error) ?? SearchError(.serviceFailing, detail: "\(error)")
        }
    }

    public func startTextSearch(_ query: String) throws(SearchError) -> any VoiceSearchSession {
        TextSession(query: query, client: client, reader: reader)
    }

    public func clearConversation() { client.clearConversation() }

    /// One HEAD request to the endpoint, as `doctor` makes (on a thread of its own): any HTTP answer is the service
    /// there again. No query, so nothing counts against the account.
    public func reachable() async -> Bool {
        let configuration = client.configuration
        let probe = await EndpointProbe.run(endpoint: configuration.endpoint,
                                            timeoutMS: configuration.connectTimeoutMS + configuration.responseTimeoutMS)
        return probe.outcome == .reached
    }

    /// How a failed search is told to the person (nil: it was cancelled, nothing to tell).
    public static func searchError(_ error: HoundifyError) -> SearchError? {
        let failure: SearchFailure
        switch error {
        case .cancelled: return nil
        case .connectionFailure: failure = .offline
        // A connect timeout is the network; "no answer" after sending is the service.
        case .connectionTimeout(let detail): failure = detail.hasPrefix("no answer") ? .serviceFailing : .offline
        case .authenticationFailed: failure = .authentication
        case .serverStatusError, .noResponseReceived, .invalidResponse, .parseFailed, .httpError, .internalError: failure = .serviceFailing
        }
        return SearchError(failure, detail: "\(error) [\(error.code)]", code: error.code)
    }

    final class Session: VoiceSearchSession {
        let search: VoiceSearch
        let events: AsyncStream<SearchEvent>

        init(_ search: VoiceSearch, reader: ClientCommandReader, client: HoundifyClient) {
            self.search = search
            events = mapping(search.events) { event -> SearchEvent? in
                switch event {
                case .partialTranscript(let p): return .partialTranscript(p.partialTranscript)
                case .audioEnded(.safeToStopAudio): return .safeToStopAudio
                case .audioEnded: return nil
                case .result(let response):
                    let (answer, keepNow) = reader.read(response)
                    if let keepNow, client.configuration.callerKeepsActionState { client.keepConversation(keepNow) }
                    return .answer(answer)
                case .failed(let error): return HoundifyVoiceSearch.searchError(error).map { .failed($0) }
                }
            }
        }

        func write(_ samples: UnsafeBufferPointer<Int16>) -> Bool { search.write(samples) }
        func finish() { search.finish() }
        func cancel() { search.cancel() }
        var firstAudioSent: ContinuousClock.Instant? { search.timings.firstAudio }
    }

    /// A typed question: one text search, reported as a voice search's answer or failure.
    final class TextSession: VoiceSearchSession {
        let events: AsyncStream<SearchEvent>
        private let task: Task<Void, Never>

        init(query: String, client: HoundifyClient, reader: ClientCommandReader) {
            let (events, continuation) = AsyncStream.makeStream(of: SearchEvent.self)
            self.events = events
            task = Task {
                defer { continuation.finish() }
                do throws(HoundifyError) {
                    let response = try await client.textSearch(query)
                    var (answer, keepNow) = reader.read(response)
                    if let keepNow, client.configuration.callerKeepsActionState { client.keepConversation(keepNow) }
                    // A text result carries no transcription: what was typed is the question.
                    if answer.transcript.isEmpty { answer.transcript = query }
                    continuation.yield(.answer(answer))
                } catch {
                    if let failure = HoundifyVoiceSearch.searchError(error) { continuation.yield(.failed(failure)) }
                }
            }
        }

        func write(_ samples: UnsafeBufferPointer<Int16>) -> Bool { false }
        func finish() {}
        func cancel() { task.cancel() }
        var firstAudioSent: ContinuousClock.Instant? { nil }
    }
}
