import ArgumentParser
import AudioCore
import Audio
import FoundationEssentials
import Glibc
import Platform
import Houndify
import Logging
import Speaker
import SpeakerApp
import SpeakerConfig
import SpeakerRuntime
import Speech

/// One whole interaction with no hardware and no credentials: the local Houndify service (its own program, as a
/// child on a free loopback port), the
/// microphone played from a recording ("OK Hound ... what time is it") through a real ALSA `file` PCM in real
/// time, the hot-phrase detector waking the speaker, the real libcurl client, end-of-speech detection, espeak-ng
/// speaking the answer.
struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "One whole interaction with no hardware and no credentials.")
    @Option(help: ArgumentHelp("Write the spoken answer to this WAV file (default: the sound card, else hound-speaker-demo.wav).", valueName: "WAV"))
    var output: String?

    static let sensitivity = 0.85
    static let id = "AAECAwQFBgcICQoLDA0ODw=="
    static let key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-Pw=="

    func run() async throws {
        try await reporting {
            // The recording, as raw 16 kHz samples for the capture PCM.
            guard let recording = ShippedFiles.locate("ok-hound-what-time-is-it.wav", in: .demo) else {
                throw CommandFailure(message: "the demo recording ok-hound-what-time-is-it.wav is not in \(ShippedFiles.directories(.demo).joined(separator: ", "))")
            }
            let audio: MonoAudio
            do throws(AudioFileError) { audio = try AudioFile.readMono(path: recording) } catch { throw CommandFailure(message: error.description) }
            let work = FileManager.default.temporaryDirectory.appendingPathComponent("hound-speaker-demo-\(getpid())").path
            try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: work) }
            try audio.samples.withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: "\(work)/mic.raw")) }
            // The system's ALSA configuration plus a microphone that plays the recording.
            try Data("""
                pcm.demo_microphone { type file
                 slave.pcm "null"
                 file "/dev/null"
                 infile "\(work)/mic.raw"
                 format "raw" }
                """.utf8).write(to: URL(fileURLWithPath: "\(work)/asoundrc"))
            let system = ProcessInfo.processInfo.environment["ALSA_CONFIG_PATH"] ?? "/usr/share/alsa/alsa.conf"
            setenv("ALSA_CONFIG_PATH", "\(system):\(work)/asoundrc", 1)

            LoggingBootstrap.once(level: .warning)
            var logger = Logger(label: "demo")
            logger.logLevel = .warning

            // The service's own config: the demo's made-up credentials, readable by this user only.
            let serviceConfig = "\(work)/service.toml"
            close(open(serviceConfig, O_CREAT | O_WRONLY, 0o600))
            try Data("[houndify]\nclient_id = \"\(Self.id)\"\nclient_key = \"\(Self.key)\"\n[logging]\nlevel = \"warning\"\n".utf8)
                .write(to: URL(fileURLWithPath: serviceConfig))
            let service = try await LocalServiceProcess.start(configPath: serviceConfig)
            let port = service.port
            printLine("local Houndify service on http://127.0.0.1:\(port) (no account needed)")
            let profile = ClientProfile(clientID: Self.id, userID: "demo", deviceID: "demo", latitude: 37.3875, longitude: -122.0575,
                                        timeZone: SystemTimeZone.identifier())
            let client = try HoundifyClient(configuration: HoundifyClientConfiguration(
                endpoint: "http://127.0.0.1:\(port)", clientKey: Self.key, profile: profile))

            let speechOutput = Self.chooseOutput(output)
            var config = SpeakerConfiguration()
            config.audio.input = "demo_microphone"
            config.hotphrase.model = ShippedFiles.locate("ok-hound.hpm", in: .hotPhrase) ?? ""
            // More eager than the shipped default (0.1 false accepts an hour, which misses almost half of the
            // voices it never heard: BENCHMARKS.md), so the demo does not depend on this one recording's score.
            config.hotphrase.enabled = true
            config.hotphrase.sensitivity = Self.sensitivity
            let context = AppContext(config: config, logger: logger)
            var parts = try SpeakerAssembly.parts(context: context, client: client, output: speechOutput)
            parts.capture.pacing = .realTime
            parts.voiceRequestInfo = ["LocalServiceTranscript": "what time is it"]
            let printer = DemoPrinter()
            parts.eventSink = { printer.show($0) }
            let loop = SpeakerLoop(parts: parts)
            let runner = Task.detached { await loop.run() }
            printLine("[microphone] plays \(URL(fileURLWithPath: recording).lastPathComponent) in real time; the speaker listens for \"OK Hound\" (sensitivity \(Self.sensitivity))")
            guard await printer.waitFor("\"event\":\"hotphrase\"", seconds: audio.duration + 5) else {
                loop.send(.shutdown)
                await runner.value
                await service.stop()
                throw CommandFailure(message: "the hot phrase was not heard in \(recording)")
            }
            let done = await printer.waitFor("\"from\":\"speaking\",\"to\":\"ready\"", seconds: 60)
            loop.send(.shutdown)
            await runner.value
            await service.stop()
            if case .file(let path) = speechOutput { printLine("the answer was spoken into \(path)") }
            if !done { throw CommandFailure(message: "the interaction did not complete within 60 s") }
        }
    }

    static func chooseOutput(_ requested: String?) -> SpeechOutput {
        if let requested { return .file(requested) }
        do throws(AudioDeviceError) {
            let probe = try ALSAPlayback(device: "default", sampleRate: 22050)
            probe.close()
            return .device("default")
        } catch {
            return .file("hound-speaker-demo.wav")
        }
    }
}

/// Turns the loop's JSON events into lines a person reads, and lets the demo wait for one (suspending, never
/// blocking a thread of the concurrency pool that the loop itself runs on).
final class DemoPrinter: @unchecked Sendable {
    private let lock = Lock()
    private var seen: [String] = []
    private var waiters: [(text: String, waiter: CheckedContinuation<Bool, Never>)] = []

    func show(_ line: String) {
        lock.lock()
        seen.append(line)
        let due = waiters.filter { line.contains($0.text) }
        waiters.removeAll { line.contains($0.text) }
        lock.unlock()
        for w in due { w.waiter.resume(returning: true) }
        guard let json = try? JSONValue(parsing: Data(line.utf8)) else { return }
        switch json["event"]?.stringValue {
        case "hotphrase": printLine("[hot phrase] \"OK Hound\" heard")
        case "state": printLine("[state] \(json["from"]?.stringValue ?? "?") -> \(json["to"]?.stringValue ?? "?")")
        case "partial":
            if let text = json["text"]?.stringValue, !text.isEmpty { printLine("[heard so far] \(text)") }
        case "final":
            printLine("[transcript] \(json["transcript"]?.stringValue ?? "")")
            printLine("[answer] \(json["answer"]?.stringValue ?? "")")
        case "error": printLine("[error] \(json["kind"]?.stringValue ?? "")")
        case "timings": printLine("[\(json["line"]?.stringValue ?? "")]")
        default: break
        }
    }

    /// True once a line containing `text` has been seen; false after `seconds`.
    @discardableResult
    func waitFor(_ text: String, seconds: Double = 10) async -> Bool {
        let timeout = Task { [weak self] in
            try? await Task.sleep(for: .seconds(seconds))
            self?.expire(text)
        }
        defer { timeout.cancel() }
        return await withCheckedContinuation { waiter in
            lock.lock()
            if seen.contains(where: { $0.contains(text) }) {
                lock.unlock()
                waiter.resume(returning: true)
                return
            }
            waiters.append((text, waiter))
            lock.unlock()
        }
    }

    private func expire(_ text: String) {
        lock.lock()
        let due = waiters.filter { $0.text == text }
        waiters.removeAll { $0.text == text }
        lock.unlock()
        for w in due { w.waiter.resume(returning: false) }
    }

}
