import Foundation
import Synchronization
import Testing
import AudioCore
@testable import Audio
import TestSupport

/// Collects what the capture thread delivers, and lets a test wait for a condition with a deadline.
final class CaptureLog: Sendable {
    private let state = Mutex<(samples: [Int16], frames: Int, frameSizes: Set<Int>, levels: [Double], events: [CaptureEvent])>(([], 0, [], [], []))
    private let condition = NSCondition()

    func frame(_ buffer: UnsafeBufferPointer<Int16>, _ level: Double) {
        state.withLock { s in
            s.samples.append(contentsOf: buffer)
            s.frames += 1
            s.frameSizes.insert(buffer.count)
            s.levels.append(level)
        }
        poke()
    }

    func event(_ e: CaptureEvent) {
        state.withLock { $0.events.append(e) }
        poke()
    }

    private func poke() { condition.lock(); condition.broadcast(); condition.unlock() }

    var samples: [Int16] { state.withLock { $0.samples } }
    var frameSizes: Set<Int> { state.withLock { $0.frameSizes } }
    var levels: [Double] { state.withLock { $0.levels } }
    var events: [CaptureEvent] { state.withLock { $0.events } }

    /// Waits (blocking, on a test thread) until `predicate` holds or `seconds` pass.
    @discardableResult
    func wait(seconds: Double = 10, until predicate: (CaptureLog) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while !predicate(self) {
            if !condition.wait(until: deadline) { return predicate(self) }
        }
        return true
    }
}

/// Best alignment of `a` against `b` (a may lag b by up to `maxLag`), and the error there relative to b's power.
func relativeErrorDB(_ a: [Int16], _ b: [Int16], maxLag: Int, range: Range<Int>) -> (lag: Int, db: Double) {
    var best = (0, Double.infinity)
    for lag in 0...maxLag {
        var err = 0.0, power = 0.0
        for i in range where i + lag < a.count && i < b.count {
            let d = Double(a[i + lag]) - Double(b[i])
            err += d * d
            power += Double(b[i]) * Double(b[i])
        }
        let db = 10 * log10(max(err, 1e-9) / max(power, 1e-9))
        if db < best.1 { best = (lag, db) }
    }
    return best
}

@Suite(.serialized, .ownThread) struct CaptureTests {
    /// Captures `seconds` of the fixture through the real ALSA file PCM.
    func capture(device: String, rate: Int, channels: Int, channel: Int, seconds: Double, frameMS: Int = 20,
                 reader: ALSACapture.Reader? = nil, retry: Duration = .seconds(1)) throws -> CaptureLog {
        var settings = CaptureSettings(device: device)
        settings.rate = rate
        settings.channels = channels
        settings.channel = channel
        settings.frameMS = frameMS
        settings.retryInterval = retry
        settings.pacing = .none  // the fixture at once: these tests are about the samples, not their pace
        let log = CaptureLog()
        let capture = try ALSACapture(settings: settings, reader: reader, onEvent: { log.event($0) }, onFrame: { log.frame($0, $1) })
        capture.start()
        let wanted = Int(seconds * 16000)
        let got = log.wait { $0.samples.count >= wanted }
        capture.stop()
        #expect(got, "captured \(log.samples.count) of \(wanted) samples")
        #expect(log.events.last == .stopped)
        return log
    }

    @Test(arguments: [(48000, 2, 1), (44100, 1, 0)])
    func deviceRateAndChannelsBecome16kMonoLikeSox(rate: Int, channels: Int, channel: Int) throws {
        let device = TestALSA.captureDevices[0]
        let input = TestALSA.inputFile(device)
        // Channel 1 (when there are two) is a different tone than channel 0, so the pick is checked too.
        let synth = channels == 2 ? ["sine", "440", "sine", "1000"] : ["sine", "440"]
        try runSox(["-n", "-r", String(rate), "-c", String(channels), "-b", "16", "-e", "signed", "-t", "raw", input,
                    "synth", "1.5"] + synth + ["vol", "0.5"])
        let reference = input + ".ref.raw"
        defer { try? FileManager.default.removeItem(atPath: reference) }
        try runSox(["-r", String(rate), "-c", String(channels), "-b", "16", "-e", "signed", "-t", "raw", input,
                    "-r", "16000", "-c", "1", "-t", "raw", reference, "remix", String(channel + 1)])
        let log = try capture(device: device, rate: rate, channels: channels, channel: channel, seconds: 1.2)
        #expect(log.events.first == .opened(device: device, rate: rate, channels: channels))
        #expect(log.frameSizes == [320])
        let expected = try readRawInt16(reference)
        let (lag, db) = relativeErrorDB(log.samples, expected, maxLag: 400, range: 2000..<16000)
        #expect(db < -30, "error against sox's conversion: \(db) dB at lag \(lag)")
        // A sine at half scale: -9 dBFS in every full frame past the resampler's start-up.
        #expect(log.levels.dropFirst(3).prefix(40).allSatisfy { abs($0 - -9.03) < 0.5 })
    }

    @Test func tenMillisecondFrames() throws {
        let device = TestALSA.captureDevices[1]
        try runSox(["-n", "-r", "16000", "-c", "1", "-b", "16", "-e", "signed", "-t", "raw", TestALSA.inputFile(device), "synth", "0.5", "sine", "300"])
        let log = try capture(device: device, rate: 16000, channels: 1, channel: 0, seconds: 0.3, frameMS: 10)
        #expect(log.frameSizes == [160])
        // 16 kHz in: no resampler, the samples come through unchanged.
        let input = try readRawInt16(TestALSA.inputFile(device))
        #expect(Array(log.samples.prefix(4000)) == Array(input.prefix(4000)))
    }

    @Test func anOverrunIsRecoveredAndCaptureGoesOn() throws {
        let device = TestALSA.captureDevices[2]
        try runSox(["-n", "-r", "16000", "-c", "1", "-b", "16", "-e", "signed", "-t", "raw", TestALSA.inputFile(device), "synth", "1", "sine", "300"])
        let injected = Mutex(false)
        // The real snd_pcm_readi, except that the fifth read reports an overrun as a real device would.
        let reads = Mutex(0)
        let log = try capture(device: device, rate: 16000, channels: 1, channel: 0, seconds: 0.5, reader: { pcm, buffer, frames in
            let n = reads.withLock { $0 += 1; return $0 }
            if n == 5 { injected.withLock { $0 = true }; return -Int(EPIPE) }
            return ALSACapture.readInterleaved(pcm, buffer, frames)
        })
        #expect(injected.withLock { $0 })
        #expect(log.events.contains(.overrun))
        #expect(!log.events.contains { if case .lost = $0 { return true }; return false })
    }

    @Test func aDeviceThatGoesAwayIsReopened() throws {
        let device = TestALSA.captureDevices[3]
        try runSox(["-n", "-r", "16000", "-c", "1", "-b", "16", "-e", "signed", "-t", "raw", TestALSA.inputFile(device), "synth", "1", "sine", "300"])
        let reads = Mutex(0)
        let log = try capture(device: device, rate: 16000, channels: 1, channel: 0, seconds: 0.5, reader: { pcm, buffer, frames in
            let n = reads.withLock { $0 += 1; return $0 }
            if n == 3 { return -Int(ENODEV) }  // unplugged
            return ALSACapture.readInterleaved(pcm, buffer, frames)
        }, retry: .milliseconds(20))
        let events = log.events
        guard let lost = events.firstIndex(where: { if case .lost = $0 { return true }; return false }) else {
            Issue.record("no lost event: \(events)"); return
        }
        if case .lost(let error) = events[lost] { #expect(error.description.contains("ALSA device \"\(device)\": capture failed")) }
        #expect(events[(lost + 1)...].contains(.recovered))
        // One report per change of state, not one per retry.
        #expect(events.filter { if case .lost = $0 { return true }; return false }.count == 1)
    }

    /// A recording played as the microphone (an ALSA `file` PCM) is read at a microphone's pace by default, so
    /// `run` with a WAV for a microphone behaves as with a sound card; a real device (here ALSA's `null`, which
    /// is not a file PCM) is left to pace itself, and both can be overridden.
    @Test func aFilePCMIsPacedLikeAMicrophoneByDefault() throws {
        _ = TestALSA.directory
        let device = TestALSA.captureDevices[3]
        try runSox(["-n", "-r", "16000", "-c", "1", "-b", "16", "-e", "signed", "-t", "raw", TestALSA.inputFile(device), "trim", "0", "0.1"])
        func paced(_ device: String, _ pacing: CapturePacing) throws -> Bool {
            var settings = CaptureSettings(device: device)
            settings.pacing = pacing
            let capture = try ALSACapture(settings: settings, onFrame: { _, _ in })
            defer { capture.close() }
            return capture.isPaced
        }
        #expect(try paced(device, .auto))
        #expect(try !paced(device, .none))
        #expect(try !paced("null", .auto))
        #expect(try paced("null", .realTime))
    }

    @Test func badDevicesAndSettingsAreNamed() {
        _ = TestALSA.directory
        let missing = #expect(throws: AudioDeviceError.self) {
            try ALSACapture(settings: CaptureSettings(device: "no_such_mic"), onFrame: { _, _ in })
        }
        #expect(missing?.description.hasPrefix("ALSA device \"no_such_mic\": cannot open for capture") == true)
        var settings = CaptureSettings(device: TestALSA.captureDevices[4])
        settings.rate = 0
        #expect(throws: AudioDeviceError(device: TestALSA.captureDevices[4], message: "capture rate must be positive, not 0")) {
            try ALSACapture(settings: settings, onFrame: { _, _ in })
        }
        settings.rate = 16000
        settings.channel = 2
        #expect(throws: AudioDeviceError.self) { try ALSACapture(settings: settings, onFrame: { _, _ in }) }
    }
}
