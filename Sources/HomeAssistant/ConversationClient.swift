public import HomeAssistantCore
import Houndify
public import Logging

/// Hands words to Home Assistant's conversation API and reads its reply (issue #65, "Home control through Home
/// Assistant"). Blocking: call `process` on a thread the caller owns, never on the speaker's loop; it returns within
/// the timeout whatever Home Assistant does.
public struct ConversationClient: Sendable {
    /// Home Assistant's base URL (`[home_assistant] url`).
    public var url: String
    /// The long-lived access token (`[home_assistant] token`): sent in the header, never logged.
    public var token: String
    /// `[home_assistant] agent_id`; "": Home Assistant's default agent.
    public var agentID: String
    public var connectTimeoutMS: Int
    /// The whole exchange: Home Assistant's LLM agents can take several seconds to answer.
    public var timeoutMS: Int
    /// Where `logged` goes (nil: nowhere; the caller logs the reply itself).
    public var logger: Logger?

    public init(url: String, token: String, agentID: String = "", connectTimeoutMS: Int = 5_000, timeoutMS: Int = 15_000,
                logger: Logger? = nil) {
        self.url = url
        self.token = token
        self.agentID = agentID
        self.connectTimeoutMS = connectTimeoutMS
        self.timeoutMS = timeoutMS
        self.logger = logger
    }

    /// Sends `text` (with `conversationID`, the last reply's, for a follow-up) and waits for the reply. Always a
    /// reply with a sentence to speak; logged at a level that says how much the owner has to do about it.
    public func process(_ text: String, conversationID: String? = nil) -> ConversationReply {
        let request = HomeAssistantConversation.request(baseURL: url, token: token, text: text,
                                                        conversationID: conversationID, agentID: agentID)
        // Through the environment's proxy, if the service has one: Home Assistant is on the LAN, not this machine,
        // and libcurl's no_proxy lets the owner keep it off the proxy as for any other client.
        let reply: ConversationReply
        switch LocalHTTP.post(url: request.url, body: request.body, headers: request.headers,
                              connectTimeoutMS: connectTimeoutMS, timeoutMS: timeoutMS, useProxy: true) {
        case .success(let answer):
            reply = HomeAssistantConversation.reply(status: answer.status, body: answer.body, url: request.url)
        case .failure(let problem):
            reply = HomeAssistantConversation.reply(failure: Self.failure(problem.kind), reason: problem.description, url: request.url)
        }
        logger?.log(level: Self.level(reply.outcome), "\(reply.logged)", metadata: ["event": "home_assistant", "status": "conversation"])
        return reply
    }

    static func failure(_ kind: LocalHTTP.Problem.Kind) -> ConversationReply.Failure {
        switch kind {
        case .timedOut: .timedOut
        case .tls: .insecure
        case .unresolved, .unconnected, .other: .unreachable
        }
    }

    /// Errors are the owner's to fix (the token, the URL, the certificate); warnings may pass on their own.
    static func level(_ outcome: ConversationReply.Outcome) -> Logger.Level {
        switch outcome {
        case .actionDone, .queryAnswer: .info
        case .error: .notice
        case .failed(.refusedToken), .failed(.notFound), .failed(.insecure), .failed(.notTheAPI): .error
        case .failed(.unreachable), .failed(.timedOut), .failed(.httpStatus): .warning
        }
    }
}
