import Glibc
import Platform

/// A test's own client of the control API, on a plain socket: HTTP requests and a WebSocket written byte by byte
/// (RFC 6455), so the tests control what a browser or library would hide: a client that never reads, a bad frame.
/// Blocking reads run on a thread of their own (`OwnedThread`), never on Swift's cooperative pool, which the
/// speaker's loop in the same process needs.
/// @unchecked: a socket descriptor (a C handle) and its read-ahead, used by one reader at a time.
final class RawClient: @unchecked Sendable {
    let fd: Int32
    private var pending: [UInt8] = []

    struct Failure: Error, CustomStringConvertible { var description: String }

    /// `receiveBuffer`: a small one makes a client that never reads fill up at once.
    /// The address connected to, named in `Host` as a browser would.
    let host: String

    init(port: Int, host: String = "127.0.0.1", receiveBuffer: Int32? = nil) throws {
        self.host = host
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(errno)") }
        if var size = receiveBuffer { setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size)) }
        // A safety net, not a measure: the whole suite on two cores has held a server's answer past 20 s.
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr(host)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        // Not closed here: a class whose init throws once its properties are set is deinitialised, and the second
        // close of a number another thread had been given since closed that thread's socket or pipe instead.
        guard connected == 0 else { throw Failure(description: "connect to \(port): \(errno)") }
    }

    deinit { if fd >= 0 { close(fd) } }

    func send(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent <= 0 { return }
            offset += sent
        }
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    /// Runs a blocking read on a thread of its own.
    private func offPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            OwnedThread.start(name: "test-client") { continuation.resume(returning: body()) }
        }
    }

    /// More bytes into `pending`; false at the end of the stream (or the timeout).
    private func fill() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return false }
        pending += buffer[..<count]
        return true
    }

    // MARK: HTTP

    /// One request with `Connection: close`; the status, the response's head and the body.
    func request(_ method: String, _ path: String, headers: [String] = [], body: String = "") async -> (status: Int, head: String, body: String) {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n"
        for header in headers { head += header + "\r\n" }
        head += "Content-Length: \(body.utf8.count)\r\n\r\n"
        send(head + body)
        return await response()
    }

    /// Everything the server sends until it closes the connection (or 60 s pass): the status, the head and the body.
    func response() async -> (status: Int, head: String, body: String) {
        await offPool { [self] in
            while fill() {}
            let text = String(decoding: pending, as: UTF8.self)
            let status = Int(text.split(separator: " ", maxSplits: 2).dropFirst().first ?? "") ?? 0
            guard let end = headEnd() else { return (status, text, "") }
            return (status, String(decoding: pending[..<end], as: UTF8.self), String(decoding: pending[(end + 4)...], as: UTF8.self))
        }
    }

    /// Whether the server closes the connection within 60 s (whatever it sends first is kept for `response`).
    func closedByServer() async -> Bool {
        await offPool { [self] in
            while true {
                var buffer = [UInt8](repeating: 0, count: 65536)
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count > 0 { pending += buffer[..<count]; continue }
                // 0: the end of the stream; ECONNRESET: closed with our bytes unread. EAGAIN: the 60 s passed.
                return count == 0 || errno == ECONNRESET
            }
        }
    }

    // MARK: WebSocket

    /// The opening handshake; the response's status line.
    func upgrade(path: String = "/api/ws", headers: [String] = []) async -> String {
        var head = "GET \(path) HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        for header in headers { head += header + "\r\n" }
        send(head + "\r\n")
        return await offPool { [self] in
            while true {
                if let end = headEnd() {
                    let text = String(decoding: pending[..<end], as: UTF8.self)
                    pending.removeFirst(end + 4)
                    return String(text.prefix { $0 != "\r" })
                }
                guard fill() else { return "" }
            }
        }
    }

    private func headEnd() -> Int? {
        guard pending.count >= 4 else { return nil }
        for i in 0...(pending.count - 4) where pending[i] == 13 && pending[i + 1] == 10 && pending[i + 2] == 13 && pending[i + 3] == 10 {
            return i
        }
        return nil
    }

    /// The next text message from the server (nil: the connection ended).
    func nextMessage() async -> String? {
        await offPool { [self] in
            while true {
                if let (opcode, payload, used) = frame() {
                    pending.removeFirst(used)
                    if opcode == 1 { return String(decoding: payload, as: UTF8.self) }
                    if opcode == 8 { return nil }
                    continue
                }
                guard fill() else { return nil }
            }
        }
    }

    /// Reads messages until one satisfies `match` (nil: the connection ended first).
    func message(where match: @escaping @Sendable (String) -> Bool) async -> String? {
        while let message = await nextMessage() {
            if match(message) { return message }
        }
        return nil
    }

    private func frame() -> (UInt8, [UInt8], Int)? {
        guard pending.count >= 2 else { return nil }
        let opcode = pending[0] & 0x0F
        var length = Int(pending[1] & 0x7F)
        var offset = 2
        if length == 126 {
            guard pending.count >= 4 else { return nil }
            length = Int(pending[2]) << 8 | Int(pending[3])
            offset = 4
        } else if length == 127 {
            guard pending.count >= 10 else { return nil }
            length = (2..<10).reduce(0) { $0 << 8 | Int(pending[$1]) }
            offset = 10
        }
        guard pending.count >= offset + length else { return nil }
        return (opcode, Array(pending[offset..<(offset + length)]), offset + length)
    }

    /// A client's text frame (masked, as RFC 6455 requires of clients).
    func sendMessage(_ text: String, opcode: UInt8 = 1) {
        let payload = Array(text.utf8)
        var frame: [UInt8] = [0x80 | opcode]
        if payload.count < 126 { frame.append(0x80 | UInt8(payload.count)) } else {
            let length: [UInt8] = [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
            frame += length  // typed apart: Swift 6.2 reads the literal as [Int]
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        send(frame)
    }

    /// Reads whatever is there until the server ends the stream: true at the end, false on an error or the
    /// receive timeout.
    func readsToTheEnd() async -> Bool {
        await offPool { [self] in
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                if count == 0 { return true }
                if count < 0 { return false }
            }
        }
    }

    /// The status code of the server's close frame (nil: the connection ended, or timed out, without one).
    func closeCode() async -> UInt16? {
        await offPool { [self] in
            while true {
                if let (opcode, payload, used) = frame() {
                    pending.removeFirst(used)
                    if opcode == 8 { return payload.count >= 2 ? UInt16(payload[0]) << 8 | UInt16(payload[1]) : nil }
                    continue
                }
                guard fill() else { return nil }
            }
        }
    }
}
