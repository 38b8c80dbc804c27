import FoundationEssentials
import Glibc
import Digests
import HoundifyCore

/// Houndify's request signing (docs/houndify-protocol.md, "Signing a request"): HMAC-SHA256 keyed with the
/// base64url-decoded client key over `UserID;RequestID` + `TimeStamp`, sent base64url-encoded with its `=`
/// padding.
public struct HoundAuthenticator: Sendable {
    public let clientID: String
    private let key: [UInt8]

    public enum KeyError: Error, CustomStringConvertible, Equatable {
        case notBase64URL
        public var description: String {
            "the client key is not base64url text (expected 88 characters of A-Z a-z 0-9 - _ ending in ==)"
        }
    }

    public init(clientID: String, clientKey: String) throws {
        guard let key = Base64URL.decode(clientKey), !key.isEmpty else { throw KeyError.notBase64URL }
        self.clientID = clientID
        self.key = key
    }

    public struct Headers: Sendable, Equatable {
        /// `Hound-Request-Authentication`
        public var requestAuthentication: String
        /// `Hound-Client-Authentication`
        public var clientAuthentication: String
    }

    public func signature(userID: String, requestID: String, timeStamp: Int64) -> String {
        let message = Array("\(userID);\(requestID)\(timeStamp)".utf8)
        return Base64URL.encode(Digests.hmacSHA256(key: key, message: message))
    }

    public func headers(userID: String, requestID: String, timeStamp: Int64) -> Headers {
        Headers(
            requestAuthentication: "\(userID);\(requestID)",
            clientAuthentication: "\(clientID);\(timeStamp);\(signature(userID: userID, requestID: requestID, timeStamp: timeStamp))")
    }

    /// Checks headers as the service does; used by the local service. Constant-time comparison of the MAC.
    public func verify(requestAuthentication: String, clientAuthentication: String) -> Bool {
        let request = requestAuthentication.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)
        let client = clientAuthentication.split(separator: ";", omittingEmptySubsequences: false)
        guard request.count == 2, client.count == 3, client[0] == clientID,
              let timeStamp = Int64(client[1]),
              let given = Base64URL.decode(String(client[2]))
        else { return false }
        let expected = Digests.hmacSHA256(key: key, message: Array("\(request[0]);\(request[1])\(timeStamp)".utf8))
        return Digests.equalInConstantTime(given, expected)
    }
}
