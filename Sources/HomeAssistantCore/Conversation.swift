import FoundationEssentials
import JSONKit

/// Home Assistant's conversation API (issue #65, "Home control through Home Assistant"): a home-automation command
/// is handed to it in words (`POST /api/conversation/process`, developers.home-assistant.io, "Conversation API") and
/// its reply is spoken. Pure: the request to send and what the answer means, in a sentence for the kitchen and a
/// line for the owner's log. The HTTP call is HomeAssistant's ConversationClient.
public enum HomeAssistantConversation {
    /// The API's path under Home Assistant's base URL.
    public static let path = "/api/conversation/process"

    /// `{url}/api/conversation/process`, with one slash between them whether or not the configured url ends in one.
    public static func endpoint(baseURL: String) -> String {
        var base = Substring(baseURL)
        while base.hasSuffix("/") { base = base.dropLast() }
        return base + path
    }

    /// The POST: its URL, headers and JSON body. `language` defaults to English because the words are Houndify's
    /// transcript of English speech, whatever Home Assistant's own language; nil leaves it to Home Assistant.
    /// An empty `conversationID` or `agentID` is left out (a new conversation; the default agent).
    public static func request(baseURL: String, token: String, text: String, conversationID: String? = nil,
                               agentID: String = "", language: String? = "en") -> ConversationRequest {
        var members: [(String, JSONValue)] = [("text", .string(text))]
        if let language, !language.isEmpty { members.append(("language", .string(language))) }
        if let conversationID, !conversationID.isEmpty { members.append(("conversation_id", .string(conversationID))) }
        if !agentID.isEmpty { members.append(("agent_id", .string(agentID))) }
        return ConversationRequest(url: endpoint(baseURL: baseURL),
                                   headers: ["Authorization: Bearer \(token)", "Content-Type: application/json"],
                                   body: Array(JSONValue.asciiJSON(orderedMembers: members).utf8))
    }

    /// What Home Assistant's answer means. `url` is the endpoint the request went to (named in the log line).
    public static func reply(status: Int, body: [UInt8], url: String) -> ConversationReply {
        switch status {
        case 200..<300: return read(body, url: url)
        case 401, 403: return .failure(.refusedToken(status: status), url: url, body: body)
        case 404: return .failure(.notFound, url: url, body: body)
        default: return .failure(.httpStatus(status), url: url, body: body)
        }
    }

    /// No answer at all: the transport's failure (HomeAssistant maps libcurl's to these), with its reason.
    public static func reply(failure: ConversationReply.Failure, reason: String, url: String) -> ConversationReply {
        .failure(failure, url: url, reason: reason)
    }

    static func read(_ body: [UInt8], url: String) -> ConversationReply {
        guard let json = try? JSONValue(parsing: Data(body)), let response = json["response"]?.objectValue,
              let type = response["response_type"]?.stringValue else {
            return .failure(.notTheAPI, url: url, body: body)
        }
        let speech = (response["speech"]?["plain"]?["speech"]?.stringValue ?? "").trimmingWhitespace
        let conversationID = json["conversation_id"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
        // Newer Home Assistants say when their agent asked a question back (2025.4 onwards).
        let continues = json["continue_conversation"]?.boolValue ?? false
        let outcome: ConversationReply.Outcome
        switch type {
        case "action_done": outcome = .actionDone
        case "query_answer": outcome = .queryAnswer
        case "error": outcome = .error(ConversationReply.ErrorCode(rawValue: response["data"]?["code"]?.stringValue ?? "") ?? .unknown)
        // Only the three are documented; another (an older "partial_action_done", a future one) is spoken if it
        // says something, and otherwise is not the API's answer as the speaker knows it.
        default:
            guard !speech.isEmpty else { return .failure(.notTheAPI, url: url, body: body) }
            outcome = .queryAnswer
        }
        let spoken = speech.isEmpty ? outcome.fallback : speech
        let logged: String
        switch outcome {
        case .error(let code):
            logged = "Home Assistant at \(url) could not do it (\(code.rawValue)): \"\(spoken)\""
        default:
            logged = "Home Assistant at \(url) answered (\(type)): \"\(spoken)\""
        }
        return ConversationReply(outcome: outcome, spoken: spoken, logged: logged, conversationID: conversationID,
                                 continueConversation: continues)
    }
}

/// One POST to Home Assistant's conversation API, ready for any HTTP client.
public struct ConversationRequest: Sendable, Equatable {
    public var url: String
    /// "Name: value" lines; the first is the token's.
    public var headers: [String]
    public var body: [UInt8]
}

/// What the speaker says after handing words to Home Assistant, whatever happened: `spoken` is always a sentence.
public struct ConversationReply: Sendable, Equatable {
    public var outcome: Outcome
    /// Home Assistant's own reply, or a short sentence saying what went wrong, in words for the kitchen.
    public var spoken: String
    /// For the owner's log: the URL, the HTTP status, what to check. Never the token.
    public var logged: String
    /// Home Assistant's id for this conversation: sent back with a follow-up so that "and the other one" is
    /// understood. Nil when there was none (every failure).
    public var conversationID: String?
    /// Home Assistant's agent asked something back and expects an answer.
    public var continueConversation = false

    public enum Outcome: Sendable, Equatable {
        /// Home Assistant did something ("Turned off the light").
        case actionDone
        /// Home Assistant answered a question ("The kitchen is 21 degrees").
        case queryAnswer
        /// Home Assistant understood the exchange but could not do what was asked (its `error` response).
        case error(ErrorCode)
        /// No answer from Home Assistant's conversation API.
        case failed(Failure)

        /// The sentence when Home Assistant gave none.
        var fallback: String {
            switch self {
            case .actionDone: "Done."
            case .queryAnswer: "Home Assistant had nothing to say to that."
            case .error(.noIntentMatch): "Home Assistant didn't understand that."
            case .error(.noValidTargets): "Home Assistant couldn't find that device."
            case .error(.failedToHandle): "Home Assistant couldn't do that."
            case .error(.unknown): "Something went wrong in Home Assistant."
            case .failed(let failure): failure.spoken
            }
        }
    }

    /// Home Assistant's `data.code` in an `error` response.
    public enum ErrorCode: String, Sendable, CaseIterable {
        /// The words matched no intent.
        case noIntentMatch = "no_intent_match"
        /// An intent matched, but no device or area it names.
        case noValidTargets = "no_valid_targets"
        /// The intent was found but failed to run.
        case failedToHandle = "failed_to_handle"
        /// Anything else (and a code this speaker does not know).
        case unknown
    }

    public enum Failure: Sendable, Equatable {
        /// No connection: refused, no route, the name did not resolve, or not made in time.
        case unreachable
        /// Connected, but no answer in time (an LLM agent can take a while).
        case timedOut
        /// TLS failed: the certificate is not one the system trusts, or the handshake failed.
        case insecure
        /// HTTP 401 or 403: the token is wrong, expired or revoked.
        case refusedToken(status: Int)
        /// HTTP 404: not Home Assistant's address, or no conversation integration there.
        case notFound
        /// Another HTTP status.
        case httpStatus(Int)
        /// A success status whose body is not the conversation API's JSON.
        case notTheAPI

        var spoken: String {
            switch self {
            case .unreachable: "I can't reach Home Assistant."
            case .timedOut: "Home Assistant didn't answer in time."
            case .insecure: "I can't make a secure connection to Home Assistant."
            case .refusedToken: "Home Assistant refused the speaker's token."
            case .notFound: "I couldn't find Home Assistant's conversation service."
            case .httpStatus: "Home Assistant ran into a problem."
            case .notTheAPI: "Home Assistant's answer didn't make sense to me."
            }
        }
    }

    public init(outcome: Outcome, spoken: String, logged: String, conversationID: String? = nil, continueConversation: Bool = false) {
        self.outcome = outcome
        self.spoken = spoken
        self.logged = logged
        self.conversationID = conversationID
        self.continueConversation = continueConversation
    }

    /// Home Assistant did or answered what was asked.
    public var succeeded: Bool { outcome == .actionDone || outcome == .queryAnswer }

    /// A failure before any answer: `reason` is the transport's (libcurl's).
    static func failure(_ failure: Failure, url: String, reason: String) -> ConversationReply {
        let logged: String
        switch failure {
        case .unreachable:
            logged = "Home Assistant: cannot reach \(url): \(reason). Check [home_assistant] url and that Home Assistant is running"
        case .timedOut:
            logged = "Home Assistant at \(url) did not answer in time: \(reason)"
        case .insecure:
            logged = "Home Assistant at \(url): the TLS connection failed: \(reason). Its certificate must be one the system trusts (or use its http:// address on the LAN)"
        default:
            logged = "Home Assistant at \(url): \(reason)"
        }
        return ConversationReply(outcome: .failed(failure), spoken: failure.spoken, logged: logged)
    }

    /// A failure with an answer: the status and a glimpse of the body go to the log.
    static func failure(_ failure: Failure, url: String, body: [UInt8]) -> ConversationReply {
        let glimpse = Self.glimpse(body)
        let logged: String
        switch failure {
        case .refusedToken(let status):
            logged = "Home Assistant at \(url) refused the token (HTTP \(status)): check [home_assistant] token (a long-lived access token from your Home Assistant profile, Security tab)"
        case .notFound:
            logged = "Home Assistant at \(url) answered HTTP 404: check that [home_assistant] url is Home Assistant's own address (e.g. http://homeassistant.local:8123) and that its conversation integration is loaded (default_config)"
        case .httpStatus(let status):
            logged = "Home Assistant at \(url) answered with an error (HTTP \(status))" + (glimpse.isEmpty ? "" : ": \(glimpse)")
        case .notTheAPI:
            logged = "Home Assistant at \(url) answered, but not with the conversation API's JSON" + (glimpse.isEmpty ? " (an empty body)" : ": \(glimpse)")
        case .unreachable, .timedOut, .insecure:
            logged = "Home Assistant at \(url): \(failure)"
        }
        return ConversationReply(outcome: .failed(failure), spoken: failure.spoken, logged: logged)
    }

    /// The start of a body on one line, for a log: enough to recognise a proxy's page or a stack trace.
    static func glimpse(_ body: [UInt8]) -> String {
        let text = String(decoding: body.prefix(200), as: UTF8.self)
        let line = String(text.map { $0.isNewline || $0 == "\t" ? " " : $0 }).trimmingWhitespace
        return line.count > 120 ? String(line.prefix(120)) + "..." : line
    }
}
