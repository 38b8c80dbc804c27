public import HomeAssistantCore
public import JSONKit
public import SpeakerCore
import Logging
import Platform
import Synchronization

/// Houndify's search, with Home Assistant behind the answers it marks (`SpeakerAnswer.handOff`, issue #65): an owner's
/// phrase tied to Home Assistant, or something the speaker cannot do itself, goes to Home Assistant's conversation
/// API as the words Houndify heard, and Home Assistant's reply is the answer said. The question stays "searching"
/// meanwhile, so a press or "stop" cancels it as any search. Home Assistant's conversation id is kept from one
/// reply to the next, so that "turn it off" follows "turn on the kitchen light".
public final class HomeAssistantHandOff: VoiceSearchService {
    let inner: any VoiceSearchService
    let client: ConversationClient
    /// The last reply's conversation id (Home Assistant lets it lapse by itself after a quiet while).
    let conversation = Mutex<String?>(nil)

    public init(inner: any VoiceSearchService, client: ConversationClient) {
        self.inner = inner
        self.client = client
    }

    public func startVoiceSearch(afterHotPhrase: Bool, endsAtSafeToStop: Bool) throws(SearchError) -> any VoiceSearchSession {
        HandOffSession(owner: self, inner: try inner.startVoiceSearch(afterHotPhrase: afterHotPhrase, endsAtSafeToStop: endsAtSafeToStop))
    }

    public func startTextSearch(_ query: String) throws(SearchError) -> any VoiceSearchSession {
        HandOffSession(owner: self, inner: try inner.startTextSearch(query))
    }

    public func keepConversation(_ state: JSONValue) { inner.keepConversation(state) }

    /// A new conversation with Houndify is a new one with Home Assistant too.
    public func clearConversation() {
        conversation.withLock { $0 = nil }
        inner.clearConversation()
    }

    public func reachable() async -> Bool { await inner.reachable() }

    /// The answer to say for `answer` once Home Assistant has replied `reply`: its words where it was asked for them
    /// (an owner's phrase) or understood them; else the answer as Houndify's reading of it had it.
    public static func answer(_ answer: SpeakerAnswer, reply: ConversationReply) -> SpeakerAnswer {
        let understood: Bool
        switch reply.outcome {
        case .actionDone, .queryAnswer: understood = true
        // Words it took for a home command but could not carry out ("no device called ...") are its to explain.
        case .error(let code): understood = code != .noIntentMatch
        case .failed: understood = false
        }
        guard answer.handOff == .always || understood else { return answer }
        var said = SpeakerAnswer(transcript: answer.transcript, text: reply.spoken, autoListen: reply.continueConversation)
        said.handOff = nil
        return said
    }

    /// Asks Home Assistant on a thread of its own (the call blocks up to the client's timeout); `done` hears the
    /// answer to say.
    func handOff(_ answer: SpeakerAnswer, done: @escaping @Sendable (SpeakerAnswer) -> Void) {
        let words = answer.transcript
        guard !words.allSatisfy(\.isWhitespace) else { return done(answer) }
        let started = OwnedThread.tryStart(name: "hs-home") { [self] in
            let reply = client.process(words, conversationID: conversation.withLock { $0 })
            if let id = reply.conversationID { conversation.withLock { $0 = id } }
            done(Self.answer(answer, reply: reply))
        }
        if let refused = started {
            client.logger?.error("Home Assistant: the hand-off's thread could not start: \(refused)")
            done(Self.answer(answer, reply: HomeAssistantConversation.reply(failure: .unreachable, reason: "\(refused)", url: client.url)))
        }
    }
}

/// One question through the hand-off: the inner search's events, with a marked answer replaced by Home
/// Assistant's once it has replied.
final class HandOffSession: VoiceSearchSession {
    let events: AsyncStream<SearchEvent>
    private let continuation: AsyncStream<SearchEvent>.Continuation
    private let inner: any VoiceSearchSession
    /// Cancelled, or its answer told: nothing more goes out.
    private let ended = Mutex(false)

    init(owner: HomeAssistantHandOff, inner: any VoiceSearchSession) {
        (events, continuation) = AsyncStream.makeStream(of: SearchEvent.self)
        self.inner = inner
        Task { [weak self, owner] in
            for await event in inner.events {
                guard let self else { return }
                if case .answer(let answer) = event, answer.handOff != nil {
                    owner.handOff(answer) { [weak self] said in self?.tell(.answer(said), last: true) }
                    return
                }
                let last = if case .answer = event { true } else if case .failed = event { true } else { false }
                self.tell(event, last: last)
                if last { return }
            }
            // The inner search ended without a word (cancelled): so does this one.
            self?.continuation.finish()
        }
    }

    var firstAudioSent: ContinuousClock.Instant? { inner.firstAudioSent }
    func write(_ samples: UnsafeBufferPointer<Int16>) -> Bool { inner.write(samples) }
    func finish() { inner.finish() }

    func cancel() {
        ended.withLock { $0 = true }
        inner.cancel()
        continuation.finish()
    }

    private func tell(_ event: SearchEvent, last: Bool) {
        let open = ended.withLock { e -> Bool in
            defer { if last { e = true } }
            return !e
        }
        guard open else { return }
        continuation.yield(event)
        if last { continuation.finish() }
    }
}
