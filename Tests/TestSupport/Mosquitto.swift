import Foundation
public import Glibc
import Synchronization
import Platform

/// Debian's mosquitto (the MQTT broker of Home Assistant's add-on) on a port of 127.0.0.1 of its own, for one
/// test: anonymous, or with one user.
public final class Broker: @unchecked Sendable {
    public let port: Int
    public let directory: String
    /// What the test's own clients log in with.
    public let login: [String]
    private var pid: pid_t?

    public struct Failure: Error, CustomStringConvertible { public var description: String }

    /// `tls`: a TLS listener whose certificate (for 127.0.0.1) is signed by nobody the system trusts.
    public init(user: (name: String, password: String)? = nil, port: Int? = nil, directory: String? = nil, tls: Bool = false) throws {
        let dir = directory ?? FileManager.default.temporaryDirectory.appendingPathComponent("hs-broker-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        self.directory = dir
        self.port = try port ?? HeldPort().port
        login = user.map { ["-u", $0.name, "-P", $0.password] } ?? []
        // `user root`: started as root (CI, the chroots), Debian 13's mosquitto would drop to its own user and then
        // could not write its log here, and would not listen; started as anyone else, it changes nothing.
        var config = "user root\nlistener \(self.port) 127.0.0.1\npersistence false\nlog_dest file \(dir)/broker.log\n"
        if tls {
            let made = try Self.runTool("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(dir)/key.pem",
                                                            "-out", "\(dir)/cert.pem", "-days", "2", "-subj", "/CN=127.0.0.1"])
            guard made.status == 0 else { throw Failure(description: "openssl: \(made.output)") }
            // mosquitto reads them as its own user once it has dropped root.
            chmod("\(dir)/key.pem", 0o644)
            config += "certfile \(dir)/cert.pem\nkeyfile \(dir)/key.pem\n"
        }
        if let user {
            let file = "\(dir)/passwords"
            let made = try Self.runTool("/usr/bin/mosquitto_passwd", ["-b", "-c", file, user.name, user.password])
            guard made.status == 0 else { throw Failure(description: "mosquitto_passwd: \(made.output)") }
            config += "allow_anonymous false\npassword_file \(file)\n"
        } else {
            config += "allow_anonymous true\n"
        }
        try config.write(toFile: "\(dir)/mosquitto.conf", atomically: true, encoding: .utf8)
        try start()
    }

    public func start() throws {
        pid = try Child.spawn("/usr/sbin/mosquitto", ["-c", "\(directory)/mosquitto.conf"], output: nil).pid
        // Listening when a connection is taken.
        for _ in 0..<200 {
            if Self.accepts(port) { return }
            usleep(25_000)
        }
        throw Failure(description: "mosquitto did not listen on \(port): \((try? String(contentsOfFile: "\(directory)/broker.log", encoding: .utf8)) ?? "")")
    }

    public func stop() {
        guard let pid else { return }
        Child.end(pid)
        self.pid = nil
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    public static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    /// Runs a tool to its end: its exit status and what it wrote (its errors too, unless `quiet`).
    public static func runTool(_ path: String, _ arguments: [String], quiet: Bool = false) throws -> (status: Int32, output: String) {
        let child = try Child.spawn(path, arguments, output: quiet ? .outputOnly : .both)
        let output = Child.readAll(child.output!)
        return (Child.wait(child.pid), output)
    }

    /// Publishes as Home Assistant would (mosquitto_pub).
    public func publish(_ topic: String, _ message: String, retain: Bool = false) throws {
        let result = try Self.runTool("/usr/bin/mosquitto_pub", ["-h", "127.0.0.1", "-p", "\(port)", "-t", topic, "-m", message, "-q", "1"] + login + (retain ? ["-r"] : []))
        guard result.status == 0 else { throw Failure(description: "mosquitto_pub: \(result.output)") }
    }

    /// What a subscriber that connects now is given for `topic` (retained messages only), within `seconds`.
    public func retained(_ topic: String, seconds: Int = 2) throws -> [String: String] {
        let result = try Self.runTool("/usr/bin/mosquitto_sub", ["-h", "127.0.0.1", "-p", "\(port)", "-t", topic, "-v", "--retained-only", "-W", "\(seconds)"] + login,
                                      quiet: true)
        // 27: its -W time was up (what ends it here); anything else but 0 is a failure to say.
        guard result.status == 0 || result.status == 27 else { throw Failure(description: "mosquitto_sub (exit \(result.status)): \(result.output)") }
        var out: [String: String] = [:]
        for line in result.output.split(separator: "\n") {
            guard let space = line.firstIndex(of: " ") else { continue }
            out[String(line[..<space])] = String(line[line.index(after: space)...])
        }
        return out
    }

    /// The topic's retained message once `done` holds for it, or the last read after a minute of one-second reads:
    /// one read may come back empty while the test process runs every other suite beside the caller.
    public func retained(_ topic: String, until done: (String?) -> Bool) throws -> String? {
        var last: String? = nil
        for _ in 0..<60 {
            last = try retained(topic, seconds: 1)[topic]
            if done(last) { break }
        }
        return last
    }
}

/// A subscriber that stays connected (mosquitto_sub -v), as Home Assistant does: every message, in order.
public final class Listener: @unchecked Sendable {
    private let pid: pid_t
    private final class Lines: Sendable { let value = Mutex<[String]>([]) }
    private let lines = Lines()
    private let reader: FileHandle

    public init(port: Int, topic: String) throws {
        // Line-buffered: each message is read as it comes, not when the pipe's buffer fills.
        let child = try Child.spawn("/usr/bin/stdbuf", ["-oL", "/usr/bin/mosquitto_sub", "-h", "127.0.0.1", "-p", "\(port)", "-t", topic, "-t", "test/listener", "-v", "-q", "1"],
                                    output: .outputOnly)
        pid = child.pid
        reader = FileHandle(fileDescriptor: child.output!, closeOnDealloc: true)
        let buffer = Mutex<[UInt8]>([])
        reader.readabilityHandler = { [lines] handle in
            let data = handle.availableData
            guard !data.isEmpty else { handle.readabilityHandler = nil; return }
            let complete = buffer.withLock { b -> [String] in
                b += data
                var out: [String] = []
                while let newline = b.firstIndex(of: 0x0A) {
                    out.append(String(decoding: b[..<newline], as: UTF8.self))
                    b.removeSubrange(...newline)
                }
                return out
            }
            lines.value.withLock { $0 += complete }
        }
        // Subscribed once a message published now arrives.
        for i in 0..<100 {
            let marker = "ready-\(i)"
            _ = try? Broker.runTool("/usr/bin/mosquitto_pub", ["-h", "127.0.0.1", "-p", "\(port)", "-t", "test/listener", "-m", marker])
            if wait(for: { $0.contains("test/listener \(marker)") }, seconds: 0.2) { return }
        }
    }

    public var received: [String] { lines.value.withLock { $0 } }

    /// True once `condition` holds of the lines so far.
    @discardableResult
    public func wait(for condition: ([String]) -> Bool, seconds: Double = 5) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition(received) { return true }
            usleep(20_000)
        }
        return condition(received)
    }

    public func wait(forLine line: String, seconds: Double = 5) -> Bool { wait(for: { $0.contains(line) }, seconds: seconds) }

    deinit {
        Child.end(pid)
        reader.readabilityHandler = nil
    }
}

/// Children of a test, spawned as the speaker spawns its own (Platform's SpawnActions: no signal blocked in them,
/// which Foundation's Process, called on a thread that blocks them, would pass on).
public enum Child {
    public enum Output { case outputOnly, both }

    public static func spawn(_ path: String, _ arguments: [String], output: Output?) throws -> (pid: pid_t, output: Int32?) {
        var fds: [Int32] = [-1, -1]
        if output != nil { guard SpawnActions.pipeCloseOnExec(&fds) == 0 else { throw Broker.Failure(description: "no pipe") } }
        let null = open("/dev/null", O_WRONLY | O_CLOEXEC)
        defer { close(null) }
        let out = output == nil ? null : fds[1]
        let err = output == .both ? fds[1] : null
        let spawned = SpawnActions.spawn(path, argv: [path] + arguments, envp: ["PATH=/usr/bin:/bin:/usr/sbin"], stdout: out, stderr: err)
        if output != nil { close(fds[1]) }
        switch spawned {
        case .success(let pid): return (pid, output == nil ? nil : fds[0])
        case .failure(let error):
            if output != nil { close(fds[0]) }
            throw Broker.Failure(description: "\(path): \(error)")
        }
    }

    public static func readAll(_ fd: Int32) -> String {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = read(fd, &buffer, buffer.count)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            out += buffer.prefix(n)
        }
        close(fd)
        return String(decoding: out, as: UTF8.self)
    }

    /// Its exit status (128 + the signal that ended it).
    public static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// SIGTERM, then SIGKILL if it is still there after two seconds; reaped.
    public static func end(_ pid: pid_t) {
        kill(pid, SIGTERM)
        for _ in 0..<200 {
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { return }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        _ = wait(pid)
    }
}

