import AudioCore
import BoardCore
import SpeakerCore
import SpeakerRuntime
import SpeakerTestKit
import Testing
import Timers

/// The kiosk screen dims after a quiet while and comes back when something happens (never off), through the loop:
/// the timers and the backlight port. The dimming's rules alone are state tests in SpeakerStepTests.
@Suite struct ScreenLoopTests {
    /// `dimAfter` in seconds; 0: never.
    func settings(dimAfter: Double = 120) -> SpeakerLoopSettings {
        var settings = SpeakerLoopSettings()
        settings.screen.dimAfter = dimAfter
        settings.screen.dimLevel = 10
        return settings
    }

    static let dimmed = SpeakerActivity.screen(.init(dimmed: true, percent: 10, backlight: false))
    static let bright = SpeakerActivity.screen(.init(dimmed: false, percent: 100, backlight: false))

    func screenChanges(_ rig: LoopRig) -> [SpeakerActivity] {
        rig.recorder.all.filter { if case .screen = $0 { true } else { false } }
    }

    @Test func dimsAfterTheQuietTimeAndBrightensForAQuestion() async throws {
        var settings = settings()
        settings.machine.recordingLimitMS = 600_000
        settings.machine.speakingLimitMS = 600_000
        let rig = await LoopRig(settings: settings)
        await rig.advance(by: .seconds(119))
        #expect(await rig.eventually { rig.loop.snapshot.state == .ready })
        #expect(screenChanges(rig).isEmpty, "not yet: two minutes have not passed")
        await rig.advance(by: .seconds(1))
        #expect(await rig.saw(Self.dimmed))
        #expect(rig.loop.snapshot.screen == .init(dimmed: true, percent: 10, backlight: false))
        // A question: full brightness as it starts, and no dimming however long it lasts.
        let mark = rig.recorder.count
        let search = try #require(await rig.askQuestion())
        #expect(await rig.saw(Self.bright, after: mark))
        await rig.advance(by: .seconds(300))
        search.send(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        #expect(await rig.eventually { rig.speech.spoken == ["It is noon."] })
        await rig.advance(by: .seconds(300))
        #expect(screenChanges(rig) == [Self.dimmed, Self.bright], "not dimmed while busy")
        // Ready again: the quiet time starts over from there.
        await rig.endSpeech()
        await rig.advance(by: .seconds(119))
        #expect(screenChanges(rig) == [Self.dimmed, Self.bright])
        await rig.advance(by: .seconds(1))
        #expect(await rig.eventually { screenChanges(rig) == [Self.dimmed, Self.bright, Self.dimmed] })
        await rig.stop()
    }

    @Test func aTouchBrightensItAndStartsTheQuietTimeAgain() async throws {
        let rig = await LoopRig(settings: settings())
        await rig.advance(by: .seconds(120))
        #expect(await rig.saw(Self.dimmed))
        let mark = rig.recorder.count
        rig.loop.wakeScreen()
        #expect(await rig.saw(Self.bright, after: mark))
        #expect(rig.loop.snapshot.screen.dimmed == false)
        await rig.advance(by: .seconds(60))
        rig.loop.wakeScreen()  // a touch while bright: only the countdown starts again
        await rig.loop.settled()
        await rig.advance(by: .seconds(119))
        #expect(screenChanges(rig) == [Self.dimmed, Self.bright])
        await rig.advance(by: .seconds(1))
        #expect(await rig.eventually { screenChanges(rig).count == 3 })
        await rig.stop()
    }

    /// A timer going off is something to look at: the ringing screen is bright until it is stopped.
    @Test func aRingingTimerBrightensIt() async throws {
        let rig = await LoopRig(settings: settings())
        rig.loop.send(.carryOut(.timer(.set(seconds: 600, name: "tea"))))
        #expect(await rig.eventually { rig.loop.snapshot.timers.count == 1 })
        await rig.advance(by: .seconds(300))
        #expect(await rig.saw(Self.dimmed))
        let mark = rig.recorder.count
        await rig.advance(by: .seconds(300))
        #expect(await rig.saw(Self.bright, after: mark))
        #expect(rig.loop.currentState == .ringing)
        await rig.stop()
    }

    @Test func theBacklightIsSetWhenThereIsOne() async throws {
        let light = FakeScreenLight()
        let rig = await LoopRig(settings: settings(), screen: light)
        await rig.advance(by: .seconds(120))
        #expect(await rig.saw(.screen(.init(dimmed: true, percent: 10, backlight: true))))
        rig.loop.wakeScreen()
        #expect(await rig.saw(.screen(.init(dimmed: false, percent: 100, backlight: true))))
        #expect(light.levels == [10, 100])
        await rig.stop()
    }

    /// A backlight the service may not write is said once; then the page dims its picture instead.
    @Test func aBacklightThatFailsIsToldOnceAndThePageDimsInstead() async throws {
        let light = FakeScreenLight(failing: true)
        let rig = await LoopRig(settings: settings(), screen: light)
        await rig.advance(by: .seconds(120))
        #expect(await rig.saw(Self.dimmed))
        let problems = rig.recorder.all.filter { if case .deviceProblem(let p) = $0 { p.message.contains("Permission denied") } else { false } }
        #expect(problems.count == 1)
        rig.loop.wakeScreen()
        #expect(await rig.saw(Self.bright))
        #expect(light.levels == [10], "not tried again")
        #expect(rig.loop.snapshot.screen.backlight == false)
        await rig.stop()
    }
}
