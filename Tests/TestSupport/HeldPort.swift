import Glibc
import Synchronization

/// A TCP socket bound to a port of 127.0.0.1, not listening: a connection to it is refused, and while it is held no
/// other test can be given the port.
///
/// The port is taken under the kernel's ephemeral range (`ip_local_port_range`), from which every server started on
/// port 0 and every outgoing connection is given its port: a test that releases its port for a child process to
/// bind (a speaker's `[control] listen`) would otherwise race every such server of the tests running beside it.
/// Under that range only this type gives out ports, and never the same one twice in a process.
public final class HeldPort: @unchecked Sendable {
    // @unchecked: a descriptor, closed once by deinit.
    private let fd: Int32
    public let port: Int

    public struct Failure: Error, CustomStringConvertible { public var description: String }

    private static let givenOut = Mutex<Set<Int>>([])
    /// The lowest port tried: above the registered services a test machine might run (1883, 8080, 8123, ...).
    private static let lowest = 20_000

    public init() throws {
        let ephemeral = HeldPort.ephemeralLow()
        var tries = 0
        while ephemeral - HeldPort.lowest >= 1_000 && tries < 500 {
            tries += 1
            let candidate = Int.random(in: HeldPort.lowest..<ephemeral)
            guard HeldPort.givenOut.withLock({ $0.insert(candidate).inserted }) else { continue }
            if let fd = HeldPort.bound(to: candidate) {
                self.fd = fd
                port = candidate
                return
            }
        }
        // A machine whose ephemeral range leaves no room under it: the kernel's choice, as before.
        guard let fd = HeldPort.bound(to: 0) else { throw Failure(description: "no port on 127.0.0.1: \(errno)") }
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
        }
        guard named else { close(fd); throw Failure(description: "no port on 127.0.0.1: \(errno)") }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }

    private static func bound(to port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let ok = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        if !ok { close(fd); return nil }
        return fd
    }

    /// The first port of `/proc/sys/net/ipv4/ip_local_port_range` (Linux's default 32768 when it cannot be read).
    private static func ephemeralLow() -> Int {
        guard let file = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r") else { return 32_768 }
        defer { fclose(file) }
        var low: Int32 = 0
        var high: Int32 = 0
        return withUnsafeMutablePointer(to: &low) { l in
            withUnsafeMutablePointer(to: &high) { h in
                withVaList([l, h]) { vfscanf(file, "%d %d", $0) } == 2 ? Int(l.pointee) : 32_768
            }
        }
    }
}
