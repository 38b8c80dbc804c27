import BoardCore
import SpeakerCore
import SpeakerRuntime
import SpeakerTestKit
import Testing

/// The spoken enrollment in the loop (`ctl enroll`, LoopEnrollment.swift) on fakes: the prompts said, takes cut
/// from the always-on microphone and checked, the hot phrase and the button while it runs, and its ends.
@Suite struct EnrollmentLoopTests {
    /// A rig listening for the hot phrase, with the household's side faked.
    func rig(_ enrollment: FakeEnrollment = FakeEnrollment()) async -> LoopRig {
        await LoopRig(hotPhrase: true, enrollment: enrollment)
    }

    func progress(_ rig: LoopRig, after mark: Int = 0, _ match: @escaping @Sendable (EnrollmentProgress) -> Bool) async -> Bool {
        await rig.saw(after: mark) { if case .enrollment(let p) = $0 { match(p) } else { false } }
    }

    /// The prompt said to its end, then one take said into the microphone: a moment of quiet, 0.6 s of a voice,
    /// then quiet until the take ends.
    func sayTake(_ rig: LoopRig, take: Int) async {
        let mark = rig.recorder.count
        rig.speech.endSpeech()
        #expect(await progress(rig, after: mark) { $0.step == .listening && $0.take == take })
        rig.microphone.feed(frames: 20, value: 0)
        rig.microphone.speak(frames: 30)
        rig.microphone.feed(frames: 40, value: 0)
    }

    @Test func threeTakesAreCheckedSavedAndAnnounced() async throws {
        let enrollment = FakeEnrollment()
        let rig = await rig(enrollment)
        let started = await rig.loop.enroll(phrase: nil)
        #expect(try started.get().phrase == "OK Hound")
        #expect(await rig.eventually { rig.speech.spoken == ["Say OK Hound"] })
        #expect(rig.board.shown.last == .speaking)
        // The prompt says the phrase, and so may the person: no wake while it runs.
        let mark = rig.recorder.count
        rig.microphone.feed(frames: 1, value: FakeHotPhrase.marker)
        await rig.loop.settled()
        await sayTake(rig, take: 1)
        #expect(await rig.eventually { rig.speech.spoken.last == "Got it, 2 more" })
        #expect(rig.board.shown.contains(.listening))
        await sayTake(rig, take: 2)
        #expect(await rig.eventually { rig.speech.spoken.last == "Got it, 1 more" })
        await sayTake(rig, take: 3)
        #expect(await progress(rig) { $0.step == .done })
        #expect(await rig.eventually { rig.speech.spoken.last == "Done. I know your voice now." })
        #expect(enrollment.saved == ["OK Hound"])
        #expect(enrollment.checked.count == 3)
        // Each take: from just before the voice to just after it (the quiet before it mostly left out).
        for take in enrollment.checked { #expect(take.count >= 30 * 320 && take.count <= (25 + 30 + 40) * 320, "\(take.count)") }
        #expect(!rig.recorder.all[mark...].contains(.hotPhrase))
        #expect(rig.loop.currentState == .ready)
        #expect(rig.board.shown.last == .ready)
        #expect(rig.loop.snapshot.enrollment?.step == .done)
        // Not listening for the hot phrase while its last words are said; then again, from a fresh start.
        let resets = rig.hotPhrase?.resets ?? 0
        rig.microphone.feed(frames: 1, value: FakeHotPhrase.marker)
        await rig.loop.settled()
        #expect(!rig.recorder.all[mark...].contains(.hotPhrase))
        rig.speech.endSpeech()
        #expect(await rig.eventually { (rig.hotPhrase?.resets ?? 0) > resets })
        rig.microphone.feed(frames: 1, value: FakeHotPhrase.marker)
        #expect(await rig.saw(.hotPhrase))
        await rig.stop()
    }

    @Test func aRefusedTakeIsSaidAndAskedAgain() async throws {
        let enrollment = FakeEnrollment()
        enrollment.refuseNext(TakeRefusal(.tooQuiet, detail: "it is too quiet (loudest -52 dBFS, needs -40)"))
        let rig = await rig(enrollment)
        _ = try await rig.loop.enroll(phrase: "hey kitchen").get()
        #expect(await rig.eventually { rig.speech.spoken == ["Say hey kitchen"] })
        await sayTake(rig, take: 1)
        #expect(await rig.eventually { rig.speech.spoken.last == "That was too quiet, say it again" })
        #expect(rig.loop.snapshot.enrollment?.lastRefusal?.kind == .tooQuiet)
        await sayTake(rig, take: 1)
        #expect(await rig.eventually { rig.speech.spoken.last == "Got it, 2 more" })
        await rig.stop()
    }

    @Test func aPressStopsItKeepingNothingAndAsksNoQuestion() async throws {
        let enrollment = FakeEnrollment()
        let rig = await rig(enrollment)
        _ = try await rig.loop.enroll(phrase: nil).get()
        let mark = rig.recorder.count
        rig.speech.endSpeech()
        #expect(await progress(rig, after: mark) { $0.step == .listening })
        rig.board.press(.press)
        #expect(await progress(rig) { $0.step == .aborted && $0.reason == "stopped by the button" })
        rig.board.press(.tapEnded)
        await rig.loop.settled()
        #expect(enrollment.discards == 1)
        #expect(enrollment.saved.isEmpty)
        #expect(rig.search.sessions.isEmpty, "the press that stopped it asked no question")
        #expect(rig.loop.currentState == .ready)
        // The next press is a question again.
        #expect(await rig.askQuestion() != nil)
        await rig.stop()
    }

    @Test func aTimerGoingOffEndsItAndRings() async throws {
        let rig = await rig()
        _ = try await rig.loop.enroll(phrase: nil).get()
        rig.loop.send(.timerDue)
        #expect(await progress(rig) { $0.step == .aborted })
        #expect(await rig.eventually { rig.loop.currentState == .ringing })
        await rig.stop()
    }

    @Test func muteEndsIt() async throws {
        let rig = await rig()
        _ = try await rig.loop.enroll(phrase: nil).get()
        rig.speech.endSpeech()
        #expect(await progress(rig) { $0.step == .listening })
        rig.loop.send(.setMuted(true))
        #expect(await progress(rig) { $0.step == .aborted && $0.reason?.contains("muted") == true })
        await rig.stop()
    }

    /// The button's set-up hold (`TalkIntent.teachVoice`) starts the enrollment of the hot phrase; where it
    /// cannot start, the speaker says so (there is no screen to read) and stays ready.
    @Test func theSetupHoldStartsItOrSaysWhyNot() async throws {
        let speaker = await rig()
        let mark = speaker.recorder.count
        speaker.board.press(.teachVoice)
        #expect(await progress(speaker, after: mark) { $0.phrase == "OK Hound" && $0.take == 1 })
        #expect(await speaker.eventually { speaker.speech.spoken == ["Say OK Hound"] })
        await speaker.stop()

        let format1 = await rig(FakeEnrollment(unavailable: "this speaker cannot learn voices: the model is format 1"))
        format1.board.press(.teachVoice)
        #expect(await format1.eventually { format1.speech.spoken == [SpeakerLoop.cannotTeach] })
        #expect(format1.loop.currentState == .ready && format1.loop.snapshot.enrollment == nil)
        await format1.stop()
    }

    @Test func itIsRefusedWhenTheSpeakerCannotRunIt() async throws {
        let busy = await rig()
        _ = try #require(await busy.askQuestion())
        #expect(await busy.loop.enroll(phrase: nil) == .failure(DeviceProblem("the speaker is busy (recording): enroll when it is ready")))
        await busy.stop()

        let twice = await rig()
        _ = try await twice.loop.enroll(phrase: nil).get()
        #expect(await twice.loop.enroll(phrase: nil) == .failure(DeviceProblem("an enrollment is under way already (ctl stop ends it)")))
        await twice.stop()

        let muted = await rig()
        #expect(await muted.send(.setMuted(true), expecting: .muted))
        #expect(await muted.loop.enroll(phrase: nil) == .failure(DeviceProblem("the microphone is muted: unmute it to enroll")))
        await muted.stop()

        let format1 = await rig(FakeEnrollment(unavailable: "this speaker cannot learn voices: the model is format 1"))
        #expect(await format1.loop.enroll(phrase: nil) == .failure(DeviceProblem("this speaker cannot learn voices: the model is format 1")))
        await format1.stop()

        let noHotPhrase = await LoopRig()
        #expect(await noHotPhrase.loop.enroll(phrase: nil)
            == .failure(DeviceProblem("this speaker cannot learn voices: it does not listen for the hot phrase ([hotphrase] enabled = false)")))
        await noHotPhrase.stop()
    }
}
