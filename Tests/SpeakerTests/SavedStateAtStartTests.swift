import BoardCore
import Control
import ControlCore
import JSONKit
import Logging
import SpeakerCore
import SpeakerRuntime
import SpeakerTestKit
import Testing
import Timers

/// Issue #34: right after a restart `ctl timers` listed no timers: the control API answered before the timers
/// file was read. The saved timers and mute are read when the loop is made, before the API can be started.
@Suite struct SavedStateAtStartTests {
    @Test func theSavedTimersAndMuteAreThereBeforeTheLoopRuns() async {
        let clock = ManualClock()
        var book = TimerBook()
        _ = book.apply(.set(seconds: 600, name: "soup"), now: clock.bootTime)
        let mute = FakeFlagStore()
        try? mute.save(true)
        let microphone = FakeMicrophone()
        let recorder = ActivityRecorder()
        let ports = SpeakerPorts(search: FakeVoiceSearch(clock: clock), speech: FakeSpeech(), volume: FakeVolume(),
                                 microphone: microphone, board: FakeBoard(), hotPhrase: FakeHotPhrase(), clock: clock,
                                 system: FakeSystem(), timerStore: FakeTimerStore(book), muteStore: mute)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let loop = SpeakerLoop(ports: ports, logger: logger, observers: [recorder.observer])
        // Made, not yet run: what the control API (and the screen through it) would answer now.
        let hub = ControlHub()
        hub.attach(loop)
        let status = await hub.perform(.status, waitForAnswer: false)
        #expect(status["timers"]?[0]?["name"] == "soup")
        #expect(status["timers"]?[0]?["remaining_s"] == 600)
        #expect(status["muted"] == true)
        #expect(loop.snapshot.timers.map(\.name) == ["soup"] && loop.snapshot.muted)
        // Then it runs: muted from the start (the microphone never opened), the timer counting down and told.
        let task = Task { await loop.run() }
        #expect(await recorder.wait(for: .leds(.muted)))
        #expect(await recorder.wait { if case .timer(.tick, let timer, 600) = $0 { timer.name == "soup" } else { false } })
        #expect(await recorder.wait(for: .muted(true)))
        #expect(microphone.opens == 0)
        #expect(!recorder.all.contains(.leds(.ready)))
        loop.send(.shutdown)
        await task.value
    }
}
