import Dispatch
import Foundation
import Logging
import Synchronization
import Testing
@testable import Audio
@testable import Houndify
@testable import Speaker
@testable import SpeakerRuntime
@testable import Speech

/// The watchdog's heartbeat (systemd WATCHDOG=1) must prove the loop itself turns, not just that a timer fires.
@Suite(.serialized) struct HeartbeatTests {
    /// Waits until `condition` holds, polling, at most `seconds`.
    func eventually(seconds: Double = 5, _ condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return condition()
    }

    func parts() throws -> SpeakerParts {
        let profile = ClientProfile(clientID: "AAECAwQFBgcICQoLDA0ODw==", userID: "test", deviceID: "heartbeat", timeZone: "UTC")
        let client = try HoundifyClient(configuration: HoundifyClientConfiguration(
            endpoint: "http://127.0.0.1:9", clientKey: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0-Pw==",
            profile: profile))
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return SpeakerParts(client: client, speech: try SpeechEngine(settings: VoiceSettings()), output: .memory, earcons: [:],
                            volume: try OutputVolume(percent: 100, device: "null", mixerControl: ""),
                            capture: CaptureSettings(device: "null"), logger: logger)
    }

    @Test func beatsComeOutOfTheLoopAndStopWhileItIsStuck() async throws {
        let log = Mutex<[String]>([])
        let beatsWhileStuck = Mutex<Int?>(nil)
        var parts = try parts()
        parts.heartbeat = LoopHeartbeat(interval: .milliseconds(20)) { log.withLock { $0.append("beat") } }
        parts.eventSink = { line in
            log.withLock { $0.append(line) }
            // The loop gets stuck in an effect, as a hung device call would leave it: fifteen intervals pass with
            // the timer firing. Counted here, on the stuck loop itself, so the count cannot depend on when the
            // test's own task gets a thread.
            if line.contains("\"to\":\"ready\"") {
                Thread.sleep(forTimeInterval: 0.3)
                beatsWhileStuck.withLock { $0 = log.withLock { $0.filter { $0 == "beat" }.count } }
            }
        }
        let loop = SpeakerLoop(parts: parts)
        let task = Task.detached { await loop.run() }
        #expect(await eventually(seconds: 20) { beatsWhileStuck.withLock { $0 } != nil })
        #expect(beatsWhileStuck.withLock { $0 } == 0, "no beat may get out of a stuck loop")
        #expect(await eventually { log.withLock { $0.filter { $0 == "beat" }.count } >= 3 })
        // The first beat (what READY=1 is sent on) follows the loop's handling of `started`.
        let entries = log.withLock { $0 }
        #expect(entries.firstIndex(of: "beat")! > entries.firstIndex { $0.contains("\"to\":\"ready\"") }!)
        loop.send(.shutdown)
        await task.value
        let after = log.withLock { $0.filter { $0 == "beat" }.count }
        try await Task.sleep(for: .milliseconds(100))
        #expect(log.withLock { $0.filter { $0 == "beat" }.count } == after, "beats after the loop ended")
        #expect(loop.statesEntered == [.ready, .none])  // the heartbeat changed nothing
    }

    @Test func atMostOneHeartbeatWaitsInTheQueue() async throws {
        let posted = Atomic<Int>(0)
        let timer = HeartbeatTimer(interval: .milliseconds(5)) { posted.add(1, ordering: .relaxed) }
        defer { timer.cancel() }
        #expect(await eventually { posted.load(ordering: .relaxed) == 1 })
        try await Task.sleep(for: .milliseconds(100))  // twenty intervals, none taken out: still one
        #expect(posted.load(ordering: .relaxed) == 1)
        timer.taken()
        #expect(await eventually { posted.load(ordering: .relaxed) == 2 })
    }

    @Test func withoutAnIntervalThereIsOneBeat() async throws {
        let posted = Atomic<Int>(0)
        let timer = HeartbeatTimer(interval: nil) { posted.add(1, ordering: .relaxed) }
        defer { timer.cancel() }
        #expect(await eventually { posted.load(ordering: .relaxed) == 1 })
        timer.taken()
        try await Task.sleep(for: .milliseconds(100))
        #expect(posted.load(ordering: .relaxed) == 1)
    }
}
