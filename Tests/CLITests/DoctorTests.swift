import Foundation
import Testing
import TestSupport

/// `hound-speaker doctor` against good and broken setups: every check prints `ok`/`FAIL` with advice, and the exit
/// status is non-zero exactly when something failed.
@Suite(.serialized, .ownThread) struct DoctorTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The kernel's own answer, asked here without the doctor's code: adjtimex(2) with modes 0 returns TIME_ERROR (5)
    /// while the clock is unsynchronized. The buffer is larger than any struct timex.
    static var clockSynchronized: Bool {
        typealias Adjtimex = @convention(c) (UnsafeMutableRawPointer) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "adjtimex") else { return false }
        let call = unsafeBitCast(symbol, to: Adjtimex.self)
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 1024, alignment: 16)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0, count: 1024)
        let state = call(buffer)
        return state >= 0 && state != 5
    }

    struct Setup {
        let dir: String
        let config: String
        let environment: [String: String]
    }

    /// A directory with file-backed ALSA devices and a config using them, the simulated board and `endpoint`.
    func setup(endpoint: String, extra: String = "", mode: Int = 0o600, credentials: Bool = true) throws -> Setup {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hs-doctor-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try writeFileDevices(to: "\(dir)/asoundrc", mic: "doctor_mic", input: "\(dir)/in.raw",
                             speaker: "doctor_speaker", output: "\(dir)/out.raw")
        _ = FileManager.default.createFile(atPath: "\(dir)/in.raw", contents: Data())
        let config = "\(dir)/speaker.toml"
        try Data("""
            \(credentials ? "[houndify]\nclient_id = \"\(CLI.id)\"\nclient_key = \"\(CLI.key)\"\n" : "[houndify]\n")endpoint = "\(endpoint)"
            connect_timeout = 3.0
            [location]
            latitude = 40.0
            longitude = -74.0
            [audio]
            input = "doctor_mic"
            output = "doctor_speaker"
            [board]
            driver = "simulated"
            \(extra)
            """.utf8).write(to: URL(fileURLWithPath: config))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: config)
        return Setup(dir: dir, config: config, environment: [
            "ALSA_CONFIG_PATH": "/usr/share/alsa/alsa.conf:\(dir)/asoundrc",
            "HOUND_SPEAKER_EARCON_PATH": Self.root.appendingPathComponent("share/earcons").path,
        ])
    }

    func doctor(_ setup: Setup, environment: [String: String] = [:]) throws -> CLI.Result {
        let result = try CLI.run(["doctor", "--config", setup.config], environment: setup.environment.merging(environment) { _, new in new })
        // Non-zero exactly when a check failed.
        #expect(result.status == (result.stdout.contains("\nFAIL ") || result.stdout.hasPrefix("FAIL ") ? 1 : 0), "\(result.stdout)")
        #expect(!result.stdout.contains(CLI.key) && !result.stderr.contains(CLI.key))
        return result
    }

    func lines(_ result: CLI.Result, _ prefix: String) -> [String] {
        result.stdout.split(separator: "\n").map(String.init).filter { $0.hasPrefix(prefix) }
    }

    @Test func aGoodSetupPassesEveryCheck() throws {
        let (service, port, _) = try CLI.startService()
        defer { service.terminate(); service.waitUntilExit() }
        let setup = try setup(endpoint: "http://127.0.0.1:\(port)")
        defer { try? FileManager.default.removeItem(atPath: setup.dir) }
        let result = try doctor(setup, environment: ["HOUND_SPEAKER_SERVICE_USER": NSUserName()])
        let ok = lines(result, "ok   ")
        for expected in ["ok   config \(setup.config) is valid",
                         "ok   Houndify client ID (from \(setup.config))",
                         "ok   Houndify client key (from \(setup.config))",
                         "ok   credentials file \(setup.config) is private (mode 600)",
                         "ok   the service user \(NSUserName()) can read \(setup.config) (owner \(NSUserName()))",
                         "ok   location set",
                         "ok   espeak-ng voice \"en-us\"",
                         "ok   earcons",
                         "ok   speaker \"doctor_speaker\" opens"] {
            #expect(ok.contains(expected), "missing: \(expected)\n\(result.stdout)")
        }
        #expect(ok.contains { $0.hasPrefix("ok   Houndify endpoint http://127.0.0.1:\(port) reached: HTTP 404 (DNS ") })
        #expect(ok.contains { $0.hasPrefix("ok   microphone \"doctor_mic\" opens") })
        // The clock is whatever the kernel says; the doctor must say the same.
        if Self.clockSynchronized {
            #expect(ok.contains { $0.hasPrefix("ok   clock synchronized") }, "\(result.stdout)")
        } else {
            #expect(lines(result, "FAIL ") == ["FAIL clock not synchronized (kernel NTP state: unsynchronized)"], "\(result.stdout)")
            #expect(result.stdout.contains("-> enable NTP: sudo timedatectl set-ntp true"))
        }
        #expect(lines(result, "FAIL ").filter { !$0.hasPrefix("FAIL clock") }.isEmpty, "\(result.stdout)")
    }

    @Test func eachNetworkFailureIsNamed() throws {
        let (service, port, _) = try CLI.startService()
        let cases: [(endpoint: String, line: String, advice: String)] = [
            ("https://nohost.invalid", "FAIL Houndify endpoint https://nohost.invalid: DNS cannot resolve nohost.invalid (",
             "`getent hosts nohost.invalid` must print an address"),
            // TLS spoken to a plain-HTTP server: the handshake fails after TCP connected.
            ("https://127.0.0.1:\(port)", "FAIL Houndify endpoint https://127.0.0.1:\(port): TLS failed (",
             "a clock far off makes certificates look invalid"),
        ]
        for c in cases {
            let setup = try setup(endpoint: c.endpoint)
            defer { try? FileManager.default.removeItem(atPath: setup.dir) }
            let result = try doctor(setup)
            #expect(result.status == 1)
            #expect(lines(result, "FAIL Houndify endpoint").count == 1 && lines(result, "FAIL Houndify endpoint")[0].hasPrefix(c.line), "\(result.stdout)")
            #expect(result.stdout.contains(c.advice))
        }
        service.terminate()
        service.waitUntilExit()
        // A port nothing listens on, held: the service's, once gone, could be given to a test running beside this one.
        let held = try HeldPort()
        let setup = try setup(endpoint: "http://127.0.0.1:\(held.port)")
        defer { try? FileManager.default.removeItem(atPath: setup.dir) }
        let closed = try doctor(setup)
        #expect(closed.status == 1)
        #expect(lines(closed, "FAIL Houndify endpoint").count == 1
                && lines(closed, "FAIL Houndify endpoint")[0].hasPrefix("FAIL Houndify endpoint http://127.0.0.1:\(held.port): TCP connection failed ("),
                "\(closed.stdout)")
        #expect(closed.stdout.contains("resolved but nothing accepted the connection"))
    }

    @Test func brokenCredentialsAreNamed() throws {
        // Readable by everyone: the config is refused, with the fix.
        let open = try setup(endpoint: "http://127.0.0.1:1", mode: 0o644)
        defer { try? FileManager.default.removeItem(atPath: open.dir) }
        let refused = try doctor(open)
        #expect(refused.status == 1)
        #expect(refused.stdout.contains("FAIL config: \(open.config): holds [houndify] client_key but is readable by other users (mode 644); run: chmod 600 \(open.config)"))

        // Group-readable: allowed with a warning, but reported as not private.
        let group = try setup(endpoint: "http://127.0.0.1:1", mode: 0o640)
        defer { try? FileManager.default.removeItem(atPath: group.dir) }
        let shared = try doctor(group)
        #expect(shared.stdout.contains("FAIL credentials file \(group.config) is private (mode 640)\n     -> chmod 600 \(group.config): it holds the client key"))

        // The service user cannot read a private file someone else owns.
        let mine = try setup(endpoint: "http://127.0.0.1:1")
        defer { try? FileManager.default.removeItem(atPath: mine.dir) }
        let other = try doctor(mine, environment: ["HOUND_SPEAKER_SERVICE_USER": "nobody"])
        #expect(other.stdout.contains("FAIL the service user nobody can read \(mine.config) (owner \(NSUserName()))\n     -> sudo chown nobody: \(mine.config)"))

        // No credentials anywhere.
        let none = try setup(endpoint: "http://127.0.0.1:1", credentials: false)
        defer { try? FileManager.default.removeItem(atPath: none.dir) }
        let missing = try doctor(none)
        #expect(missing.status == 1)
        #expect(missing.stdout.contains("FAIL Houndify client ID (from none)\n     -> set [houndify] client_id or HOUNDIFY_CLIENT_ID"))
        #expect(missing.stdout.contains("FAIL Houndify client key (from none)\n     -> set [houndify] client_key or HOUNDIFY_CLIENT_KEY"))
        #expect(missing.stdout.contains("info without credentials the speaker starts in setup mode: the setup page on http://0.0.0.0:80/"))
        // From the environment: no file to check.
        let env = try doctor(none, environment: ["HOUNDIFY_CLIENT_ID": CLI.id, "HOUNDIFY_CLIENT_KEY": CLI.key])
        #expect(env.stdout.contains("ok   Houndify client key (from HOUNDIFY_CLIENT_KEY)"))
        #expect(env.stdout.contains("info the client key comes from HOUNDIFY_CLIENT_KEY, not a file"))
        #expect(!env.stdout.contains("credentials file"))
    }

    @Test func aBrokenConfigIsNamedAndTheRestStillChecked() throws {
        let bad = try setup(endpoint: "http://127.0.0.1:1", extra: "talk_mode = \"shout\"")
        defer { try? FileManager.default.removeItem(atPath: bad.dir) }
        let result = try doctor(bad)
        #expect(result.status == 1)
        #expect(result.stdout.contains("FAIL config: \(bad.config):14: [board] talk_mode: must be \"tap\" or \"hold\", not \"shout\""), "\(result.stdout)")
        // The clock does not depend on the config: it is still checked.
        #expect(result.stdout.contains("clock"))
    }
}
