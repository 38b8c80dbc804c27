public import SpeakerCore
public import JSONKit
import AudioCore
import OwnCommands
import Platform
import Synchronization

/// Houndify's search, with the speaker's own recogniser behind it (issue #63): whenever Houndify cannot answer
/// (unreachable, refused, timed out, failing, the key refused or missing), the same recording is understood on the
/// device, and a command of the speaker's own grammar is carried out as Houndify's client command would be. When
/// Houndify answers, its answer stands and nothing is recognised.
///
/// The recording is kept (at most `maxSeconds`) while it goes to Houndify. A search that fails while the person
/// still speaks keeps taking audio until the speaker's own end of speech (`finish`), then is recognised. A
/// question whose upload saw no partial transcript by its end is recognised at once, beside the search, so that
/// the device's answer is ready the moment Houndify is known to have failed.
///
/// The recogniser is loaded on first need (its model is tens of megabytes) and then kept: PocketSphinx does not give
/// back all it took when a decoder with a grammar is freed (about 0.4 MB each time, BENCHMARKS.md "Offline
/// commands"), so letting it go whenever Houndify answered again would leak with every outage.
public final class OfflineFallbackSearch: VoiceSearchService {
    let inner: any VoiceSearchService
    let load: @Sendable () throws(OfflineRecogniserError) -> OfflineRecogniser
    let log: @Sendable (String) -> Void
    let loaded = Mutex<OfflineRecogniser?>(nil)
    /// At most this much of a question is kept for the recogniser (the longest question the speaker records).
    static let maxSeconds = 20

    public init(inner: any VoiceSearchService, log: @escaping @Sendable (String) -> Void = { _ in },
                load: @escaping @Sendable () throws(OfflineRecogniserError) -> OfflineRecogniser = { () throws(OfflineRecogniserError) in try OfflineRecogniser() }) {
        self.inner = inner
        self.load = load
        self.log = log
    }

    /// The recogniser, loaded if it is not yet; nil (logged) when it cannot be.
    func recogniser() -> OfflineRecogniser? {
        if let r = loaded.withLock({ $0 }) { return r }
        do throws(OfflineRecogniserError) {
            let r = try load()
            loaded.withLock { $0 = r }
            return r
        } catch {
            log("the offline recogniser could not start: \(error.description)")
            return nil
        }
    }


    public func startVoiceSearch(afterHotPhrase: Bool, endsAtSafeToStop: Bool) throws(SearchError) -> any VoiceSearchSession {
        let session: any VoiceSearchSession
        do throws(SearchError) {
            session = try inner.startVoiceSearch(afterHotPhrase: afterHotPhrase, endsAtSafeToStop: endsAtSafeToStop)
        } catch where Self.deviceCanTry(error) {
            // No search could even start (no credentials yet): the device alone hears the question.
            return FallbackSession(owner: self, inner: nil, startFailure: error, typed: nil)
        }
        return FallbackSession(owner: self, inner: session, startFailure: nil, typed: nil)
    }

    public func startTextSearch(_ query: String) throws(SearchError) -> any VoiceSearchSession {
        let session: any VoiceSearchSession
        do throws(SearchError) { session = try inner.startTextSearch(query) } catch where Self.deviceCanTry(error) {
            return FallbackSession(owner: self, inner: nil, startFailure: error, typed: query)
        }
        return FallbackSession(owner: self, inner: session, startFailure: nil, typed: query)
    }

    public func keepConversation(_ state: JSONValue) { inner.keepConversation(state) }
    public func clearConversation() { inner.clearConversation() }
    public func reachable() async -> Bool { await inner.reachable() }

    /// Failures the device may answer instead of Houndify: all but the microphone's and nothing heard.
    static func deviceCanTry(_ error: SearchError) -> Bool {
        error.failure == .offline || error.failure == .serviceFailing || error.failure == .authentication || error.failure == .notSetUp
    }

    /// The device's answer to words heard (or typed), or nil when they are none of its commands.
    static func answer(words: String, failure: SearchFailure) -> SpeakerAnswer? {
        guard let action = OwnCommands.match(words) else { return nil }
        switch action {
        case .client(let clientAction):
            return SpeakerAnswer(transcript: words, text: "", action: clientAction, device: DeviceAnswer(failure: failure))
        case .local:
            // Stop and the IP address: the transcript says them (LocalCommand.match), as for Houndify's answers.
            return SpeakerAnswer(transcript: words, text: "", device: DeviceAnswer(failure: failure))
        case .tellTime:
            return SpeakerAnswer(transcript: words, text: "", device: DeviceAnswer(failure: failure, tell: .time))
        case .tellDate:
            return SpeakerAnswer(transcript: words, text: "", device: DeviceAnswer(failure: failure, tell: .date))
        }
    }
}

/// One question through the fallback. Its events are the inner search's, except a failure the device may answer:
/// that becomes the device's answer, or the failure once the device has found nothing it can do.
final class FallbackSession: VoiceSearchSession {
    let events: AsyncStream<SearchEvent>
    private let continuation: AsyncStream<SearchEvent>.Continuation
    private let owner: OfflineFallbackSearch
    private let inner: (any VoiceSearchSession)?
    private let typed: String?

    private struct State {
        var audio: [Int16] = []
        var finished = false
        var cancelled = false
        var sawPartial = false
        /// Houndify's failure, waiting for the end of the question.
        var failure: SearchError?
        /// The device's reading of the whole question, once made.
        var heard: OfflineHeard?
        var recognising = false
        /// What to tell when the recognition is done (a failure that came while it ran).
        var reportWhenHeard = false
        var reported = false
    }
    private let state = Mutex(State())
    private static let maxSamples = OfflineFallbackSearch.maxSeconds * SpeakerAudio.sampleRate

    init(owner: OfflineFallbackSearch, inner: (any VoiceSearchSession)?, startFailure: SearchError?, typed: String?) {
        (events, continuation) = AsyncStream.makeStream(of: SearchEvent.self)
        self.owner = owner
        self.inner = inner
        self.typed = typed
        if let startFailure {
            state.withLock { $0.failure = startFailure }
            if typed != nil { report(failure: startFailure) }
            return
        }
        guard let inner else { return }
        Task { [weak self] in
            for await event in inner.events {
                guard let self else { return }
                self.relay(event)
            }
        }
    }

    var firstAudioSent: ContinuousClock.Instant? { inner?.firstAudioSent }

    func write(_ samples: UnsafeBufferPointer<Int16>) -> Bool {
        let failed = state.withLock { s -> Bool? in
            guard !s.finished, !s.cancelled else { return nil }
            if s.audio.count < Self.maxSamples { s.audio.append(contentsOf: samples.prefix(Self.maxSamples - s.audio.count)) }
            return s.failure != nil
        }
        guard let failed else { return false }
        // Houndify has failed: the question goes on for the device until the speaker's own end of speech.
        guard !failed, let inner else { return true }
        return inner.write(samples)
    }

    func finish() {
        let (failure, early) = state.withLock { s -> (SearchError?, Bool) in
            guard !s.finished else { return (nil, false) }
            s.finished = true
            return (s.failure, s.failure == nil && !s.sawPartial && typed == nil)
        }
        inner?.finish()
        if let failure { report(failure: failure) } else if early { recognise() }
    }

    func cancel() {
        state.withLock { $0.cancelled = true }
        inner?.cancel()
        continuation.finish()
    }

    private func relay(_ event: SearchEvent) {
        switch event {
        case .partialTranscript:
            state.withLock { $0.sawPartial = true }
            continuation.yield(event)
        case .safeToStopAudio:
            continuation.yield(event)
        case .answer:
            guard state.withLock({ s in defer { s.reported = true }; return !s.reported && !s.cancelled }) else { return }
            continuation.yield(event)
            continuation.finish()
        case .failed(let error):
            guard OfflineFallbackSearch.deviceCanTry(error) else {
                guard state.withLock({ s in defer { s.reported = true }; return !s.reported && !s.cancelled }) else { return }
                continuation.yield(event)
                continuation.finish()
                return
            }
            let finished = state.withLock { s -> Bool in
                s.failure = error
                return s.finished
            }
            // While the person still speaks, the failure waits for the end of the question.
            if finished || typed != nil { report(failure: error) }
        }
    }

    /// Houndify has failed and the question is whole: the device's answer, or the failure.
    private func report(failure: SearchError) {
        if let typed {
            tell(FallbackSession.outcome(words: typed, failure: failure))
            return
        }
        let heard = state.withLock { s -> OfflineHeard? in
            if s.heard == nil { s.reportWhenHeard = true }
            return s.heard
        }
        if let heard { tell(Self.outcome(words: heard.words, failure: failure)) } else { recognise() }
    }

    /// Runs the recogniser over the question on a thread of its own (PocketSphinx blocks for a tenth of a second or
    /// more), then reports if a failure waits for it.
    private func recognise() {
        let audio = state.withLock { s -> [Int16]? in
            guard !s.recognising, s.heard == nil else { return nil }
            s.recognising = true
            return s.audio
        }
        guard let audio else { return }
        let owner = owner
        let started = OwnedThread.tryStart(name: "hs-offline") { [self] in
            let heard = owner.recogniser()?.recognise(audio) ?? OfflineHeard(words: "", action: nil)
            let failure = state.withLock { s -> SearchError? in
                s.heard = heard
                return s.reportWhenHeard ? s.failure : nil
            }
            if let failure { tell(Self.outcome(words: heard.words, failure: failure)) }
        }
        if let refused = started {
            owner.log("the offline recogniser's thread could not start: \(refused)")
            let failure = state.withLock { s -> SearchError? in
                s.heard = OfflineHeard(words: "", action: nil)
                return s.reportWhenHeard ? s.failure : nil
            }
            if let failure { tell(Self.outcome(words: "", failure: failure)) }
        }
    }

    private static func outcome(words: String, failure: SearchError) -> SearchEvent {
        if let answer = OfflineFallbackSearch.answer(words: words, failure: failure.failure) { return .answer(answer) }
        return .failed(failure)
    }

    private func tell(_ event: SearchEvent) {
        guard state.withLock({ s in defer { s.reported = true }; return !s.reported && !s.cancelled }) else { return }
        continuation.yield(event)
        continuation.finish()
    }
}
