import CCrypto
import FoundationEssentials
public import NIOHTTP1

/// Who may use the control API. A client on this machine (a loopback peer) needs no token, but must name this
/// machine in `Host` (a web page that rebinds its own name to 127.0.0.1 cannot reach the API from the kiosk's
/// browser); any other client must give the configured token. A browser request from another origin is refused
/// (a page elsewhere, or the sandboxed frame of an answer's HTML, whose origin is "null").
public struct ControlAccess: Sendable {
    private let tokenDigest: [UInt8]?

    /// `token`: "" when none is configured (then only loopback clients get in).
    public init(token: String) {
        tokenDigest = token.isEmpty ? nil : Self.sha256(Array(token.utf8))
    }

    public struct Refusal: Error, Sendable, Equatable {
        public var status: HTTPResponseStatus
        public var message: String
    }

    /// Nil when the request may go on.
    public func check(_ head: HTTPRequestHead, peerIsLoopback: Bool) -> Refusal? {
        let host = head.headers.first(name: "host") ?? ""
        if peerIsLoopback {
            guard Self.isLocalHost(host) else {
                return Refusal(status: .forbidden, message: "Host \"\(host)\" is not this speaker: use http://127.0.0.1 or http://localhost")
            }
        } else {
            guard let tokenDigest else {
                return Refusal(status: .forbidden, message: "only this machine may use the control API (no [control] token is configured)")
            }
            guard let given = Self.token(in: head) else {
                return Refusal(status: .unauthorized, message: "a token is needed: Authorization: Bearer TOKEN, or ?token=TOKEN")
            }
            guard Self.equalInConstantTime(Self.sha256(Array(given.utf8)), tokenDigest) else {
                return Refusal(status: .unauthorized, message: "the token is wrong")
            }
        }
        if let origin = head.headers.first(name: "origin") {
            guard origin == "http://\(host)" else {
                return Refusal(status: .forbidden, message: "requests from another origin (\(origin)) are refused")
            }
        }
        return nil
    }

    static func token(in head: HTTPRequestHead) -> String? {
        if let authorization = head.headers.first(name: "authorization"), authorization.hasPrefix("Bearer ") {
            return String(authorization.dropFirst("Bearer ".count))
        }
        return ControlPath(head.uri).query["token"]
    }

    /// `localhost`, `127.x.x.x` or `[::1]`, with any port.
    static func isLocalHost(_ host: String) -> Bool {
        var name = host
        if name.hasPrefix("[") {
            guard let end = name.firstIndex(of: "]") else { return false }
            name = String(name[name.index(after: name.startIndex)..<end])
            return name == "::1"
        }
        if let colon = name.firstIndex(of: ":") { name = String(name[..<colon]) }
        return name == "localhost" || (name.hasPrefix("127.") && name.split(separator: ".").count == 4)
    }

    static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        bytes.withUnsafeBufferPointer { input in
            digest.withUnsafeMutableBufferPointer { output in _ = SHA256(input.baseAddress, input.count, output.baseAddress) }
        }
        return digest
    }

    /// OpenSSL's CRYPTO_memcmp over two digests of the same length: the time taken says nothing about the token.
    static func equalInConstantTime(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && a.withUnsafeBytes { x in b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, a.count) == 0 } }
    }
}

/// A request's path and query parameters (percent-decoded by Foundation's URLComponents).
struct ControlPath {
    var path: String
    var query: [String: String] = [:]

    init(_ uri: String) {
        let components = URLComponents(string: uri)
        path = components?.path ?? uri
        for item in components?.queryItems ?? [] { query[item.name] = item.value ?? "" }
    }
}
