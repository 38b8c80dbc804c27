import Audio
import JSONKit
import AudioCore
import Foundation
import Glibc
import Platform
import Synchronization
import Houndify
import LocalHoundify
import Logging
import Assembly
import HoundifyAnswers
import SpeakerCore
import SpeakerRuntime
import Speech

/// 1,000 whole button queries through the speaker loop in one process: the question played into an ALSA file PCM
/// (not paced: as fast as the machine goes), the local Houndify service in-process over loopback with libcurl,
/// the answer spoken by espeak-ng into the null PCM. Reports the growth of the resident set and the medians of
/// the stage timings.
enum LoopBench {
    static let id = "AAECAwQFBgcICQoLDA0ODw=="
    static let key = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-Pw=="

    static func residentKB() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) else { return 0 }
        return Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
    }

    static func run(queries: Int, directory: String) async throws {
        // The question: 0.3 s of silence, espeak-ng's "what time is it", then the null PCM's silence.
        let wav = "\(directory)/q.wav"
        let espeak = Process()
        espeak.executableURL = URL(fileURLWithPath: "/usr/bin/espeak-ng")
        espeak.arguments = ["-w", wav, "what time is it"]
        try espeak.run()
        espeak.waitUntilExit()
        let question = try AudioFile.readMono(path: wav)
        let mic = [Int16](repeating: 0, count: 4800) + question.samples
        try mic.withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: "\(directory)/mic.raw")) }

        var logger = Logger(label: "bench")
        logger.logLevel = ProcessInfo.processInfo.environment["BENCH_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
        let service = try LocalHoundifyService(configuration: LocalServiceConfiguration(clientID: id, clientKey: key), logger: logger)
        let port = try await service.start(port: 0)
        let client = try HoundifyClient(configuration: HoundifyClientConfiguration(
            endpoint: "http://127.0.0.1:\(port)", clientKey: key,
            profile: ClientProfile(clientID: id, deviceID: "bench", timeZone: "UTC")))
        if let mode = ProcessInfo.processInfo.environment["BENCH_PROBE"] {
            // Diagnostics: the growth of one part alone.
            let base = residentKB()
            var marks: [Int] = []
            for i in 1...queries {
                switch mode {
                case "text": _ = try? await client.textSearch("what time is it")
                case "voice":
                    let search = try client.startVoiceSearch(extra: ["LocalServiceTranscript": "what time is it"])
                    mic.withUnsafeBufferPointer { _ = search.write($0) }
                    search.finish()
                    _ = try? await search.response()
                case "capture":
                    var c = CaptureSettings(device: "bench_mic")
                    c.rate = SpeakerAudio.sampleRate
                    let got = ReadyCounter()
                    let capture = try ALSACapture(settings: c, onFrame: { _, _ in got.increment() })
                    capture.start()
                    await got.wait(above: 10)
                    capture.stop()
                default:
                    let engine = try SpeechEngine(settings: VoiceSettings())
                    _ = await engine.speak("It is twelve o'clock.", to: .memory).result()
                }
                if i % 500 == 0 { marks.append(residentKB() - base) }
            }
            print("probe \(mode): resident set every 500: \(marks.map(String.init).joined(separator: ", ")) kB over the start")
            await service.stop()
            return
        }
        var capture = CaptureSettings(device: "bench_mic")
        capture.rate = SpeakerAudio.sampleRate
        let volume = try OutputVolume(percent: 100, device: "bench_out", mixerControl: "")
        let earconPaths = ["share/earcons", "/usr/share/hound-speaker/earcons"]
        setenv("HOUND_SPEAKER_EARCON_PATH", earconPaths.joined(separator: ":"), 1)
        let speech = EngineSpeech(engine: try SpeechEngine(settings: VoiceSettings(), volume: volume),
                                  output: ProcessInfo.processInfo.environment["BENCH_OUTPUT"] == "memory" ? .memory : .device("bench_out"),
                                  earcons: try Earcons.load())
        let ports = SpeakerPorts(search: HoundifyVoiceSearch(client: client), speech: speech, volume: MixerVolume(volume),
                                 microphone: ALSAMicrophone(capture), clock: DispatchClock(), system: HostSystem())
        let ready = ReadyCounter()
        let loop = SpeakerLoop(ports: ports, logger: logger, observers: [{ activity in
            if activity == .stateChanged(from: .speaking, to: .ready) { ready.increment() }
        }])
        // The loop runs as a child of the benchmark, beside the queries that drive it.
        let (rssStart, rssEnd, elapsed, checkpoints) = await withDiscardingTaskGroup { group in
            group.addTask { await loop.run() }

            func ask(_ n: Int) async {
                for _ in 0..<n {
                    let before = ready.value
                    loop.send(.talk)
                    await ready.wait(above: before)
                }
            }
            await ask(20)  // warm-up: caches, connection, espeak-ng's voice data
            let rssStart = residentKB()
            let started = ContinuousClock.now
            var checkpoints: [(Int, Int)] = []
            var done = 0
            while done < queries {
                let step = min(500, queries - done)
                await ask(step)
                done += step
                checkpoints.append((done, residentKB()))
                FileHandle.standardError.write(Data("\(done) queries, resident \(residentKB()) kB\n".utf8))
            }
            let elapsed = started.duration(to: .now)
            let rssEnd = residentKB()
            loop.send(.shutdown)
            return (rssStart, rssEnd, elapsed, checkpoints)
        }
        await service.stop()

        let timings = loop.interactions.suffix(queries)
        func median(_ keyPath: KeyPath<InteractionTimings, ContinuousClock.Instant?>) -> String {
            let values = timings.compactMap { $0.milliseconds(keyPath) }.sorted()
            return values.isEmpty ? "-" : "\(values[values.count / 2]) ms"
        }
        print("\(queries) queries after 20 warm-up ones, in \(String(cFormat: "%.1f", Double(elapsed / .milliseconds(1)) / 1000)) s")
        print("| measure | value |")
        print("|---|---|")
        print("| resident set before | \(rssStart) kB |")
        print("| resident set after | \(rssEnd) kB |")
        print("| growth over \(queries) queries | \(rssEnd - rssStart) kB |")
        print("| resident set every 500 queries | \(checkpoints.map { "\($0.1 - rssStart)" }.joined(separator: ", ")) kB over the start |")
        for stage in InteractionTimings.stages {
            print("| median trigger -> \(stage.name) | \(median(stage.keyPath)) |")
        }
    }
}

/// Counts completed answers; waiting suspends (it never blocks a thread of the concurrency pool).
final class ReadyCounter: Sendable {
    private struct State {
        var count = 0
        var waiters: [(above: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }
    private let state = Mutex(State())

    var value: Int { state.withLock { $0.count } }

    func increment() {
        let due = state.withLock { s in
            s.count += 1
            let count = s.count
            defer { s.waiters.removeAll { $0.above < count } }
            return s.waiters.filter { $0.above < count }.map(\.continuation)
        }
        for waiter in due { waiter.resume() }
    }

    func wait(above n: Int) async {
        await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { s in
                if s.count > n { return true }
                s.waiters.append((n, waiter))
                return false
            }
            if ready { waiter.resume() }
        }
    }
}
