import FoundationEssentials
import Glibc
import CCrypto
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
        return Base64URL.encode(HMACSHA256.mac(key: key, message: message))
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
        let expected = HMACSHA256.mac(key: key, message: Array("\(request[0]);\(request[1])\(timeStamp)".utf8))
        guard given.count == expected.count else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(given, expected) { difference |= a ^ b }
        return difference == 0
    }
}

public enum HMACSHA256 {
    public static func mac(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = key.withUnsafeBytes { k in
            message.withUnsafeBytes { m in
                HMAC(EVP_sha256(), k.baseAddress, Int32(k.count), m.baseAddress?.assumingMemoryBound(to: UInt8.self),
                     m.count, &out, &length)
            }
        }
        // HMAC fails only on allocation failure inside OpenSSL; nothing sensible remains to do then.
        precondition(ok != nil, "OpenSSL HMAC-SHA256 failed")
        return Array(out.prefix(Int(length)))
    }
}
