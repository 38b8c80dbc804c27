import BoardCore
import Control
import ControlCore
import FoundationEssentials
import JSONKit
import Logging
@testable import Assembly
import SpeakerCore
import SpeakerRuntime
import SpeakerTestKit
import Testing
import Timers

/// Issue #34: on a full disk or an unwritable state directory the person heard "Your soup timer is set for 10
/// minutes", and after a restart it was gone. Now the confirmation says it could not be saved, the timer rings in
/// this run all the same, the status says the timers are not saved and why, and the save is tried again.
@Suite struct TimersNotSavedTests {
    static let full = DeviceProblem("timers: cannot write /var/lib/hound-speaker/timers.json: No space left on device")

    /// Asks for it, and waits until the answer has been said (ask, in TimerLoopTests).
    func setSoup(_ rig: LoopRig) async {
        await ask(rig, SpeakerAnswer(transcript: "set a soup timer for 10 minutes", text: "", action: .timer(.set(seconds: 600, name: "soup")),
                                     responses: ActionResponses(succeeded: "Your soup timer is set for 10 minutes.")))
    }

    func cancelSoup(_ rig: LoopRig) async {
        await ask(rig, SpeakerAnswer(transcript: "cancel the soup timer", text: "", action: .timer(.cancel(.named("soup"))),
                                     responses: ActionResponses(succeeded: "Your soup timer is cancelled.")))
    }

    @Test func aTimerThatCouldNotBeSavedIsSaidSoRingsAndIsSavedOnceItCan() async {
        let store = FakeTimerStore()
        store.failSaves(Self.full)
        let hub = ControlHub()
        let rig = await LoopRig(timerStore: store, observers: [{ hub.publish($0) }])
        hub.attach(rig.loop)
        await setSoup(rig)
        #expect(rig.speech.spoken.last == "Your soup timer is set for 10 minutes. " + SpeakerLoop.setButNotSaved)
        #expect(await rig.saw(.deviceProblem(DeviceProblem("\(Self.full.message); a restart would lose the timers' last change"))))
        #expect(await rig.saw(.timersSaved(problem: Self.full.message)))  // for a screen to show
        let status = await hub.perform(.status, waitForAnswer: false)
        #expect(status["timers_saved"] == false)
        #expect(status["timers_save_problem"] == .string(Self.full.message))
        #expect(status["timers"]?[0]?["name"] == "soup")

        // It rings in this run all the same (the retries, once a minute meanwhile, keep failing).
        var mark = rig.recorder.count
        await rig.advance(by: .seconds(600))
        #expect(await rig.saw(.stateChanged(from: .ready, to: .ringing), after: mark))
        #expect(await rig.send(.press, expecting: .ready))
        #expect(store.book == nil)  // never saved
        #expect(rig.loop.snapshot.timersSaveProblem == Self.full.message)

        // A timer set now is saved once the disk has room again, by the next minute's try.
        await setSoup(rig)
        store.failSaves(nil)
        mark = rig.recorder.count
        await rig.advance(by: .seconds(60))
        #expect(await rig.saw(.timersSaved(problem: nil), after: mark))
        #expect(rig.loop.snapshot.timersSaveProblem == nil)
        #expect(store.book?.timers.map(\.name) == ["soup"])
        #expect(await hub.perform(.status, waitForAnswer: false)["timers_saved"] == true)

        // Saved, a change is confirmed in Houndify's words alone.
        await cancelSoup(rig)
        #expect(rig.speech.spoken.last == "Your soup timer is cancelled.")
        #expect(store.book?.timers.isEmpty == true)
        await rig.stop()
    }

    /// A cancel that could not be saved would come back after a restart: that is said too.
    @Test func aCancelThatCouldNotBeSavedIsSaidSo() async {
        let store = FakeTimerStore()
        let rig = await LoopRig(timerStore: store)
        await setSoup(rig)
        #expect(rig.speech.spoken.last == "Your soup timer is set for 10 minutes.")
        store.failSaves(Self.full)
        await cancelSoup(rig)
        #expect(rig.speech.spoken.last == "Your soup timer is cancelled. " + SpeakerLoop.changedButNotSaved)
        await rig.stop()
    }

    /// The real timers file where its directory cannot be written (a file where the state directory should be:
    /// the tests run as root, which may write any directory): the loop's status names the problem.
    @Test func anUnwritableStateDirectoryIsInTheStatus() async throws {
        let files = StateFileTests()
        let dir = files.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        files.write("not a directory", to: dir + "/state")
        let file = TimerFile(path: dir + "/state/timers.json")
        #expect(throws: DeviceProblem.self) { try file.save(TimerBook(), at: files.clocks) }

        let clock = ManualClock()
        let recorder = ActivityRecorder()
        let ports = SpeakerPorts(search: FakeVoiceSearch(clock: clock), speech: FakeSpeech(), volume: FakeVolume(),
                                 microphone: FakeMicrophone(), board: FakeBoard(), hotPhrase: nil, clock: clock,
                                 system: FakeSystem(), timerStore: file)
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        let loop = SpeakerLoop(ports: ports, logger: logger, observers: [recorder.observer])
        let task = Task { await loop.run() }
        #expect(await recorder.wait(for: .leds(.ready)))
        loop.send(.carryOut(.timer(.set(seconds: 300, name: "tea"))))
        #expect(await recorder.wait { if case .timer(.set, let timer, _) = $0 { timer.name == "tea" } else { false } })
        let problem = try #require(loop.snapshot.timersSaveProblem)
        #expect(problem.contains(dir + "/state"), "\(problem)")
        #expect(loop.snapshot.timers.map(\.name) == ["tea"])  // kept in this run
        loop.send(.shutdown)
        await task.value
    }
}
