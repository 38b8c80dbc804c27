import Control
import FoundationEssentials
import Glibc
import Logging
@testable import Assembly
import SpeakerCore
import Testing

/// What a child of the speaker (the state hook, an owner's `run` command) is handed: standard input, output and
/// error, and no Houndify credentials. Issue #34: after a kill -9 of the speaker, a hook that outlived it kept the
/// control API's listening socket, and the restarted speaker ran without its API.
@Suite(.serialized) struct ChildDescriptorTests {
    /// Writes the child's open descriptors (`ls -l /proc/self/fd`, as `fd -> target`), a `---` line, and its
    /// environment into `out`.
    static func script(_ out: String) -> String { "exec >'\(out)' 2>&1; ls -l /proc/self/fd; echo ---; env" }

    /// The descriptors listed, other than ls's own directory (it lists /proc/self/fd through one), and the
    /// environment.
    static func read(_ out: String) throws -> (descriptors: [String: String], environment: [String]) {
        let text = try String(contentsOfFile: out, encoding: .utf8)
        let parts = text.components(separatedBy: "\n---\n")
        try #require(parts.count == 2, "\(text)")
        var descriptors: [String: String] = [:]
        for line in parts[0].split(separator: "\n") where line.contains(" -> ") {
            let halves = line.components(separatedBy: " -> ")
            guard let fd = halves[0].split(separator: " ").last else { continue }
            let target = halves[1]
            if target.hasPrefix("/proc/") && target.hasSuffix("/fd") { continue }  // ls reading the listing
            descriptors[String(fd)] = target
        }
        return (descriptors, parts[1].split(separator: "\n").map(String.init))
    }

    @Test func childrenGetOnlyStandardDescriptorsAndNoCredentials() async throws {
        // What the speaker holds when it starts a child: the control API listening (SwiftNIO opens its sockets and
        // its epoll descriptor without close-on-exec), and a socket and a pipe opened as any library might.
        var logger = Logger(label: "child-test")
        logger.logLevel = .critical
        let server = ControlServer(hub: ControlHub(), token: "", page: nil, logger: logger)
        _ = try await server.start(host: "127.0.0.1", port: 0)
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(listener > 2)
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        defer {
            close(listener)
            close(ends[0])
            close(ends[1])
        }
        let environment = ProcessInfo.processInfo.environment.merging(["HOUNDIFY_CLIENT_KEY": "secret-key",
                                                                       "HOUNDIFY_CLIENT_ID": "secret-id"]) { _, new in new }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hs-child-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        // The state hook.
        let hookOut = directory + "/hook"
        let hookStatus = await withCheckedContinuation { (done: CheckedContinuation<Int32, Never>) in
            StateHook.run(Self.script(hookOut), state: "ready", previous: "none", logger: logger, baseEnvironment: environment) {
                done.resume(returning: $0)
            }
        }
        #expect(hookStatus == 0)
        let hook = try Self.read(hookOut)
        #expect(hook.descriptors.keys.sorted() == ["0", "1", "2"], "\(hook.descriptors)")
        #expect(hook.environment.contains("HOUND_SPEAKER_STATE=ready"))
        #expect(!hook.environment.contains { $0.hasPrefix("HOUNDIFY_CLIENT_KEY=") || $0.hasPrefix("HOUNDIFY_CLIENT_ID=") })
        #expect(!hook.environment.contains { $0.contains("secret-key") })

        // An owner's command.
        let commandOut = directory + "/command"
        let commandStatus = await withCheckedContinuation { (done: CheckedContinuation<Result<Int32, DeviceProblem>, Never>) in
            ShellCommands(logger: logger, baseEnvironment: environment).run(Self.script(commandOut)) { done.resume(returning: $0) }
        }
        #expect(commandStatus == .success(0))
        let command = try Self.read(commandOut)
        #expect(command.descriptors.keys.sorted() == ["0", "1", "2"], "\(command.descriptors)")
        #expect(!command.environment.contains { $0.hasPrefix("HOUNDIFY_CLIENT_KEY=") || $0.contains("secret-key") })
        await server.stop()
    }
}
