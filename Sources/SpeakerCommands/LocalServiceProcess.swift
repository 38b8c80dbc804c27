public import CommandSupport
import FoundationEssentials
import Glibc
import Platform

/// The local Houndify-compatible service is its own program (`houndify-local`, installed beside
/// `hound-speaker` in development builds, not on the Pi): `serve` becomes it, and `demo` runs it as a child.
public enum LocalServiceProgram {
    public static let name = "houndify-local"

    public static func locate() throws(CommandFailure) -> String {
        guard let path = ShippedFiles.siblingExecutable(name) else {
            throw CommandFailure(message: "the local Houndify-compatible service (\(name)) is not installed beside this program "
                                 + "(\(ShippedFiles.executableDirectory ?? "?")) nor in ../libexec/hound-speaker; it is a development "
                                 + "tool: `swift build` builds it next to hound-speaker, and the Debian package hound-speaker-local "
                                 + "installs it", exitCode: 69)  // EX_UNAVAILABLE
        }
        return path
    }

    /// Replaces this process with the service (same stdout, signals and exit code).
    public static func exec(arguments: [String]) throws(CommandFailure) -> Never {
        let path = try locate()
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        execv(path, argv)
        let problem = String(cString: strerror(errno))
        argv.forEach { free($0) }
        throw CommandFailure(message: "cannot start \(path): \(problem)")
    }
}

/// A running `houndify-local` child on a free loopback port, stopped with SIGTERM. It reads its client ID and key
/// from a config file of its own (mode 0600); its environment has no Houndify credentials (ChildProcess).
public final class LocalServiceProcess: Sendable {
    public let port: Int
    private let pid: pid_t

    /// Starts the service with `configPath` and waits (up to `seconds`) for its "listening on" line.
    public static func start(configPath: String, seconds: Double = 20) async throws(CommandFailure) -> LocalServiceProcess {
        let path = try LocalServiceProgram.locate()
        var pipeEnds: [Int32] = [0, 0]
        // Close-on-exec: no other child (a state hook started meanwhile) may hold the pipe open.
        guard SpawnActions.pipeCloseOnExec(&pipeEnds) == 0 else { throw CommandFailure(message: "pipe: \(String(cString: strerror(errno)))") }
        let spawned = ChildProcess.spawn(path, arguments: [path, "--port", "0", "--config", configPath],
                                         environment: ChildProcess.environment(),
                                         stdout: pipeEnds[1])
        close(pipeEnds[1])
        let child: pid_t
        switch spawned {
        case .success(let pid): child = pid
        case .failure(let error):
            close(pipeEnds[0])
            throw CommandFailure(message: "cannot start \(path): \(error)")
        }
        let reader = pipeEnds[0]
        // The first line, read on a thread of our own (a blocking read), handed over through a continuation.
        let line: String? = await withCheckedContinuation { continuation in
            OwnedThread.start(name: "hs-local-svc") {
                var bytes: [UInt8] = []
                var byte: UInt8 = 0
                var pollFD = pollfd(fd: reader, events: Int16(POLLIN), revents: 0)
                let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
                while ContinuousClock.now < deadline {
                    guard poll(&pollFD, 1, 100) >= 0 || errno == EINTR else { break }
                    guard pollFD.revents != 0 else { continue }
                    guard read(reader, &byte, 1) == 1 else { break }
                    if byte == UInt8(ascii: "\n") { break }
                    bytes.append(byte)
                }
                close(reader)
                continuation.resume(returning: bytes.isEmpty ? nil : String(decoding: bytes, as: UTF8.self))
            }
        }
        guard let line, let colon = line.lastIndex(of: ":"), let port = Int(line[line.index(after: colon)...]) else {
            kill(child, SIGTERM)
            var result: Int32 = 0
            waitpid(child, &result, 0)
            throw CommandFailure(message: "the local Houndify-compatible service (\(path)) did not start (it said: \(line ?? "nothing"))")
        }
        return LocalServiceProcess(pid: child, port: port)
    }

    private init(pid: pid_t, port: Int) {
        self.pid = pid
        self.port = port
    }

    /// SIGTERM, then waits for it to exit (on an owned thread: waitpid blocks).
    public func stop() async {
        kill(pid, SIGTERM)
        let child = pid
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            OwnedThread.start(name: "hs-local-svc") {
                var result: Int32 = 0
                while waitpid(child, &result, 0) < 0 && errno == EINTR {}
                continuation.resume()
            }
        }
    }
}
