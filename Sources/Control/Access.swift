import Digests
import FoundationEssentials
import Glibc
public import NIOHTTP1

/// Who may use the control API. Every request must name this speaker in `Host` (below), so that a web page whose
/// own name was rebound to this machine's address (DNS rebinding) is refused before anything is done: the browser
/// still sends the page's name. A client on this machine (a loopback peer) then needs no token; any other client
/// must give the configured token. A browser request from another origin is refused (a page elsewhere, or the
/// sandboxed frame of an answer's HTML, whose origin is "null").
public struct ControlAccess: Sendable {
    private let tokenDigest: [UInt8]?
    /// The port the server listens on: a `Host` that names another one is not this speaker.
    let port: Int
    /// Names a `Host` may give besides the loopback ones, lowercased: the `listen` address when it is a particular
    /// one, and this machine's host name (`pi`, `pi.local`) when the API is reachable from the network.
    let names: Set<String>
    /// `listen` is beyond loopback: clients from the network may come, by IP address or by a name of this machine.
    let reachableFromNetwork: Bool

    /// `token`: "" when none is configured (then only loopback clients get in). `listenHost`: the address listened
    /// on, as configured (`127.0.0.1`, `0.0.0.0`, `192.168.1.20`, `::1`). `hostName`: this machine's name
    /// (gethostname), asked of the system unless given.
    public init(token: String, listenHost: String = "127.0.0.1", port: Int, hostName: String? = nil) {
        tokenDigest = token.isEmpty ? nil : Digests.sha256(Array(token.utf8))
        self.port = port
        let wildcard = listenHost == "0.0.0.0" || listenHost == "::"
        let loopback = listenHost.hasPrefix("127.") || listenHost == "::1"
        reachableFromNetwork = !loopback
        var names: Set<String> = []
        if !wildcard { names.insert(listenHost.contains(":") ? "[\(listenHost.lowercased())]" : listenHost.lowercased()) }
        if reachableFromNetwork, let name = (hostName ?? Self.systemHostName()).map({ $0.lowercased() }), !name.isEmpty {
            names.insert(name)
            if !name.hasSuffix(".local") { names.insert(name + ".local") }
        }
        self.names = names
    }

    public struct Refusal: Error, Sendable, Equatable {
        public var status: HTTPResponseStatus
        public var message: String
    }

    /// Nil when the request may go on.
    public func check(_ head: HTTPRequestHead, peerIsLoopback: Bool) -> Refusal? {
        let hosts = head.headers["host"]
        let host = hosts.first ?? ""
        guard hosts.count == 1, allows(host: host, peerIsLoopback: peerIsLoopback) else {
            let named = hosts.isEmpty ? "no Host" : hosts.count > 1 ? "\(hosts.count) Host headers" : "Host \"\(host)\""
            return Refusal(status: .forbidden, message: "\(named) is not this speaker: use http://127.0.0.1:\(port) or http://localhost:\(port)")
        }
        if !peerIsLoopback {
            guard let tokenDigest else {
                return Refusal(status: .forbidden, message: "only this machine may use the control API (no [control] token is configured)")
            }
            guard let given = Self.token(in: head) else {
                return Refusal(status: .unauthorized, message: "a token is needed: Authorization: Bearer TOKEN, or ?token=TOKEN")
            }
            guard Digests.equalInConstantTime(Digests.sha256(Array(given.utf8)), tokenDigest) else {
                return Refusal(status: .unauthorized, message: "the token is wrong")
            }
        }
        if let origin = head.headers.first(name: "origin") {
            guard origin.lowercased() == "http://\(host.lowercased())" else {
                return Refusal(status: .forbidden, message: "requests from another origin (\(origin)) are refused")
            }
        }
        return nil
    }

    /// Whether `Host` names this speaker: exactly `127.0.0.1`, `localhost` or `[::1]`, or one of `names`, each with
    /// this server's port or none. Letter case does not matter (host names are case-insensitive, and no one can
    /// register `LOCALHOST`); nothing else is loosened: `127.0.0.2`, `localhost.`, `[0:0:0:0:0:0:0:1]` and
    /// `127.0.0.1.example.com` are refused. A client from the network may also name any IP address (a name that
    /// can be rebound is a DNS name, never an address), and must then give the token.
    func allows(host: String, peerIsLoopback: Bool) -> Bool {
        guard let (name, port) = Self.split(host: host.lowercased()) else { return false }
        if let port, port != self.port { return false }
        if ["127.0.0.1", "localhost", "[::1]"].contains(name) || names.contains(name) { return true }
        return !peerIsLoopback && reachableFromNetwork && Self.isIPAddress(name)
    }

    /// `name` and the port of a `Host` value (`name`, `name:port`, `[v6]`, `[v6]:port`); nil when malformed.
    static func split(host: String) -> (name: String, port: Int?)? {
        var name = Substring(host), portText: Substring?
        if host.hasPrefix("[") {
            guard let end = host.firstIndex(of: "]") else { return nil }
            name = host[...end]
            let rest = host[host.index(after: end)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { return nil }
                portText = rest.dropFirst()
            }
        } else if let colon = host.firstIndex(of: ":") {
            name = host[..<colon]
            portText = host[host.index(after: colon)...]
        }
        guard !name.isEmpty else { return nil }
        guard let portText else { return (String(name), nil) }
        guard (1...5).contains(portText.count), portText.allSatisfy(\.isASCII), portText.allSatisfy(\.isNumber),
              let port = Int(portText) else { return nil }
        return (String(name), port)
    }

    /// A dotted IPv4 address or a bracketed IPv6 one.
    static func isIPAddress(_ name: String) -> Bool {
        if name.hasPrefix("[") {
            let inner = name.dropFirst().dropLast()
            return name.hasSuffix("]") && inner.contains(":") && inner.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
        }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { !$0.isEmpty && $0.count <= 3 && $0.allSatisfy { $0.isASCII && $0.isNumber } && (Int($0) ?? 256) <= 255 }
    }

    static func systemHostName() -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func token(in head: HTTPRequestHead) -> String? {
        if let authorization = head.headers.first(name: "authorization"), authorization.hasPrefix("Bearer ") {
            return String(authorization.dropFirst("Bearer ".count))
        }
        return ControlPath(head.uri).query["token"]
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
