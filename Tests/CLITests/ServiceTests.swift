import Foundation
import Testing
import TestSupport

/// A Unix datagram socket standing in for systemd's NOTIFY_SOCKET: what the speaker tells its service manager.
final class NotifySocket {
    let path: String
    private let fd: Int32

    init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (i, byte) in path.utf8.prefix(buffer.count - 1).enumerated() { buffer[i] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard fd >= 0, bound == 0 else { throw CLI.CLIError.noPort("cannot bind \(path)") }
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// The next message, or nil when none came within `seconds`.
    func receive(seconds: Double) -> String? {
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            let n = recv(fd, &buffer, buffer.count, 0)
            if n > 0 { return String(decoding: buffer.prefix(n), as: UTF8.self) }
        }
        return nil
    }

    /// Messages until one contains `text` (returned last), or what came before the deadline.
    func receive(until text: String, seconds: Double = 15) -> [String] {
        var got: [String] = []
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline, let message = receive(seconds: deadline.timeIntervalSinceNow) {
            got.append(message)
            if message.contains(text) { break }
        }
        return got
    }
}

@Suite(.serialized, .ownThread) struct ServiceTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    func temporaryDirectory() throws -> String {
        let dir = "/tmp/hs-svc-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    /// "DEVICE:INODE" of an open file, as systemd puts it in JOURNAL_STREAM.
    func journalStream(of handle: FileHandle) -> String {
        var info = stat()
        fstat(handle.fileDescriptor, &info)
        return "\(info.st_dev):\(info.st_ino)"
    }

    /// `run` as deploy/hound-speaker.service starts it: NOTIFY_SOCKET, WatchdogSec, StateDirectory= and stderr
    /// connected to the journal.
    @Test func runTellsSystemdAndLogsForTheJournal() throws {
        let (service, port, _) = try CLI.startService()
        defer { service.terminate(); service.waitUntilExit() }
        // No conversation_state_file: under the unit it goes to the state directory. The button-only speaker:
        // a file PCM never blocks, so an always-open microphone would spin.
        let fixture = try RunFixture(recording: "share/demo/what-time-is-it.wav", port: port, hotPhrase: false)
        defer { fixture.remove() }
        let dir = fixture.dir, config = fixture.config
        let state = "\(dir)/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let notify = try NotifySocket(path: "\(dir)/notify")
        _ = FileManager.default.createFile(atPath: "\(dir)/stderr", contents: nil)
        let stderr = try FileHandle(forWritingTo: URL(fileURLWithPath: "\(dir)/stderr"))

        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["run", "--config", config, "--events", "json"]
        process.currentDirectoryURL = Self.root
        process.environment = fixture.environment(hotPhrase: false).merging(
            ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "400000", "STATE_DIRECTORY": state,
             "JOURNAL_STREAM": journalStream(of: stderr)]) { $1 }
        let input = Pipe(), output = OutputWatcher()
        process.standardInput = input
        process.standardOutput = output.pipe
        process.standardError = stderr
        try process.run()

        // READY=1 once the loop runs, then WATCHDOG=1 at half of WATCHDOG_USEC.
        let first = notify.receive(until: "READY=1")
        #expect(first.last?.hasPrefix("READY=1\nSTATUS=ready: press Space or Enter to talk") == true, "\(first)")
        #expect(!first.dropLast().contains { $0.contains("WATCHDOG=1") }, "a watchdog ping before READY=1: \(first)")
        let start = Date()
        var pings = 0
        while pings < 3, let message = notify.receive(seconds: 5) {
            if message == "WATCHDOG=1" { pings += 1 }
        }
        #expect(pings == 3)
        #expect(Date().timeIntervalSince(start) > 0.3, "three pings 200 ms apart")

        #expect(output.wait(for: "\"to\":\"ready\""))
        input.fileHandleForWriting.write(Data("click\n".utf8))
        #expect(output.wait(for: "\"event\":\"final\""))
        #expect(output.wait(for: "\"from\":\"speaking\",\"to\":\"ready\""))
        process.terminate()
        #expect(notify.receive(until: "STOPPING=1").last?.hasPrefix("STOPPING=1") == true)
        output.readToEnd()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)

        // The conversation was kept in the state directory, private to the service.
        let saved = "\(state)/conversation.json"
        let attributes = try FileManager.default.attributesOfItem(atPath: saved)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(try String(contentsOfFile: saved, encoding: .utf8).contains("LocalServiceTurn"))

        // journald's lines: a priority prefix, no timestamp, one line per event, never the key.
        let log = try String(contentsOfFile: "\(dir)/stderr", encoding: .utf8)
        // Lines in brackets are the simulated board's LEDs drawn for a person, not log lines.
        let lines = log.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("[") }
        #expect(lines.count > 10)
        for line in lines {
            #expect(line.range(of: #"^<[0-7]>"#, options: .regularExpression) != nil, "no priority: \(line)")
            #expect(line.range(of: #"\d{4}-\d\d-\d\d|\d\d:\d\d:\d\d"#, options: .regularExpression) == nil, "a timestamp: \(line)")
        }
        #expect(lines.contains("<5>hound-speaker running: press Space or Enter to talk"))
        #expect(lines.contains("<6>state ready -> recording"))
        #expect(lines.contains("<6>final transcript: \"what day is it\""))
        #expect(lines.contains { $0.hasPrefix("<5>timings (ms from trigger): first audio sent ") })
        #expect(lines.contains("<5>stopping (signal)"))
        #expect(!log.contains(CLI.key))
    }

    /// SIGTERM to a running speaker with the control API on: the services stop one at a time in their order
    /// (Sources/SpeakerCommands/SpeakerServices.swift): the stop announced, the control API closed, the loop's shutdown,
    /// the board last, and the exit is 0.
    @Test func sigtermStopsTheServicesInOrder() throws {
        let (service, port, _) = try CLI.startService()
        defer { service.terminate(); service.waitUntilExit() }
        let control = freePort()
        let fixture = try RunFixture(recording: "share/demo/what-time-is-it.wav", port: port, hotPhrase: false,
                                     extraConfig: "[control]\nlisten = \"127.0.0.1:\(control)\"")
        defer { fixture.remove() }
        let notify = try NotifySocket(path: "\(fixture.dir)/notify")
        _ = FileManager.default.createFile(atPath: "\(fixture.dir)/stderr", contents: nil)
        let stderr = try FileHandle(forWritingTo: URL(fileURLWithPath: "\(fixture.dir)/stderr"))
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["run", "--config", fixture.config, "--events", "json"]
        process.currentDirectoryURL = Self.root
        process.environment = fixture.environment(hotPhrase: false).merging(["NOTIFY_SOCKET": notify.path]) { $1 }
        let input = Pipe(), output = OutputWatcher()
        process.standardInput = input
        process.standardOutput = output.pipe
        process.standardError = stderr
        try process.run()
        #expect(notify.receive(until: "READY=1").last?.hasPrefix("READY=1") == true)
        #expect(output.wait(for: "\"to\":\"ready\""))
        process.terminate()
        #expect(notify.receive(until: "STOPPING=1").last?.hasPrefix("STOPPING=1") == true)
        output.readToEnd()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        #expect(output.seen.contains("\"to\":\"none\""))  // the loop's shutdown, in its events
        let log = try String(contentsOfFile: "\(fixture.dir)/stderr", encoding: .utf8)
        let steps = ["control API and kiosk page on http://127.0.0.1:\(control)/", "hound-speaker running: ", "stopping (signal)",
                     "control API stopped", "speaker loop stopped", "board stopped: LEDs off, lines released"]
        let found = steps.map { log.range(of: $0)?.lowerBound }
        #expect(!found.contains(nil), "missing \(zip(steps, found).filter { $0.1 == nil }.map(\.0)) in:\n\(log)")
        let positions = found.compactMap { $0 }
        #expect(positions == positions.sorted(), "out of order:\n\(log)")
    }

    /// The same warning, as journald lines when stderr is the journal and as plain timestamped lines when not.
    @Test func logLinesFollowWhereStandardErrorGoes() throws {
        let dir = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let config = try CLI.clientConfig(port: 1)
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: config)  // warned about
        func stderrLines(journal: Bool) throws -> [String] {
            let path = "\(dir)/stderr-\(journal)"
            _ = FileManager.default.createFile(atPath: path, contents: nil)
            let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
            let process = Process()
            process.executableURL = CLI.binary
            process.arguments = ["text", "hello", "--config", config]
            // A JOURNAL_STREAM for another stream (a redirect) must not count.
            var stream = journalStream(of: handle)
            if !journal { stream += "1" }
            process.environment = ["JOURNAL_STREAM": stream]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = handle
            try process.run()
            process.waitUntilExit()
            #expect(process.terminationStatus == 1)  // nothing listens on port 1
            return try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        }
        let warning = "\(config) holds the client key and is group-readable (mode 640); chmod 600 is safer"
        let journal = try stderrLines(journal: true)
        #expect(journal.first == "<4>\(warning)", "\(journal)")
        let plain = try stderrLines(journal: false)
        #expect(plain.first?.range(of: #"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d.* warning hound-speaker:"#, options: .regularExpression) != nil, "\(plain)")
        #expect(plain.first?.hasSuffix(warning) == true)
        // The command's own error is for a person, not a log line: the same either way.
        #expect(journal.last?.hasPrefix("hound-speaker: error: cannot connect to Houndify") == true)
        // (libcurl's message carries the milliseconds the refusal took, which differ between the two runs.)
        func timeless(_ line: String?) -> String? { line?.replacing(/after \d+ ms/, with: "after N ms") }
        #expect(timeless(plain.last) == timeless(journal.last))
    }
}
