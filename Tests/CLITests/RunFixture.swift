import Audio
import Foundation

/// What `hound-speaker run` needs to run whole without hardware: a directory with a recording played by an ALSA
/// `file` microphone (`mic`), a `file` speaker writing speaker.raw, and a private config naming them, the local
/// service and the simulated board. Shared by the `run` tests so that they differ only in what they check.
struct RunFixture {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    let dir: String
    let config: String
    var spokenBytes: Int { (try? FileManager.default.attributesOfItem(atPath: "\(dir)/speaker.raw")[.size] as? Int) ?? 0 }

    /// `recording` is relative to the repository; `extraConfig` is appended to the config (TOML).
    /// `echoCancel`: `[audio] echo_cancel` (barge-in).
    /// `credentials` false: none in the config (setup mode).
    init(recording: String, port: Int, hotPhrase: Bool, echoCancel: Bool = false, transcript: String = "what day is it",
         extraConfig: String = "", credentials: Bool = true, clientKey: String = CLI.key) throws {
        dir = FileManager.default.temporaryDirectory.appendingPathComponent("hs-run-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let sox = Process()
        sox.executableURL = URL(fileURLWithPath: "/usr/bin/sox")
        sox.arguments = [Self.root.appendingPathComponent(recording).path, "-t", "raw", "\(dir)/mic.raw"]
        try sox.run()
        sox.waitUntilExit()
        try writeFileDevices(to: "\(dir)/asoundrc", mic: "run_mic", input: "\(dir)/mic.raw",
                             speaker: "run_speaker", output: "\(dir)/speaker.raw")
        config = "\(dir)/speaker.toml"
        try Data("""
            [houndify]
            \(credentials ? "client_id = \"\(CLI.id)\"\nclient_key = \"\(clientKey)\"" : "# no credentials yet")
            endpoint = "http://127.0.0.1:\(port)"
            [houndify.request_info]
            LocalServiceTranscript = "\(transcript)"
            [audio]
            input = "run_mic"
            output = "run_speaker"
            # With the microphone always open (the hot phrase), "auto" reads this file PCM at a microphone's pace,
            # as a sound card would deliver it; without, the question comes at once and the test does not wait.
            input_pacing = "\(hotPhrase ? "auto" : "none")"
            echo_cancel = \(echoCancel)
            [board]
            profile = "simulated"
            [hotphrase]
            enabled = \(hotPhrase)
            \(extraConfig)
            \(extraConfig.contains("[control]") ? "" : Self.noControl)
            """.utf8).write(to: URL(fileURLWithPath: config))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: config)
    }

    /// No control API unless a test asks for one: `run` stops when its port is taken, and the default
    /// (127.0.0.1:8780) is shared by every `run` on this machine, tests in parallel included.
    static let noControl = "[control]\nlisten = \"\""

    /// The environment that makes `run` use these devices and the repository's board profiles.
    func environment(hotPhrase: Bool) -> [String: String] {
        ["ALSA_CONFIG_PATH": "/usr/share/alsa/alsa.conf:\(dir)/asoundrc",
         "HOUND_SPEAKER_BOARD_PATH": Self.root.appendingPathComponent("board").path].merging(extraEnvironment) { $1 }
    }

    /// More of `run`'s environment (a folder of shipped hot-phrase files, for the household's negative bank).
    var extraEnvironment: [String: String] = [:]

    func remove() { try? FileManager.default.removeItem(atPath: dir) }

    /// `run --events json` on these devices, from the repository: the process, its standard input (the simulated
    /// button) and its events as they come.
    func startRun(hotPhrase: Bool, environment extra: [String: String] = [:]) throws -> (process: Process, input: Pipe, output: OutputWatcher) {
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = ["run", "--config", config, "--events", "json"]
        process.currentDirectoryURL = Self.root
        process.environment = environment(hotPhrase: hotPhrase).merging(extra) { $1 }
        let input = Pipe(), output = OutputWatcher()
        process.standardInput = input
        process.standardOutput = output.pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        return (process, input, output)
    }
}

/// A child's standard output, read as it comes until a text shows up (the `run` and `board` tests follow the
/// speaker's lines this way).
final class OutputWatcher {
    let pipe = Pipe()
    private(set) var seen = ""

    /// Reads until `text` has been seen; false if the output ended first or nothing came for `seconds` (a test
    /// that fails must not hang the whole run).
    /// `position`: only what came after the first `position` bytes counts (a mark taken from `seen.utf8`).
    @discardableResult
    func wait(for text: String, seconds: Double = 60, after position: Int = 0) -> Bool {
        while !String(decoding: seen.utf8.dropFirst(position), as: UTF8.self).contains(text) {
            var ready = pollfd(fd: pipe.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, Int32(seconds * 1000)) > 0 else { return false }
            let data = pipe.fileHandleForReading.availableData
            if data.isEmpty { return false }
            seen += String(decoding: data, as: UTF8.self)
        }
        return true
    }

    /// Reads to the end of the output: true when it ended (the child exited or closed it), false if nothing came
    /// for `seconds`.
    func waitForEnd(seconds: Double = 60) -> Bool {
        while true {
            var ready = pollfd(fd: pipe.fileHandleForReading.fileDescriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&ready, 1, Int32(seconds * 1000)) > 0 else { return false }
            let data = pipe.fileHandleForReading.availableData
            if data.isEmpty { return true }
            seen += String(decoding: data, as: UTF8.self)
        }
    }

    /// Reads the rest, to the end of the output.
    func readToEnd() {
        seen += String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }
}

/// An asoundrc defining `mic` (an ALSA `file` PCM playing `input`, raw 16-bit) and `speaker` (writing `output`).
func writeFileDevices(to asoundrc: String, mic: String, input: String, speaker: String, output: String) throws {
    try FileDevice.write([.microphone(mic, reads: input), .speaker(speaker, writes: output)], to: asoundrc)
}
