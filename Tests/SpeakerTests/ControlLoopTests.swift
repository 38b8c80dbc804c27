import AudioCore
import BoardCore
import JSONKit
import SpeakerCore
import SpeakerRuntime
import SpeakerTestKit
import Synchronization
import Testing
import Timers

/// What the control API asks of the speaker, through the loop on fakes (docs/control-api.md).
@Suite struct ControlLoopTests {
    @Test func aTypedQuestionIsSearchedAndSpokenInTheSameConversation() async throws {
        let rig = await LoopRig()
        #expect(await rig.send(.textQuery("what time is it"), expecting: .searching))
        #expect(await rig.eventually { rig.search.latest?.query == "what time is it" })
        let search = try #require(rig.search.latest)
        #expect(!search.afterHotPhrase)
        #expect(rig.microphone.opens == 0, "a typed question opens no microphone")
        search.send(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        #expect(await rig.saw(.finalTranscript(transcript: "what time is it", answer: "It is noon.")))
        #expect(await rig.eventually { rig.speech.spoken == ["It is noon."] })
        await rig.endSpeech()
        #expect(rig.loop.currentState == .ready)
        await rig.stop()
    }

    @Test func aTypedQuestionOverAnAnswerStopsItAndIsAnswered() async throws {
        let rig = await LoopRig()
        let first = try #require(await rig.askQuestion())
        first.send(.answer(SpeakerAnswer(transcript: "tell me a story", text: "Once upon a time...")))
        #expect(await rig.eventually { rig.speech.spoken.count == 1 })
        #expect(await rig.send(.textQuery("what time is it"), expecting: .searching))
        #expect(await rig.eventually { rig.speech.playingCount == 0 }, "the story was stopped")
        #expect(await rig.eventually { rig.search.latest?.query == "what time is it" })
        rig.search.latest?.send(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        #expect(await rig.eventually { rig.speech.spoken.last == "It is noon." })
        await rig.stop()
    }

    @Test func aFailedTypedQuestionIsSaid() async throws {
        let rig = await LoopRig()
        rig.search.refuseNextStart(SearchError(.offline, detail: "could not resolve host"))
        let mark = rig.recorder.count
        rig.loop.send(.textQuery("what time is it"))
        #expect(await rig.saw(.stateChanged(from: .searching, to: .speaking), after: mark))
        #expect(await rig.eventually { rig.speech.spoken == [SearchFailure.offline.sentence] })
        await rig.stop()
    }

    @Test func anAnnouncementWaitsForTheAnswerAndNoneIsLost() async throws {
        let rig = await LoopRig()
        let search = try #require(await rig.askQuestion())
        // Two announcements while a question is being asked: neither cuts in.
        rig.loop.send(.announce("Dinner is ready."))
        rig.loop.send(.announce("The door is open."))
        search.send(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        #expect(await rig.eventually { rig.speech.spoken == ["It is noon."] })
        await rig.endSpeech()
        // Then each, with its chime first.
        #expect(await rig.eventually { rig.speech.spoken == ["It is noon.", "Dinner is ready."] })
        await rig.endSpeech()
        #expect(await rig.eventually { rig.speech.spoken == ["It is noon.", "Dinner is ready.", "The door is open."] })
        await rig.endSpeech()
        #expect(rig.speech.earcons.filter { $0 == .announce }.count == 2)
        let log = rig.speech.log
        let chime = try #require(log.firstIndex(of: .earcon(.announce)))
        #expect(log.firstIndex(of: .speech("Dinner is ready.")).map { $0 > chime } == true)
        #expect(rig.loop.currentState == .ready)
        await rig.stop()
    }

    @Test func anAnnouncementIsMadeWhileMuted() async throws {
        let rig = await LoopRig()
        #expect(await rig.send(.setMuted(true), expecting: .muted))
        rig.loop.send(.announce("Dinner is ready."))
        #expect(await rig.eventually { rig.speech.spoken == ["Dinner is ready."] })
        await rig.stop()
    }

    @Test func listenOverAnAnswerAsksTheNextQuestion() async throws {
        let rig = await LoopRig()
        let first = try #require(await rig.askQuestion())
        first.send(.answer(SpeakerAnswer(transcript: "tell me a story", text: "Once upon a time...")))
        #expect(await rig.eventually { rig.speech.spoken.count == 1 })
        let before = rig.search.sessions.count
        #expect(await rig.send(.listen, expecting: .listening))
        #expect(await rig.eventually { rig.search.sessions.count == before + 1 })
        #expect(rig.speech.playingCount <= 1, "only the listening chime may still play")
        await rig.stop()
    }

    /// The loop publishes its snapshot after each step of the core, before the step's effects are carried out: a
    /// screen that connects while the loop tells of a change (its snapshot, then the activities after it) finds
    /// that change in the snapshot already.
    @Test func theSnapshotHoldsTheStateAsItIsToldOf() async throws {
        let loop = Mutex<SpeakerLoop?>(nil)
        let seen = Mutex<[(told: SpeakerState, snapshot: SpeakerState)]>([])
        let rig = await LoopRig(observers: [{ activity in
            guard case .stateChanged(_, let to) = activity, let loop = loop.withLock({ $0 }) else { return }
            let snapshot = loop.snapshot.state
            seen.withLock { $0.append((to, snapshot)) }
        }])
        loop.withLock { $0 = rig.loop }
        #expect(await rig.send(.talk, expecting: .listening))
        #expect(await rig.send(.press, expecting: .searching))
        await rig.stop()
        let changes = seen.withLock { $0 }
        #expect(changes.map(\.told) == [.recording, .searching, .none])
        #expect(changes.map(\.snapshot) == changes.map(\.told))
    }

    @Test func volumeFromTheAPIChangesWithoutAWord() async throws {
        let rig = await LoopRig()
        let mark = rig.recorder.count
        rig.loop.send(.carryOut(.volume(.to(30))))
        #expect(await rig.saw(.volume(30, soundOff: false), after: mark))
        #expect(rig.volume.percent == 30)
        #expect(rig.speech.spoken.isEmpty)
        #expect(rig.loop.snapshot.volume == 30)
        await rig.stop()
    }

    @Test func cancellingTheRingingTimerFromTheScreenStopsTheRing() async throws {
        let rig = await LoopRig()
        rig.loop.send(.carryOut(.timer(.set(seconds: 600, name: "pasta"))))
        #expect(await rig.eventually { rig.loop.snapshot.timers.count == 1 })
        let timer = try #require(rig.loop.snapshot.timers.first)
        #expect(timer.name == "pasta")
        let mark = rig.recorder.count
        await rig.advance(by: .seconds(600))
        #expect(await rig.saw(.leds(.ringing), after: mark))
        #expect(await rig.send(.carryOut(.timer(.cancel(.id(timer.id)))), expecting: .ready))
        #expect(rig.loop.snapshot.timers.isEmpty)
        #expect(rig.loop.currentState == .ready)
        await rig.stop()
    }

    @Test func clearingTheConversationReachesTheService() async throws {
        let rig = await LoopRig()
        rig.loop.send(.clearConversation)
        #expect(await rig.eventually { rig.search.conversationsCleared == 1 })
        await rig.stop()
    }

    @Test func theSnapshotHasWhatAScreenShows() async throws {
        let rig = await LoopRig()
        rig.loop.send(.carryOut(.timer(.set(seconds: 300, name: ""))))
        #expect(await rig.eventually { rig.loop.snapshot.timers.count == 1 })
        #expect(await rig.send(.setMuted(true), expecting: .muted))
        let snapshot = rig.loop.snapshot
        #expect(snapshot.state == .ready && snapshot.muted && !snapshot.offline)
        #expect(snapshot.timers.first.map { $0.remaining(at: snapshot.now) } == 300)
        await rig.stop()
    }

    @Test func anAnswersDisplayComesJustBeforeItsFinalEvent() async throws {
        let rig = await LoopRig()
        let search = try #require(await rig.askQuestion())
        let display: JSONValue = ["TemplateData": ["TemplateName": "TextTemplate", "Title": "Noon"]]
        search.send(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.", display: display)))
        #expect(await rig.saw(.finalTranscript(transcript: "what time is it", answer: "It is noon.")))
        let all = rig.recorder.all
        let final = try #require(all.firstIndex(of: .finalTranscript(transcript: "what time is it", answer: "It is noon.")))
        #expect(all[final - 1] == .display(display))
        await rig.stop()
    }
}

/// What the snapshot keeps of the activities the loop tells (SpeakerSnapshot.record), which a screen shows when it
/// connects: the last words, the display that came with the answer, the problem until the next answer, the LEDs.
@Suite struct SnapshotRecordTests {
    @Test func theSnapshotKeepsTheLastOfEachAsTold() {
        var snapshot = SpeakerSnapshot(state: .ready, muted: false, offline: false, volume: 50, soundOff: false, timers: [], alarms: [], now: 0)
        snapshot.record(.partialTranscript("what's the"))
        #expect(snapshot.partial == "what's the")
        snapshot.record(.display(["kind": "weather"]))
        snapshot.record(.finalTranscript(transcript: "what's the weather", answer: "Sunny."))
        #expect(snapshot.partial == "" && snapshot.transcript == "what's the weather" && snapshot.answer == "Sunny.")
        #expect(snapshot.display == ["kind": "weather"], "the display told just before belongs to this answer")
        snapshot.record(.partialTranscript("what"))
        snapshot.record(.stateChanged(from: .ready, to: .recording))
        #expect(snapshot.partial == "", "a new recording starts without the last one's words")
        snapshot.record(.searchFailed(SearchError(.offline, detail: "could not resolve host")))
        #expect(snapshot.problem == SearchFailure.offline.sentence)
        snapshot.record(.online)
        #expect(snapshot.problem == "", "the offline problem goes when the service answers again")
        snapshot.record(.searchFailed(SearchError(.nothingHeard, detail: "no speech")))
        snapshot.record(.online)
        #expect(snapshot.problem == SearchFailure.nothingHeard.sentence, "any other problem stays")
        snapshot.record(.finalTranscript(transcript: "what time is it", answer: "It is noon."))
        #expect(snapshot.display == .null, "an answer without a display clears the last one's")
        #expect(snapshot.problem == "")
        snapshot.record(.answerShown("Volume 40."))
        #expect(snapshot.answer == "Volume 40.")
        #expect(snapshot.leds == .ready)
        snapshot.record(.leds(.listening))
        #expect(snapshot.leds == .listening)
    }
}
