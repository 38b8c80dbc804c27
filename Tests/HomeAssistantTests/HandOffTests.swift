import Foundation
import HomeAssistant
import HomeAssistantCore
import JSONKit
import SpeakerCore
import Synchronization
import Testing
import TestSupport

/// A search that answers each question with the next of `answers`, at once.
final class ScriptedSearch: VoiceSearchService {
    let answers: Mutex<[SearchEvent]>
    init(_ answers: [SearchEvent]) { self.answers = Mutex(answers) }

    final class Session: VoiceSearchSession {
        let events: AsyncStream<SearchEvent>
        init(_ event: SearchEvent?) {
            let (events, continuation) = AsyncStream.makeStream(of: SearchEvent.self)
            self.events = events
            if let event { continuation.yield(event) }
            continuation.finish()
        }
        func write(_ samples: UnsafeBufferPointer<Int16>) -> Bool { false }
        func finish() {}
        func cancel() {}
        var firstAudioSent: ContinuousClock.Instant? { nil }
    }

    func startVoiceSearch(afterHotPhrase: Bool, endsAtSafeToStop: Bool) throws(SearchError) -> any VoiceSearchSession {
        Session(answers.withLock { $0.isEmpty ? nil : $0.removeFirst() })
    }
    func startTextSearch(_ query: String) throws(SearchError) -> any VoiceSearchSession {
        try startVoiceSearch(afterHotPhrase: false, endsAtSafeToStop: true)
    }
    func clearConversation() {}
}

func marked(_ words: String, _ text: String, _ handOff: HomeHandOff?) -> SpeakerAnswer {
    var answer = SpeakerAnswer(transcript: words, text: text)
    answer.handOff = handOff
    return answer
}

/// What a session tells, to its end.
func outcome(_ session: any VoiceSearchSession) async -> [SearchEvent] {
    var all: [SearchEvent] = []
    for await event in session.events { all.append(event) }
    return all
}

@Suite struct HandOffAnswerTests {
    static func reply(_ outcome: ConversationReply.Outcome, _ spoken: String, continues: Bool = false) -> ConversationReply {
        ConversationReply(outcome: outcome, spoken: spoken, logged: "", continueConversation: continues)
    }

    @Test func anOwnersPhraseSaysHomeAssistantsReplyWhateverItIs() {
        let asked = marked("lights off", "OK.", .always)
        for reply in [Self.reply(.actionDone, "Turned off the light"), Self.reply(.error(.noIntentMatch), "Sorry, I couldn't understand that"),
                      Self.reply(.failed(.unreachable), "I can't reach Home Assistant.")] {
            let said = HomeAssistantHandOff.answer(asked, reply: reply)
            #expect(said.text == reply.spoken && said.transcript == "lights off" && said.handOff == nil)
        }
    }

    @Test func whatTheSpeakerCannotDoIsHomeAssistantsOnlyIfItUnderstood() {
        let maybe = marked("turn on the garage", SpeakerAnswer.cannotDoThat, .ifUnderstood)
        #expect(HomeAssistantHandOff.answer(maybe, reply: Self.reply(.actionDone, "Turned on the garage")).text == "Turned on the garage")
        #expect(HomeAssistantHandOff.answer(maybe, reply: Self.reply(.queryAnswer, "It is open")).text == "It is open")
        // It took the words for a home command it could not carry out: its words say why.
        let noDevice = Self.reply(.error(.noValidTargets), "Sorry, I am not aware of any device called garage")
        #expect(HomeAssistantHandOff.answer(maybe, reply: noDevice).text == noDevice.spoken)
        // Not its words, or not reachable: the speaker's own answer stands (a phone call is not Home Assistant's).
        #expect(HomeAssistantHandOff.answer(maybe, reply: Self.reply(.error(.noIntentMatch), "Sorry")) == maybe)
        #expect(HomeAssistantHandOff.answer(maybe, reply: Self.reply(.failed(.timedOut), "Home Assistant took too long.")) == maybe)
        // A question back from Home Assistant opens the microphone again.
        #expect(HomeAssistantHandOff.answer(maybe, reply: Self.reply(.queryAnswer, "Which light?", continues: true)).autoListen)
    }
}

/// The hand-off between a search and the stand-in Home Assistant (Tests/support/ha_standin.py), over libcurl.
@Suite(.ownThread) struct HandOffTests {
    static let token = "test-token-8f3a1c"

    static func handOff(_ ha: HomeAssistantStandIn, _ answers: [SearchEvent], timeoutMS: Int = 15_000) -> HomeAssistantHandOff {
        HomeAssistantHandOff(inner: ScriptedSearch(answers), client: ConversationClient(url: ha.url, token: token, timeoutMS: timeoutMS))
    }

    @Test func markedAnswersAreHomeAssistantsAndTheConversationGoesOn() async throws {
        let ha = try HomeAssistantStandIn(token: Self.token)
        let search = Self.handOff(ha, [.answer(marked("turn off the kitchen light", "OK.", .always)),
                                       .answer(marked("what is the temperature", "Didn't get that!", .ifUnderstood)),
                                       .answer(marked("call mom", SpeakerAnswer.cannotDoThat, .ifUnderstood)),
                                       .answer(marked("what time is it", "It is 5 o'clock.", nil))])
        let first = await outcome(try search.startVoiceSearch(afterHotPhrase: false, endsAtSafeToStop: true))
        #expect(first == [.answer(SpeakerAnswer(transcript: "turn off the kitchen light", text: "Turned off the light"))])
        let second = await outcome(try search.startTextSearch("what is the temperature"))
        #expect(second == [.answer(SpeakerAnswer(transcript: "what is the temperature", text: "It is 21 degrees"))])
        let third = await outcome(try search.startVoiceSearch(afterHotPhrase: false, endsAtSafeToStop: true))
        #expect(third == [.answer(marked("call mom", SpeakerAnswer.cannotDoThat, .ifUnderstood))])
        // Houndify's own answers never reach Home Assistant.
        let fourth = await outcome(try search.startVoiceSearch(afterHotPhrase: false, endsAtSafeToStop: true))
        #expect(fourth == [.answer(marked("what time is it", "It is 5 o'clock.", nil))])
        #expect(ha.requests.count == 3)
        // One conversation: the follow-up carries the first reply's id.
        let id = try #require(ha.requests.count > 1 ? ha.body(1)?["conversation_id"]?.stringValue : nil)
        #expect(ha.body(0)?["conversation_id"] == nil && ha.body(2)?["conversation_id"]?.stringValue == id)
    }

    @Test func aNewConversationStartsAnewWithHomeAssistantToo() async throws {
        let ha = try HomeAssistantStandIn(token: Self.token)
        let search = Self.handOff(ha, [.answer(marked("turn off the kitchen light", "OK.", .always)),
                                       .answer(marked("turn off the kitchen light", "OK.", .always))])
        _ = await outcome(try search.startVoiceSearch(afterHotPhrase: false, endsAtSafeToStop: true))
        search.clearConversation()
        _ = await outcome(try search.startVoiceSearch(afterHotPhrase: false, endsAtSafeToStop: true))
        #expect(ha.requests.count == 2 && ha.body(1)?["conversation_id"] == nil)
    }

    @Test func homeAssistantUnreachableIsSaidInWords() async throws {
        let port = try HeldPort()
        let search = HomeAssistantHandOff(inner: ScriptedSearch([.answer(marked("lights off", "OK.", .always))]),
                                          client: ConversationClient(url: "http://127.0.0.1:\(port.port)", token: Self.token))
        // Refused while the port is held: nothing listens on it.
        let said = await outcome(try search.startVoiceSearch(afterHotPhrase: false, endsAtSafeToStop: true))
        withExtendedLifetime(port) {}
        #expect(said == [.answer(SpeakerAnswer(transcript: "lights off", text: "I can't reach Home Assistant."))])
    }

    @Test func aCancelledQuestionSaysNothingWhenHomeAssistantAnswersLate() async throws {
        // A reply that cannot come before the cancel, however loaded the machine (the stand-in's end at the test's end
        // ends the exchange).
        let ha = try HomeAssistantStandIn(token: Self.token, ["--sleep", "600"])
        let search = Self.handOff(ha, [.answer(marked("turn off the kitchen light", "OK.", .always))], timeoutMS: 600_000)
        let session = try search.startVoiceSearch(afterHotPhrase: false, endsAtSafeToStop: true)
        // Asked (the stand-in has the request), then cancelled, as a press during "thinking" does.
        for _ in 0..<6000 where ha.requests.isEmpty { try await Task.sleep(for: .milliseconds(10)) }
        #expect(ha.requests.count == 1)
        session.cancel()
        #expect(await outcome(session).isEmpty)
    }
}
