import AudioCore
import BoardCore
import SpeakerCore
import SpeakerRuntime
import SpeakerTestKit
import Testing
import Timers

/// A typed question (the control API's `text`) cuts no one off, and each one's reports carry its own number
/// (issue #35, "An honest API"); what the speaker does itself is told as its `final`.
@Suite struct TypedQuestionLoopTests {
    typealias Report = SpeakerActivity.QuestionReport

    /// The report of question `id` that ends it, once told.
    static func end(of id: Int, in rig: LoopRig, after mark: Int = 0) async -> Report? {
        let match: @Sendable (SpeakerActivity) -> Bool = { if case .question(let r) = $0, r.id == id, r.isEnd { true } else { false } }
        guard await rig.recorder.wait(after: mark, for: match) else { return nil }
        return rig.recorder.all.compactMap { if case .question(let r) = $0, r.id == id, r.isEnd { r } else { nil } }.first
    }

    static func isRefusal(_ report: Report?) -> Bool { if case .refused? = report?.status { true } else { false } }

    @Test func aTypedQuestionWhileSomeoneAsksByVoiceIsRefusedAndTheirsGoesOn() async throws {
        let rig = await LoopRig()
        let spoken = try #require(await rig.askQuestion())
        rig.loop.send(.textQuery("what time is it", id: 7))
        let report = await Self.end(of: 7, in: rig)
        #expect(Self.isRefusal(report), "\(String(describing: report))")
        #expect(!spoken.isCancelled && rig.loop.currentState == .recording, "the person's question goes on")
        #expect(rig.search.sessions.count == 1, "no text search was started")
        spoken.send(.answer(SpeakerAnswer(transcript: "what day is it", text: "It is Thursday.")))
        #expect(await rig.eventually { rig.speech.spoken == ["It is Thursday."] })
        await rig.stop()
    }

    /// A speaker whose one-minute timer "tea" is ringing, and the recorder's count from before it rang.
    static func ringing() async -> (LoopRig, Int) {
        let rig = await LoopRig()
        rig.loop.send(.carryOut(.timer(.set(seconds: 60, name: "tea"))))
        #expect(await rig.eventually { rig.loop.snapshot.timers.count == 1 })
        let mark = rig.recorder.count
        await rig.advance(by: .seconds(60))
        #expect(await rig.saw(.leds(.ringing), after: mark))
        return (rig, mark)
    }

    @Test func aTypedQuestionWhileATimerRingsIsRefusedAndTheRingGoesOn() async throws {
        let (rig, mark) = await Self.ringing()
        rig.loop.send(.textQuery("what time is it", id: 3))
        let report = await Self.end(of: 3, in: rig, after: mark)
        guard case .refused(let reason)? = report?.status else { Issue.record("not refused: \(String(describing: report))"); return }
        #expect(reason.contains("ringing"))
        #expect(rig.loop.currentState == .ringing)
        #expect(rig.search.sessions.isEmpty)
        await rig.stop()
    }

    @Test func anAnnouncementWhileATimerRingsWaitsForTheRingToStop() async throws {
        let (rig, _) = await Self.ringing()
        rig.loop.send(.announce("Dinner is ready."))
        // The loop takes events in order: once this one is carried out, the announcement has been handled too.
        rig.loop.send(.clearConversation)
        #expect(await rig.eventually { rig.search.conversationsCleared == 1 })
        #expect(rig.speech.spoken.isEmpty && rig.loop.currentState == .ringing, "the ring is not cut off")
        rig.loop.send(.cancel)
        #expect(await rig.eventually { rig.speech.spoken == ["Dinner is ready."] })
        await rig.stop()
    }

    @Test func twoOverlappingTypedQuestionsEachGetTheirOwnReply() async throws {
        let rig = await LoopRig()
        rig.loop.send(.textQuery("what time is it", id: 1))
        #expect(await rig.eventually { rig.search.latest?.query == "what time is it" })
        let first = try #require(rig.search.latest)
        rig.loop.send(.textQuery("what day is it", id: 2))
        #expect(Self.isRefusal(await Self.end(of: 2, in: rig)), "the second waits for nobody's answer but its own")
        #expect(!first.isCancelled)
        first.send(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        let answered = await Self.end(of: 1, in: rig)
        #expect(answered?.status == .answered(transcript: "what time is it", answer: "It is noon.", done: ""))
        #expect(rig.search.sessions.count == 1)
        await rig.stop()
    }

    @Test func aTypedQuestionStoppedBeforeItsAnswerIsReportedDropped() async throws {
        let rig = await LoopRig()
        rig.loop.send(.textQuery("what time is it", id: 5))
        #expect(await rig.eventually { rig.search.latest?.query == "what time is it" })
        rig.loop.send(.cancel)
        let report = await Self.end(of: 5, in: rig)
        guard case .dropped(let reason)? = report?.status else { Issue.record("not dropped: \(String(describing: report))"); return }
        #expect(reason.contains("stopped"))
        await rig.stop()
    }

    @Test func aFailedTypedQuestionIsReportedWithWhatWasSaid() async throws {
        let rig = await LoopRig()
        rig.search.refuseNextStart(SearchError(.offline, detail: "could not resolve host"))
        rig.loop.send(.textQuery("what time is it", id: 9))
        let report = await Self.end(of: 9, in: rig)
        guard case .failed(let error)? = report?.status else { Issue.record("not failed: \(String(describing: report))"); return }
        #expect(error.failure == .offline)
        await rig.stop()
    }

    @Test func aMicrophoneReopenedAfterAnAnswerGivesWayToATypedQuestion() async throws {
        let rig = await LoopRig()
        rig.loop.send(.textQuery("set a timer", id: 1))
        #expect(await rig.eventually { rig.search.latest?.query == "set a timer" })
        rig.search.latest?.send(.answer(SpeakerAnswer(transcript: "set a timer", text: "For how long?", autoListen: true)))
        #expect(await rig.eventually { rig.speech.spoken == ["For how long?"] })
        await rig.endSpeech()
        #expect(rig.loop.currentState == .recording)
        rig.loop.send(.textQuery("ten minutes", id: 2))
        #expect(await rig.eventually { rig.search.latest?.query == "ten minutes" })
        rig.search.latest?.send(.answer(SpeakerAnswer(transcript: "ten minutes", text: "Your timer is set.")))
        #expect(await Self.end(of: 2, in: rig)?.status == .answered(transcript: "ten minutes", answer: "Your timer is set.", done: ""))
        await rig.stop()
    }

    // MARK: What the speaker does itself is its final

    @Test func anOwnersPhraseIsAFinalWithWhatWasDone() async throws {
        let rig = await LoopRig()
        rig.loop.send(.textQuery("good night", id: 4))
        #expect(await rig.eventually { rig.search.latest?.query == "good night" })
        rig.search.latest?.send(.answer(SpeakerAnswer(transcript: "good night", text: "Good night.", action: .run(command: "lights off"))))
        #expect(await rig.saw(.finalTranscript(transcript: "good night", answer: "Good night.", done: "ran \"lights off\"")))
        #expect(await Self.end(of: 4, in: rig)?.status == .answered(transcript: "good night", answer: "Good night.", done: "ran \"lights off\""))
        await rig.stop()
    }

    @Test func anOwnersMutePhraseIsAFinal() async throws {
        let rig = await LoopRig()
        let search = try #require(await rig.askQuestion())
        search.send(.answer(SpeakerAnswer(transcript: "privacy please", text: "Microphone off.", action: .muteMicrophone)))
        #expect(await rig.saw(.finalTranscript(transcript: "privacy please", answer: "Microphone off.", done: "muted the microphone")))
        await rig.stop()
    }

    @Test func localCommandsAreFinalsWithTheSpeakersOwnWords() async throws {
        let rig = await LoopRig()
        // Houndify's text for these is not what the speaker says: it carries them out itself.
        rig.loop.send(.textQuery("volume up", id: 1))
        #expect(await rig.eventually { rig.search.latest?.query == "volume up" })
        rig.search.latest?.send(.answer(SpeakerAnswer(transcript: "volume up", text: "Didn't get that!")))
        #expect(await Self.end(of: 1, in: rig)?.status == .answered(transcript: "volume up", answer: "Volume 60.", done: "turned the volume up"))
        #expect(await rig.saw(.finalTranscript(transcript: "volume up", answer: "Volume 60.", done: "turned the volume up")))
        await rig.endSpeech()

        rig.loop.send(.textQuery("what's your ip address", id: 2))
        #expect(await rig.eventually { rig.search.latest?.query == "what's your ip address" })
        rig.search.latest?.send(.answer(SpeakerAnswer(transcript: "what's your ip address", text: "Didn't get that!")))
        let ip = "My IP address is 192 dot 168 dot 1 dot 23."
        #expect(await Self.end(of: 2, in: rig)?.status == .answered(transcript: "what's your ip address", answer: ip, done: ""))
        await rig.endSpeech()

        rig.loop.send(.textQuery("stop", id: 3))
        #expect(await rig.eventually { rig.search.latest?.query == "stop" })
        rig.search.latest?.send(.answer(SpeakerAnswer(transcript: "stop", text: "Didn't get that!")))
        #expect(await Self.end(of: 3, in: rig)?.status == .answered(transcript: "stop", answer: "", done: "stopped"))
        #expect(!rig.recorder.all.contains { if case .finalTranscript(_, "Didn't get that!", _, _, _) = $0 { true } else { false } })
        await rig.stop()
    }

    // MARK: A long press while recording

    @Test func aLongPressThatEndsTheRecordingNeverSendsTheQuestion() async throws {
        let rig = await LoopRig()
        let search = try #require(await rig.askQuestion())
        #expect(await rig.send(.press, expecting: .searching))
        #expect(!search.isFinished, "the press may yet be long: the question is not sent whole")
        #expect(await rig.send(.cancel, expecting: .ready))
        #expect(search.isCancelled && !search.isFinished, "the upload was aborted, not finished")
        // Whatever comes of it is not said.
        search.send(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        #expect(await rig.send(.timersRunning(false), expecting: .ready))
        #expect(rig.speech.spoken.isEmpty)
        await rig.stop()
    }

    @Test func aTapThatEndsTheRecordingSendsTheQuestionWhenTheButtonComesUp() async throws {
        let rig = await LoopRig()
        let search = try #require(await rig.askQuestion())
        #expect(await rig.send(.press, expecting: .searching))
        let mark = rig.recorder.count
        rig.loop.send(.tapEnded)
        #expect(await rig.recorder.wait(after: mark) { $0 == .button(.release) })
        #expect(await rig.eventually { search.isFinished })
        #expect(!search.isCancelled)
        search.send(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        #expect(await rig.eventually { rig.speech.spoken == ["It is noon."] })
        await rig.stop()
    }
}
