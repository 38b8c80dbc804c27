import Glibc

/// A TCP socket bound to a port of 127.0.0.1 that the kernel chose, not listening: a connection to it is refused,
/// and while it is held no other test in the process can be given the port.
public final class HeldPort: @unchecked Sendable {
    // @unchecked: a descriptor, closed once by deinit.
    private let fd: Int32
    public let port: Int

    public struct Failure: Error, CustomStringConvertible { public var description: String }

    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = fd >= 0 && withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        // Closed here and not in deinit, which a throwing init whose properties are not all set does not run.
        guard bound else { if fd >= 0 { close(fd) }; throw Failure(description: "no port on 127.0.0.1: \(errno)") }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }
}
