import Foundation
import Glibc
import HomeAssistant
import HomeAssistantCore
import JSONKit
import Testing
import TestSupport

/// Home Assistant's answer as its conversation API writes it (developers.home-assistant.io, "Conversation API").
private func answer(_ type: String, speech: String?, code: String? = nil, conversationID: String? = "01JABCDEF",
                    continues: Bool? = nil) -> [UInt8] {
    var response: [String: JSONValue] = ["response_type": .string(type), "language": "en", "card": .object([:])]
    if let speech { response["speech"] = ["plain": ["speech": .string(speech), "extra_data": .null]] }
    response["data"] = code.map { ["code": .string($0)] } ?? ["targets": [], "success": [], "failed": []]
    var top: [String: JSONValue] = ["response": .object(response)]
    if let conversationID { top["conversation_id"] = .string(conversationID) }
    if let continues { top["continue_conversation"] = .bool(continues) }
    return Array(JSONValue.object(top).asciiJSON().utf8)
}

private let endpoint = "http://ha.local:8123/api/conversation/process"

private func reply(_ body: [UInt8], status: Int = 200) -> ConversationReply {
    HomeAssistantConversation.reply(status: status, body: body, url: endpoint)
}

private func reply(_ text: String, status: Int = 200) -> ConversationReply { reply(Array(text.utf8), status: status) }

/// The request and the reading of the answer: no network.
@Suite struct ConversationTests {
    @Test func theEndpointIsJoinedWithOneSlash() {
        #expect(HomeAssistantConversation.endpoint(baseURL: "http://ha.local:8123") == endpoint)
        #expect(HomeAssistantConversation.endpoint(baseURL: "http://ha.local:8123/") == endpoint)
        #expect(HomeAssistantConversation.endpoint(baseURL: "http://ha.local:8123//") == endpoint)
        let proxied = HomeAssistantConversation.endpoint(baseURL: "https://example.org/ha/")
        #expect(proxied == "https://example.org/ha/api/conversation/process")
    }

    @Test func theRequestCarriesTheTokenAndTheWords() throws {
        let request = HomeAssistantConversation.request(baseURL: "http://ha.local:8123/", token: "abc.def", text: "turn off the kitchen light")
        #expect(request.url == endpoint)
        #expect(request.headers == ["Authorization: Bearer abc.def", "Content-Type: application/json"])
        let body = try JSONValue(parsing: Data(request.body))
        #expect(body["text"] == "turn off the kitchen light")
        #expect(body["language"] == "en")
        // A first question starts a conversation; the default agent is Home Assistant's to choose.
        #expect(body["conversation_id"] == nil && body["agent_id"] == nil)
        #expect(body.objectValue?.count == 2)
    }

    @Test func aFollowUpCarriesTheConversationAndTheAgent() throws {
        let request = HomeAssistantConversation.request(baseURL: "http://ha.local:8123", token: "t", text: "and the other one",
                                                        conversationID: "01JABCDEF", agentID: "conversation.chatgpt", language: nil)
        let body = try JSONValue(parsing: Data(request.body))
        #expect(body["conversation_id"] == "01JABCDEF" && body["agent_id"] == "conversation.chatgpt")
        #expect(body["language"] == nil)
        let empty = HomeAssistantConversation.request(baseURL: "http://ha.local:8123", token: "t", text: "x", conversationID: "")
        #expect(try JSONValue(parsing: Data(empty.body))["conversation_id"] == nil)
    }

    /// Any words, quotes and all, arrive as they were said (the body is ASCII JSON with escapes).
    @Test func theWordsAreEscaped() throws {
        let words = "turn on the \"café\" light\nnow \\ please"
        let request = HomeAssistantConversation.request(baseURL: "http://ha.local:8123", token: "t", text: words)
        #expect(request.body.allSatisfy { $0 < 0x80 })
        #expect(try JSONValue(parsing: Data(request.body))["text"]?.stringValue == words)
    }

    @Test func anActionDoneIsSpokenAsHomeAssistantSaidIt() {
        let done = reply(answer("action_done", speech: "Turned off the light"))
        #expect(done.outcome == .actionDone && done.succeeded)
        #expect(done.spoken == "Turned off the light")
        #expect(done.conversationID == "01JABCDEF" && !done.continueConversation)
        #expect(done.logged.contains(endpoint) && done.logged.contains("Turned off the light"))
        // Nothing to say: the speaker still says something.
        let quiet = reply(answer("action_done", speech: ""))
        #expect(quiet.outcome == .actionDone && quiet.spoken == "Done.")
        let noSpeech = reply(answer("action_done", speech: nil, conversationID: nil))
        #expect(noSpeech.spoken == "Done." && noSpeech.conversationID == nil)
    }

    @Test func aQueryAnswerAndAQuestionBack() {
        let answered = reply(answer("query_answer", speech: "It is 21 degrees", continues: true))
        #expect(answered.outcome == .queryAnswer && answered.succeeded)
        #expect(answered.spoken == "It is 21 degrees" && answered.continueConversation)
        let quiet = reply(answer("query_answer", speech: "  "))
        #expect(quiet.outcome == .queryAnswer && !quiet.spoken.isEmpty)
    }

    @Test(arguments: ConversationReply.ErrorCode.allCases)
    func anErrorSpeaksHomeAssistantsSentence(code: ConversationReply.ErrorCode) {
        let said = reply(answer("error", speech: "Sorry, I couldn't understand that", code: code.rawValue))
        #expect(said.outcome == .error(code) && !said.succeeded)
        #expect(said.spoken == "Sorry, I couldn't understand that")
        #expect(said.logged.contains(code.rawValue))
        // The conversation goes on after an error: the id is kept.
        #expect(said.conversationID == "01JABCDEF")
    }

    /// An error with no speech gets a sentence of the speaker's own, one per code.
    @Test func anErrorWithoutSpeechHasASentencePerCode() {
        var sentences: Set<String> = []
        for code in ConversationReply.ErrorCode.allCases {
            let quiet = reply(answer("error", speech: "", code: code.rawValue))
            #expect(quiet.outcome == .error(code))
            #expect(quiet.spoken.hasPrefix("Home Assistant") || quiet.spoken.hasPrefix("Something"))
            sentences.insert(quiet.spoken)
        }
        #expect(sentences.count == ConversationReply.ErrorCode.allCases.count)
        #expect(reply(answer("error", speech: "", code: "no_valid_targets")).spoken == "Home Assistant couldn't find that device.")
        // A code this speaker does not know, or none: unknown.
        #expect(reply(answer("error", speech: "", code: "something_new")).outcome == .error(.unknown))
        #expect(reply(answer("error", speech: "Oops", code: nil)).outcome == .error(.unknown))
    }

    @Test func aTypeNotDocumentedIsSpokenOnlyIfItSaysSomething() {
        let partial = reply(answer("partial_action_done", speech: "Turned on 2 of 3 lights"))
        #expect(partial.outcome == .queryAnswer && partial.spoken == "Turned on 2 of 3 lights")
        let silent = reply(answer("partial_action_done", speech: nil))
        #expect(silent.outcome == .failed(.notTheAPI))
    }

    @Test(arguments: ["", "<html><body>Welcome to the captive portal</body></html>", "[1, 2]", "{\"message\": \"API running.\"}",
                      "{\"response\": {\"speech\": {}}}", "{\"response\": \"action_done\"}", "{\"response\": {\"response_type\": 1}}"])
    func aSuccessThatIsNotTheAPIsAnswerIsSaidPlainly(body: String) {
        let odd = reply(body)
        #expect(odd.outcome == .failed(.notTheAPI) && !odd.succeeded)
        #expect(odd.spoken == "Home Assistant's answer didn't make sense to me.")
        #expect(odd.logged.contains(endpoint) && odd.logged.contains("not with the conversation API's JSON"))
        #expect(odd.conversationID == nil)
    }

    @Test func aRefusedTokenIsToldToTheOwner() {
        for status in [401, 403] {
            let refused = reply("401: Unauthorized", status: status)
            #expect(refused.outcome == .failed(.refusedToken(status: status)))
            #expect(refused.spoken == "Home Assistant refused the speaker's token.")
            #expect(refused.logged.contains("check [home_assistant] token") && refused.logged.contains("HTTP \(status)"))
            #expect(refused.logged.contains(endpoint))
        }
    }

    @Test func aMissingAPIAndOtherStatuses() {
        let missing = reply("404: Not Found", status: 404)
        #expect(missing.outcome == .failed(.notFound))
        #expect(missing.spoken == "I couldn't find Home Assistant's conversation service.")
        #expect(missing.logged.contains("HTTP 404") && missing.logged.contains("[home_assistant] url"))
        let broken = reply("500 Internal Server Error\n\nServer got itself in trouble", status: 500)
        #expect(broken.outcome == .failed(.httpStatus(500)))
        #expect(broken.spoken == "Home Assistant ran into a problem.")
        #expect(broken.logged.contains("answered with an error (HTTP 500)") && broken.logged.contains("Server got itself in trouble"))
        #expect(!broken.logged.contains("\n"))
        let gateway = reply(Array(repeating: UInt8(ascii: "x"), count: 5000), status: 502)
        #expect(gateway.outcome == .failed(.httpStatus(502)) && gateway.logged.count < 300)
    }

    @Test func noAnswerAtAll() {
        let cases: [(ConversationReply.Failure, String)] = [
            (.unreachable, "I can't reach Home Assistant."),
            (.timedOut, "Home Assistant didn't answer in time."),
            (.insecure, "I can't make a secure connection to Home Assistant."),
        ]
        for (failure, sentence) in cases {
            let none = HomeAssistantConversation.reply(failure: failure, reason: "Couldn't connect to server", url: endpoint)
            #expect(none.outcome == .failed(failure) && none.spoken == sentence)
            #expect(none.logged.contains(endpoint) && none.logged.contains("Couldn't connect to server"))
        }
    }

    /// What is spoken is a sentence for the kitchen: never a status code, a URL or JSON.
    @Test func everySpokenSentenceIsPlain() {
        var replies = [reply("x", status: 500), reply("x", status: 404), reply("x", status: 401), reply("<html>"),
                       reply(answer("action_done", speech: nil)), reply(answer("query_answer", speech: nil))]
        for code in ConversationReply.ErrorCode.allCases { replies.append(reply(answer("error", speech: nil, code: code.rawValue))) }
        for failure in [ConversationReply.Failure.unreachable, .timedOut, .insecure] {
            replies.append(HomeAssistantConversation.reply(failure: failure, reason: "r", url: endpoint))
        }
        for r in replies {
            #expect(r.spoken.hasSuffix("."), "\(r.spoken)")
            #expect(!r.spoken.contains("HTTP") && !r.spoken.contains("http") && !r.spoken.contains("{"), "\(r.spoken)")
        }
    }
}

/// The client against the stand-in: libcurl, the real HTTP exchange, every failure a person can meet.
@Suite(.ownThread) struct ConversationClientTests {
    static let token = "test-token-8f3a1c"

    @Test func aCommandIsDoneAndTheConversationKept() throws {
        let ha = try HomeAssistantStandIn(token: Self.token)
        let lines = LogLines()
        let client = ConversationClient(url: ha.url + "/", token: Self.token, logger: lines.logger)
        let first = client.process("turn off the kitchen light")
        #expect(first.outcome == .actionDone && first.spoken == "Turned off the light")
        let id = try #require(first.conversationID)
        let second = client.process("what is the temperature", conversationID: id)
        #expect(second.outcome == .queryAnswer && second.spoken == "It is 21 degrees")
        #expect(second.conversationID == id)
        let sent = ha.requests
        #expect(sent.count == 2)
        #expect(sent.first?["path"] == "/api/conversation/process")
        #expect(sent.first?["authorization"]?.stringValue == "Bearer \(Self.token)")
        #expect(sent.first?["content_type"] == "application/json")
        #expect(ha.body(0)?["text"] == "turn off the kitchen light" && ha.body(0)?["conversation_id"] == nil)
        #expect(ha.body(1)?["text"] == "what is the temperature" && ha.body(1)?["conversation_id"]?.stringValue == id)
        #expect(lines.all.contains { $0.hasPrefix("info") && $0.contains("Turned off the light") })
    }

    @Test func wordsHomeAssistantDoesNotKnow() throws {
        let ha = try HomeAssistantStandIn(token: Self.token)
        let client = ConversationClient(url: ha.url, token: Self.token, agentID: "conversation.home_assistant")
        let unknown = client.process("make me a sandwich")
        #expect(unknown.outcome == .error(.noIntentMatch) && unknown.spoken == "Sorry, I couldn't understand that")
        let garage = client.process("turn on the garage")
        #expect(garage.outcome == .error(.noValidTargets) && garage.spoken.contains("garage"))
        let broken = client.process("break it")
        #expect(broken.outcome == .error(.failedToHandle) && broken.spoken == "Home Assistant couldn't do that.")
        #expect(ha.body(0)?["agent_id"] == "conversation.home_assistant")
    }

    /// A wrong token: refused in words, and the owner's log says what to fix without showing either token.
    @Test func aWrongTokenIsRefused() throws {
        let ha = try HomeAssistantStandIn(token: Self.token)
        let lines = LogLines()
        let wrong = "wrong-token-77d2e9"
        let refused = ConversationClient(url: ha.url, token: wrong, logger: lines.logger).process("turn off the kitchen light")
        #expect(refused.outcome == .failed(.refusedToken(status: 401)))
        #expect(refused.spoken == "Home Assistant refused the speaker's token.")
        let logged = lines.all.joined(separator: "\n")
        #expect(logged.hasPrefix("error") && logged.contains("check [home_assistant] token") && logged.contains("HTTP 401"))
        #expect(!logged.contains(wrong) && !logged.contains(Self.token))
        #expect(!refused.logged.contains(wrong) && !refused.spoken.contains(wrong))
    }

    @Test func aWrongURLIsNotFound() throws {
        let ha = try HomeAssistantStandIn(token: Self.token)
        let missing = ConversationClient(url: ha.url + "/lovelace", token: Self.token).process("turn off the kitchen light")
        #expect(missing.outcome == .failed(.notFound))
        #expect(missing.logged.contains("\(ha.url)/lovelace/api/conversation/process"))
    }

    @Test func aServerErrorIsLoggedWithItsStatus() throws {
        let ha = try HomeAssistantStandIn(token: Self.token, ["--status", "500"])
        let lines = LogLines()
        let broken = ConversationClient(url: ha.url, token: Self.token, logger: lines.logger).process("turn off the kitchen light")
        #expect(broken.outcome == .failed(.httpStatus(500)) && broken.spoken == "Home Assistant ran into a problem.")
        #expect(lines.all.contains { $0.hasPrefix("warning") && $0.contains("answered with an error (HTTP 500)") })
    }

    @Test func aPageThatIsNotJSON() throws {
        let ha = try HomeAssistantStandIn(token: Self.token, ["--not-json"])
        let odd = ConversationClient(url: ha.url, token: Self.token).process("turn off the kitchen light")
        #expect(odd.outcome == .failed(.notTheAPI) && odd.logged.contains("captive portal"))
    }

    /// Nothing listens on the port: refused at once.
    @Test func aClosedPortIsUnreachable() throws {
        let held = try HeldPort()
        let lines = LogLines()
        let client = ConversationClient(url: "http://127.0.0.1:\(held.port)", token: Self.token, logger: lines.logger)
        let none = client.process("turn off the kitchen light")
        #expect(none.outcome == .failed(.unreachable) && none.spoken == "I can't reach Home Assistant.")
        #expect(none.conversationID == nil)
        #expect(lines.all.contains { $0.hasPrefix("warning") && $0.contains("cannot reach http://127.0.0.1:\(held.port)") })
    }

    /// Home Assistant takes longer than the timeout: the client gives up and says so (a short timeout here; 15 s
    /// on the speaker).
    @Test func aSlowAnswerTimesOut() throws {
        let ha = try HomeAssistantStandIn(token: Self.token, ["--sleep", "10"])
        let client = ConversationClient(url: ha.url, token: Self.token, connectTimeoutMS: 2_000, timeoutMS: 1_000)
        let late = client.process("turn off the kitchen light")
        #expect(late.outcome == .failed(.timedOut) && late.spoken == "Home Assistant didn't answer in time.")
    }
}
