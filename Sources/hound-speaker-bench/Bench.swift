import Audio
import AudioCore
import Foundation
import Glibc
import Platform
import HotPhrase
import Speech
import Synchronization

/// Benchmarks for BENCHMARKS.md, apart from the tests (which never assert time). Uses real ALSA through `file`
/// PCMs over the null PCM (no sound card here), real libsoxr and real espeak-ng.
///
///   swift run -c release hound-speaker-bench capture [minutes]
///   swift run -c release hound-speaker-bench speech [runs]
///   swift run -c release hound-speaker-bench aec ROOMSET   (the echo canceller in tools/bench/aec_room's rooms)
///   swift run -c release hound-speaker-bench head OUT.json TAKE.wav...   (the personal head: HeadBench.swift)
///   swift run -c release hound-speaker-bench offline OUT.tsv DIR|FILE...  (the offline recogniser: OfflineBench.swift)
///   swift run -c release hound-speaker-bench ring [pixels] [seconds]   (an APA102 ring's frames: RingBench.swift)
///   swift run -c release hound-speaker-bench verify wakes|keywords OUT.tsv ...  (a second check of wakes: VerifyBench.swift)
@main
struct Bench {
    static func main() async throws {
        let args = CommandLine.arguments.dropFirst()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hs-bench-\(getpid())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileDevice.install([.speaker("bench_out", writes: "/dev/null"), .microphone("bench_mic", reads: "\(directory)/mic.raw"),
                                .microphone("bench_in", reads: "\(directory)/in.raw")], asoundrc: "\(directory)/asoundrc")
        switch args.first {
        case "capture": try capture(minutes: Double(args.dropFirst().first ?? "") ?? 5, directory: directory)
        case "speech": try await speech(runs: Int(args.dropFirst().first ?? "") ?? 20)
        case "loop": try await LoopBench.run(queries: Int(args.dropFirst().first ?? "") ?? 1000, directory: directory)
        case "hotphrase": try hotPhrase(minutes: Double(args.dropFirst().first ?? "") ?? 10, wav: args.dropFirst(2).first,
                                        model: args.dropFirst(3).first)
        case "aec": try EchoBench.run(Array(args.dropFirst()))
        case "head": try HeadBench.run(Array(args.dropFirst()))
        case "offline": try OfflineBench.run(Array(args.dropFirst()))
        case "ring": RingBench.run(Array(args.dropFirst()))
        case "verify": try VerifyBench.run(Array(args.dropFirst()))
        default: print("usage: hound-speaker-bench capture [minutes] | speech [runs] | loop [queries] | hotphrase [minutes] [WAV] [MODEL] | aec ROOMSET [options] | head OUT.json TAKE.wav... [options] | offline OUT.tsv DIR|FILE... | ring [pixels] [seconds] | verify wakes|keywords OUT.tsv ...")
        }
    }

    /// CPU of the hot-phrase detector alone, fed 20 ms frames as the capture thread feeds it: thread CPU time
    /// around `process` only (the file is decoded beforehand). The audio is WAV's (repeated to `minutes`) or,
    /// without one (or "-"), share/demo's "OK Hound" recording repeated (speech and room tone). MODEL is any
    /// .hpm (default: the installed one); for a speech-embedding model the multiply-adds are printed too.
    static func hotPhrase(minutes: Double, wav: String?, model path: String?) throws {
        let model = try HotPhraseModel.locate(path)
        let source = try AudioFile.readMono(path: wav.flatMap { $0 == "-" ? nil : $0 } ?? "share/demo/ok-hound-what-time-is-it.wav").samples
        let total = Int(minutes * 60 * Double(SpeakerAudio.sampleRate))
        var audio = [Int16](repeating: 0, count: total)
        for i in 0..<total { audio[i] = source[i % source.count] }
        let detector = HotPhraseDetector(model: model)
        var detections = 0
        var cpu = 0.0
        var t0 = timespec(), t1 = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0)
        MonoAudio(samples: audio, sampleRate: SpeakerAudio.sampleRate).forEachFrame { frame in
            detector.process(frame) { _ in detections += 1 }
            return true
        }
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1)
        cpu = Double(t1.tv_sec - t0.tv_sec) + Double(t1.tv_nsec - t0.tv_nsec) / 1e9
        let seconds = Double(total) / Double(SpeakerAudio.sampleRate)
        print(String(cFormat: "hot phrase: %.0f s of audio in %.3f s CPU: %.3f %% of one core, %.1f us per 20 ms frame, %d detections",
                     seconds, cpu, 100 * cpu / seconds, cpu / (seconds / 0.02) * 1e6, detections))
        if let macs = model.embeddingMultiplyAdds {
            let steps = 1 / model.stepSeconds
            print(String(cFormat: "multiply-adds per second of audio: embedding whole window %.1f M, streaming %.1f M; head %.2f M",
                         Double(macs.window) * steps / 1e6, Double(macs.streaming) * steps / 1e6, Double(macs.head) * steps / 1e6))
        }
    }

    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
    }

    /// CPU per minute of captured audio: the capture thread reading, picking a channel, resampling and framing.
    static func capture(minutes: Double, directory: String) throws {
        print("| capture | CPU s per minute of audio | share of one core in real time |")
        print("|---|---|---|")
        for (rate, channels) in [(48000, 2), (44100, 1), (SpeakerAudio.sampleRate, 1)] {
            // A minute of noise in the fixture; the file PCM then repeats nothing, so the rest reads as silence
            // (the cost of a silent frame and a loud one is the same here: no branch depends on the level).
            let seconds = 60
            var fixture = [Int16](repeating: 0, count: rate * channels * seconds)
            var state: UInt32 = 1
            for i in fixture.indices { state = state &* 1664525 &+ 1013904223; fixture[i] = Int16(truncatingIfNeeded: state >> 16) / 4 }
            try fixture.withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: "\(directory)/in.raw")) }
            var settings = CaptureSettings(device: "bench_in")
            settings.rate = rate
            settings.channels = channels
            settings.channel = channels - 1
            let wanted = Int(minutes * 60 * Double(SpeakerAudio.sampleRate))
            let received = Mutex(0)
            let done = Condition()
            let capture = try ALSACapture(settings: settings, onFrame: { frame, _ in
                let total = received.withLock { $0 += frame.count; return $0 }
                if total >= wanted { done.lock(); done.signal(); done.unlock() }
            })
            let before = cpuSeconds()
            capture.start()
            done.lock()
            while received.withLock({ $0 }) < wanted { done.wait() }
            done.unlock()
            let cpu = cpuSeconds() - before
            capture.stop()
            let perMinute = cpu / minutes
            print("| \(rate) Hz \(channels) ch -> 16 kHz mono | \(String(cFormat: "%.3f", perMinute)) | \(String(cFormat: "%.2f", perMinute / 60 * 100)) % |")
        }
    }

    /// Time from the request to speak to the first sample of speech reaching ALSA, and from stopSpeaking to the
    /// output being stopped (synthesis ended, queued audio dropped).
    static func speech(runs: Int) async throws {
        let answer = "It is seventy two degrees and sunny in Mountain View, with a light breeze from the west. Tonight, expect clear skies and a low of fifty four."
        let engine = try SpeechEngine(settings: VoiceSettings())
        _ = await engine.speak("warm up", to: .device("bench_out")).result()
        var first: [Double] = [], stops: [Double] = []
        for _ in 0..<runs {
            let task = engine.speak(answer, to: .device("bench_out"))
            if let at = await task.firstSpeechSample() { first.append(Double((task.requestedAt.duration(to: at)) / .microseconds(1)) / 1000) }
            _ = await task.result()
            // Stop: at the first block of speech, from the speech thread itself, so the request lands mid-sentence.
            let stopAt = Mutex<ContinuousClock.Instant?>(nil)
            let cut = engine.speak(answer, to: .device("bench_out"), onFirstSample: {
                stopAt.withLock { $0 = .now }
                engine.stopSpeaking()
            })
            _ = await cut.result()
            let end = ContinuousClock.now
            if let at = stopAt.withLock({ $0 }) { stops.append(Double(at.duration(to: end) / .microseconds(1)) / 1000) }
        }
        func row(_ name: String, _ values: [Double]) {
            let s = values.sorted()
            print("| \(name) | \(String(cFormat: "%.1f", s[s.count / 2])) ms | \(String(cFormat: "%.1f", s[min(s.count - 1, s.count * 9 / 10)])) ms | \(String(cFormat: "%.1f", s.last!)) ms |")
        }
        print("| \(runs) runs | median | 90th pct | max |")
        print("|---|---|---|---|")
        row("request to first speech sample at ALSA (device opened per answer, 150 ms lead-in excluded)", first)
        row("stopSpeaking to output stopped", stops)
    }
}
