import Dispatch
import BoardCore
import Synchronization
import Testing
@testable import SpeakerCore
@testable import SpeakerRuntime
import SpeakerTestKit

/// The watchdog's heartbeat (systemd WATCHDOG=1) must prove the loop itself turns, not just that a timer fires.
/// Time is the manual clock's: every beat and every interval is the test's to count.
@Suite struct HeartbeatTests {
    final class BeatLog: Sendable {
        let entries = Mutex<[String]>([])
        var beats: Int { entries.withLock { $0.filter { $0 == "beat" }.count } }
        func add(_ entry: String) { entries.withLock { $0.append(entry) } }
    }

    func rig(interval: Duration?, log: BeatLog) async -> LoopRig {
        var settings = SpeakerLoopSettings()
        settings.heartbeat = LoopHeartbeat(interval: interval) { log.add("beat") }
        return await LoopRig(settings: settings)
    }

    func eventually(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<2000 where !condition() { try? await Task.sleep(for: .milliseconds(1)) }
        return condition()
    }

    @Test func theFirstBeatFollowsReadyAndEachIntervalBringsOne() async {
        let log = BeatLog()
        let rig = await rig(interval: .seconds(10), log: log)
        #expect(await eventually { log.beats == 1 })  // READY=1 is sent on it: after `started` was handled
        for n in 2...5 {
            rig.clock.advance(by: .seconds(10))
            #expect(await eventually { log.beats == n })
        }
        rig.clock.advance(by: .seconds(9))
        try? await Task.sleep(for: .milliseconds(20))
        #expect(log.beats == 5)  // not yet due
        await rig.stop()
        #expect(rig.clock.armedTimers == 0)  // no beat after the loop ended
        #expect(rig.loop.statesEntered == [.ready, .none])  // the heartbeat changed nothing
    }

    @Test func noBeatGetsOutOfAStuckLoopAndAtMostOneWaits() async {
        let log = BeatLog()
        let release = DispatchSemaphore(value: 0)
        let blocked = Mutex(false)
        var settings = SpeakerLoopSettings()
        settings.heartbeat = LoopHeartbeat(interval: .seconds(10)) { log.add("beat") }
        // The loop gets stuck in the middle of its work, as a hung device call would leave it.
        let rig = await LoopRig(settings: settings, observers: [{ activity in
            if activity == .button(.talk) {
                blocked.withLock { $0 = true }
                release.wait()
            }
        }])
        #expect(await eventually { log.beats == 1 })
        rig.loop.send(.talk)
        #expect(await eventually { blocked.withLock { $0 } })
        for _ in 0..<6 { rig.clock.advance(by: .seconds(10)) }  // a minute passes
        try? await Task.sleep(for: .milliseconds(20))
        #expect(log.beats == 1, "no beat may get out of a stuck loop")
        release.signal()
        #expect(await eventually { log.beats == 2 })  // one beat was waiting, not six
        #expect(await rig.saw(.leds(.listening)))
        try? await Task.sleep(for: .milliseconds(20))
        #expect(log.beats == 2)
        rig.clock.advance(by: .seconds(10))
        #expect(await eventually { log.beats == 3 })
        await rig.stop()
    }

    @Test func withoutAnIntervalThereIsOneBeat() async {
        let log = BeatLog()
        let rig = await rig(interval: nil, log: log)
        #expect(await eventually { log.beats == 1 })
        rig.clock.advance(by: .seconds(3600))
        try? await Task.sleep(for: .milliseconds(20))
        #expect(log.beats == 1)
        await rig.stop()
    }
}
