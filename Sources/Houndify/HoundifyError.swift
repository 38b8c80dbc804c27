/// Errors of a search, named after the Hound SDK's HoundVoiceSearchErrorCode values, plus the HTTP-level error the
/// SDK reports in its SHHTTPErrorDomain (docs/houndify-protocol.md, "Error codes").
public enum HoundifyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The search was cancelled by the caller.
    case cancelled
    /// The server answered with `"Status": "Error"`; the message is the server's `ErrorMessage`.
    case serverStatusError(message: String)
    /// The connection ended before a final result arrived.
    case noResponseReceived(detail: String)
    /// The server sent something that is not a Houndify response (wrong Format, no result, oversized).
    case invalidResponse(detail: String)
    /// A message could not be parsed as JSON.
    case parseFailed(detail: String)
    /// HTTP 401/403, or a non-JSON body where the SDK says "Invalid ID or Key".
    case authenticationFailed(httpStatus: Int, body: String)
    /// Any other HTTP status than 200.
    case httpError(status: Int, body: String)
    /// DNS, refused connection, TLS failure, network unreachable.
    case connectionFailure(detail: String)
    /// Connecting, or waiting for the server, took longer than the configured timeout.
    case connectionTimeout(detail: String)
    /// A fault in this program or in libcurl's set-up.
    case internalError(detail: String)

    /// The SDK's name for the code, for logs and `--json` output.
    public var code: String {
        switch self {
        case .cancelled: "Cancelled"
        case .serverStatusError: "ServerStatusError"
        case .noResponseReceived: "NoResponseReceived"
        case .invalidResponse: "InvalidResponse"
        case .parseFailed: "ParseFailed"
        case .authenticationFailed: "AuthenticationFailed"
        case .httpError: "HTTPError"
        case .connectionFailure: "ConnectionFailure"
        case .connectionTimeout: "ConnectionTimeout"
        case .internalError: "InternalError"
        }
    }

    public var description: String {
        switch self {
        case .cancelled: "search cancelled"
        case .serverStatusError(let message): "Houndify returned an error: \(message)"
        case .noResponseReceived(let detail): "no response received from Houndify: \(detail)"
        case .invalidResponse(let detail): "invalid response from Houndify: \(detail)"
        case .parseFailed(let detail): "could not parse Houndify's response: \(detail)"
        case .authenticationFailed(let status, let body):
            "Houndify refused the client ID or key (HTTP \(status)\(body.isEmpty ? "" : ": \(HoundifyError.clip(body))"))"
        case .httpError(let status, let body):
            "Houndify answered HTTP \(status)\(body.isEmpty ? "" : ": \(HoundifyError.clip(body))")"
        case .connectionFailure(let detail): "cannot connect to Houndify: \(detail)"
        case .connectionTimeout(let detail): "timed out: \(detail)"
        case .internalError(let detail): "internal error: \(detail)"
        }
    }

    /// True when the network or the service could not be reached at all (the speaker's "offline" state).
    public var isConnectivityFailure: Bool {
        switch self {
        case .connectionFailure, .connectionTimeout: true
        default: false
        }
    }

    /// The first line of a body, at most 200 characters: for messages.
    public static func clip(_ body: String) -> String {
        let line = body.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        return line.count > 200 ? String(line.prefix(200)) + "…" : line
    }
}
