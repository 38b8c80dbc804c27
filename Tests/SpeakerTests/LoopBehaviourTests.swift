import AudioCore
import BoardCore
import Logging
import Testing
@testable import SpeakerCore
@testable import SpeakerRuntime
import SpeakerTestKit

/// The loop's behaviour on fakes and a manual clock: no ALSA, curl or espeak-ng, no waiting on real time. Each
/// test drives the speaker as a person and the world would (a press, words, an answer, speech ending, time
/// passing) and checks what it did through its ports and its activity.
@Suite struct LoopBehaviourTests {
    static let noon = SpeakerAnswer(transcript: "what time is it", text: "It is noon.")

    /// A press, a question the endpointer hears end, Houndify's answer, speech: back to ready.
    func ask(_ rig: LoopRig, answer: SpeakerAnswer = noon) async -> FakeSearchSession? {
        await rig.send(.talk, expecting: .listening)
        guard let session = rig.search.latest else { return nil }
        rig.microphone.feed(frames: 10, value: 0)
        rig.microphone.speak(frames: 20)
        let mark = rig.recorder.count
        rig.microphone.feed(frames: 30, value: 0)
        #expect(await rig.saw(.leds(.searching), after: mark))
        session.send(.answer(answer))
        #expect(await rig.saw(.leds(.speaking), after: mark))
        return session
    }

    @Test func aQuestionIsRecordedAnsweredAndSpokenWithItsTimings() async throws {
        let rig = await LoopRig()
        await rig.send(.talk, expecting: .listening)
        let session = try #require(rig.search.latest)
        #expect(!session.afterHotPhrase)
        #expect(rig.microphone.openStreams == 1)  // opened for this question only (no hot phrase)
        await rig.advance(by: .milliseconds(200))
        rig.microphone.feed(frames: 10, value: 0)
        rig.microphone.speak(frames: 20)
        session.send(.partialTranscript("what time"))
        #expect(await rig.saw(.partialTranscript("what time")))
        await rig.advance(by: .milliseconds(1000))
        let mark = rig.recorder.count
        rig.microphone.feed(frames: 30, value: 0)  // the endpointer hears the question end
        #expect(await rig.saw(.leds(.searching), after: mark))
        #expect(session.isFinished && !session.isCancelled)
        #expect(rig.microphone.openStreams == 0)
        #expect(session.uploaded.count >= 50 * 320)
        await rig.advance(by: .milliseconds(300))
        session.send(.answer(Self.noon))
        #expect(await rig.saw(.finalTranscript(transcript: "what time is it", answer: "It is noon.")))
        #expect(await rig.saw(.leds(.speaking)))
        #expect(rig.speech.spoken == ["It is noon."])
        await rig.advance(by: .milliseconds(50))
        rig.speech.firstSampleOfLatest()
        await rig.advance(by: .milliseconds(2000))
        rig.speech.endSpeech()
        #expect(await rig.saw(.stateChanged(from: .speaking, to: .ready)))
        #expect(await rig.recorder.wait { if case .timings = $0 { true } else { false } })
        await rig.stop()
        #expect(rig.states == [.ready, .recording, .searching, .speaking, .ready, .none])
        #expect(rig.speech.earcons == [.startListening, .stopListening])
        let t = try #require(rig.loop.interactions.first)
        #expect(t.milliseconds(\.firstAudioSent) == 200)
        #expect(t.milliseconds(\.firstPartial) == 200)
        #expect(t.milliseconds(\.endOfSpeech) == 1200)
        #expect(t.milliseconds(\.finalResult) == 1500)
        #expect(t.milliseconds(\.firstTTSSample) == 1550)
        #expect(t.milliseconds(\.speechEnd) == 3550)
        #expect(rig.board.shown.last == .off && rig.board.isStopped)
    }

    @Test func theButtonWorksThroughTheBoardPort() async {
        let rig = await LoopRig()
        let mark = rig.recorder.count
        rig.board.press(.press)  // tap-to-talk
        #expect(await rig.saw(.button(.talk), after: mark))
        #expect(await rig.saw(.leds(.listening), after: mark))
        rig.board.press(.cancel)  // a long press
        #expect(await rig.saw(.leds(.ready), after: mark))
        await rig.stop()
        #expect(rig.search.latest?.isCancelled == true)
        #expect(rig.speech.earcons == [.startListening, .cancel])
        #expect(rig.board.shown.contains(.listening))
    }

    /// Hold-to-talk through the board port: a pause while the button is held does not end the question; the
    /// release does (it ended at the first pause while the button was still held).
    @Test func holdToTalkListensUntilTheRelease() async {
        let rig = await LoopRig()
        let mark = rig.recorder.count
        rig.board.press(.talk)  // hold-to-talk: the button went down
        #expect(await rig.saw(.leds(.listening), after: mark))
        rig.loop.send(.endOfSpeech)  // the endpointer hears a pause
        rig.board.press(.endTalk)  // then the button comes up
        #expect(await rig.saw(.leds(.searching), after: mark))
        #expect(await rig.saw(.button(.endTalk), after: mark))
        let all = rig.recorder.all
        let released = all.firstIndex(of: .button(.endTalk))
        let sent = all.firstIndex(of: .stateChanged(from: .recording, to: .searching))
        #expect(released != nil && sent != nil && released! < sent!, "the question ended before the release: \(all[mark...])")
        await rig.stop()
    }

    @Test func aPressWhileSpeakingStopsTheAnswerAtOnce() async {
        let rig = await LoopRig()
        _ = await ask(rig)
        await rig.send(.talk, expecting: .ready)
        #expect(rig.speech.playingCount == 0)  // stopped, not left to play out
        await rig.stop()
        #expect(rig.states == [.ready, .recording, .searching, .speaking, .ready, .none])
    }

    @Test func safeToStopAudioEndsTheQuestion() async {
        let rig = await LoopRig()
        await rig.send(.talk, expecting: .listening)
        let mark = rig.recorder.count
        rig.search.latest?.send(.safeToStopAudio)
        #expect(await rig.saw(.leds(.searching), after: mark))
        #expect(rig.search.latest?.isFinished == true)
        await rig.stop()
    }

    /// Whether the upload has ended is the machine's alone to say: a session that stops taking audio has not ended
    /// the question until it says why (here SafeToStopAudio), and then the loop finishes the upload and closes the
    /// microphone once.
    @Test func aRefusedFrameDoesNotEndTheQuestionOnlyTheMachineDoes() async throws {
        let rig = await LoopRig()
        await rig.send(.talk, expecting: .listening)
        let session = try #require(rig.search.latest)
        rig.microphone.speak(frames: 10)
        session.stopAccepting()
        rig.microphone.speak(frames: 10)
        let mark = rig.recorder.count
        rig.microphone.speak(frames: 5)
        #expect(rig.microphone.openStreams == 1 && !session.isFinished)
        // Still offered every frame (the router does not decide on its own), none of them taken.
        #expect(session.uploaded.count == 10 * 320 && session.refusedWrites == 15)
        session.send(.safeToStopAudio)
        #expect(await rig.saw(.leds(.searching), after: mark))
        #expect(session.isFinished && !session.isCancelled && rig.microphone.openStreams == 0)
        await rig.stop()
        #expect(rig.states == [.ready, .recording, .searching, .none])
    }

    @Test func eachBusyStateHasAWatchdog() async {
        var settings = SpeakerLoopSettings()
        settings.machine.recordingLimitMS = 15_000
        settings.machine.searchingLimitMS = 20_000
        settings.machine.speakingLimitMS = 60_000
        let rig = await LoopRig(settings: settings)

        // Recording with no audio arriving: the microphone is what failed.
        await rig.send(.talk, expecting: .listening)
        await rig.advance(by: .milliseconds(14_999))
        var mark = rig.recorder.count
        await rig.advance(by: .milliseconds(1))
        #expect(await rig.saw(.watchdogExpired(.recording, limitMS: 15_000), after: mark))
        #expect(await rig.saw(.leds(.error), after: mark))
        #expect(rig.speech.spoken.last == SearchFailure.microphone.sentence)
        #expect(rig.search.latest?.isCancelled == true)
        rig.speech.endSpeech()
        #expect(await rig.saw(.leds(.ready), after: mark))

        // Searching with no answer: Houndify.
        await rig.send(.talk, expecting: .listening)
        mark = rig.recorder.count
        await rig.advance(by: .milliseconds(10_000))  // recording's own watchdog is moved, not added to
        await rig.send(.endOfSpeech, expecting: .searching)
        await rig.advance(by: .milliseconds(19_999))
        #expect(!rig.recorder.all[mark...].contains { if case .watchdogExpired = $0 { true } else { false } })
        await rig.advance(by: .milliseconds(1))
        #expect(await rig.saw(.watchdogExpired(.searching, limitMS: 20_000), after: mark))
        #expect(await rig.saw(.leds(.error), after: mark))
        #expect(rig.speech.spoken.last == SearchFailure.serviceFailing.sentence)
        await rig.endSpeech()

        // Speech that never ends: it is stopped, and the error earcon says so.
        _ = await ask(rig)
        mark = rig.recorder.count
        await rig.advance(by: .seconds(60))
        #expect(await rig.saw(.watchdogExpired(.speaking, limitMS: 60_000), after: mark))
        #expect(await rig.saw(.leds(.ready), after: mark))
        #expect(rig.speech.earcons.last == .error)
        #expect(rig.speech.playingCount == 0)
        await rig.stop()
        #expect(rig.clock.armedTimers == 0)
    }

    @Test func autoListenAsksTheFollowUp() async {
        let rig = await LoopRig()
        let first = await ask(rig, answer: SpeakerAnswer(transcript: "set a timer", text: "For how long?", autoListen: true))
        let mark = rig.recorder.count
        rig.speech.endSpeech()
        #expect(await rig.saw(.leds(.listening), after: mark))  // no press: it asks again
        #expect(rig.search.sessions.count == 2 && rig.search.latest !== first)
        #expect(rig.microphone.openStreams == 1)
        await rig.stop()
        #expect(rig.states == [.ready, .recording, .searching, .speaking, .recording, .none])
    }

    @Test func failuresAreSpokenAndOfflineShowsUntilAQueryWorks() async {
        let rig = await LoopRig()
        rig.search.refuseNextStart(SearchError(.offline, detail: "[ConnectionFailure] could not resolve host"))
        var mark = rig.recorder.count
        rig.loop.send(.talk)
        #expect(await rig.saw(.searchFailed(SearchError(.offline, detail: "cannot start a voice search: [ConnectionFailure] could not resolve host")), after: mark))
        #expect(await rig.saw(.leds(.error), after: mark))
        #expect(rig.speech.spoken == [SearchFailure.offline.sentence])
        rig.speech.endSpeech()
        #expect(await rig.saw(.leds(.offline), after: mark))  // ready, but offline

        // The key refused mid-search: said as such.
        await rig.send(.talk, expecting: .listening)
        mark = rig.recorder.count
        rig.search.latest?.send(.failed(SearchError(.authentication, detail: "[AuthenticationFailed] 401")))
        #expect(await rig.saw(.leds(.error), after: mark))
        #expect(rig.speech.spoken.last == SearchFailure.authentication.sentence)
        #expect(rig.microphone.openStreams == 0)  // every way out of recording gives the microphone back
        rig.speech.endSpeech()
        #expect(await rig.saw(.leds(.offline), after: mark))

        // A query that works clears it.
        _ = await ask(rig)
        mark = rig.recorder.count
        rig.speech.endSpeech()
        #expect(await rig.saw(.leds(.ready), after: mark))
        await rig.stop()
    }

    /// Issue #37: "OK Hound" (or something like it) and then nothing: back to ready with the earcon, no sentence.
    @Test func aHotPhraseWakeThatHearsNothingGoesBackQuietly() async throws {
        let rig = await LoopRig(hotPhrase: true)
        let mark = rig.recorder.count
        rig.microphone.feed(frames: 1, value: FakeHotPhrase.marker)
        #expect(await rig.saw(.leds(.listening), after: mark))
        let session = try #require(rig.search.latest)
        rig.speech.endEarcons()
        rig.microphone.feed(frames: 1000, value: 0)  // 20 s of silence: longer than any wait for speech
        #expect(await rig.saw(.stateChanged(from: .recording, to: .ready), after: mark))
        #expect(await rig.saw(.leds(.ready), after: mark))
        #expect(session.isCancelled)
        #expect(rig.speech.spoken.isEmpty)
        #expect(!rig.states.contains(.speaking))
        await rig.stop()
    }

    /// Issue 35: "No internet" went only with the next question. Offline, the loop checks the service in the
    /// background (5 s after, then at twice the last wait, up to a minute) and shows ready when it answers.
    @Test func offlineGoesWhenTheServiceAnswersALightCheck() async {
        var settings = SpeakerLoopSettings()
        settings.screen.dimAfter = 0  // never: no other timer comes and goes meanwhile
        let rig = await LoopRig(settings: settings)
        rig.search.refuseNextStart(SearchError(.offline, detail: "[ConnectionFailure] could not resolve host"))
        let mark = rig.recorder.count
        rig.loop.send(.talk)
        #expect(await rig.saw(.leds(.error), after: mark))
        rig.speech.endSpeech()
        #expect(await rig.saw(.leds(.offline), after: mark))
        let armed = rig.clock.armedTimers
        #expect(rig.search.reachabilityChecks == 0)
        rig.clock.advance(by: .seconds(5))
        // Checked, not there yet: still offline, and the next check armed (the timer back among the armed ones).
        #expect(await rig.eventually { rig.search.reachabilityChecks == 1 && rig.clock.armedTimers == armed })
        rig.clock.advance(by: .seconds(9))
        #expect(rig.search.reachabilityChecks == 1, "the second check waits twice as long")
        rig.clock.advance(by: .seconds(1))
        #expect(await rig.eventually { rig.search.reachabilityChecks == 2 && rig.clock.armedTimers == armed })
        #expect(rig.loop.snapshot.offline)
        rig.search.setReachable(true)
        let back = rig.recorder.count
        rig.clock.advance(by: .seconds(20))
        #expect(await rig.saw(.leds(.ready), after: back))
        #expect(rig.search.reachabilityChecks == 3)
        #expect(!rig.loop.snapshot.offline)
        #expect(rig.loop.currentState == .ready)
        // Online: no more checks.
        rig.clock.advance(by: .seconds(600))
        #expect(rig.search.reachabilityChecks == 3)
        await rig.stop()
    }

    /// Every sentence the speaker says is told as it starts (a screen's captions): an announcement, the muted reply.
    @Test func everySentenceSpokenIsTold() async {
        let rig = await LoopRig()
        var mark = rig.recorder.count
        rig.loop.send(.announce("Dinner is ready."))
        #expect(await rig.saw(.speech("Dinner is ready."), after: mark))
        rig.speech.endSpeech()
        #expect(await rig.saw(.leds(.ready), after: mark))
        await rig.send(.setMuted(true), expecting: .muted)
        mark = rig.recorder.count
        rig.loop.send(.talk)
        #expect(await rig.saw(.speech(SpeakerMachine.mutedSentence), after: mark))
        await rig.stop()
    }

    /// Issue #37: a hot-phrase wake cancelled within 2 s is kept by the detector as the household's false wake;
    /// one cancelled later, or a question started by the button, is not.
    @Test func aWakeCancelledAtOnceIsKeptAsAFalseWake() async throws {
        let rig = await LoopRig(hotPhrase: true)
        let detector = try #require(rig.hotPhrase)
        func wake() async {
            let mark = rig.recorder.count
            rig.microphone.feed(frames: 1, value: FakeHotPhrase.marker)
            _ = await rig.saw(.leds(.listening), after: mark)
        }
        await wake()
        await rig.advance(by: .milliseconds(1500))
        #expect(await rig.send(.cancel, expecting: .ready))
        #expect(detector.falseWakesKept == 1)
        await wake()
        await rig.advance(by: .milliseconds(2500))
        #expect(await rig.send(.cancel, expecting: .ready))
        #expect(detector.falseWakesKept == 1)
        #expect(await rig.send(.talk, expecting: .listening))
        #expect(await rig.send(.cancel, expecting: .ready))
        #expect(detector.falseWakesKept == 1)
        await rig.stop()
    }

    /// Issue #37: a hot-phrase wake whose question Houndify heard words in is told to the detector as answered
    /// (to learn from) once its answer has been heard to the end; one whose answer was stopped, one that heard
    /// no words, and a question started by the button, are not.
    @Test func anAnsweredWakeIsToldToTheDetector() async throws {
        let rig = await LoopRig(hotPhrase: true)
        let detector = try #require(rig.hotPhrase)
        func wake() async -> FakeSearchSession? {
            let before = rig.search.sessions.count
            let mark = rig.recorder.count
            rig.microphone.feed(frames: 1, value: FakeHotPhrase.marker)
            guard await rig.saw(.leds(.listening), after: mark), await rig.eventually({ rig.search.sessions.count > before }) else { return nil }
            return rig.search.latest
        }
        var mark = rig.recorder.count
        try #require(await wake()).send(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        #expect(await rig.saw(.leds(.speaking), after: mark))
        #expect(await rig.eventually { detector.answeredWakesHeld == 1 })
        #expect(detector.answeredWakesKept == 0)
        await rig.endSpeech()
        #expect(await rig.eventually { detector.answeredWakesKept == 1 })
        mark = rig.recorder.count
        try #require(await wake()).send(.answer(SpeakerAnswer(transcript: "what is the weather", text: "Sunny.")))
        #expect(await rig.saw(.leds(.speaking), after: mark))
        #expect(await rig.send(.press, expecting: .ready))
        #expect(detector.answeredWakesKept == 1)
        mark = rig.recorder.count
        try #require(await wake()).send(.answer(SpeakerAnswer(transcript: "  ", text: "")))
        #expect(await rig.saw(.leds(.ready), after: mark))
        #expect(detector.answeredWakesKept == 1)
        #expect(detector.falseWakesKept == 1)
        mark = rig.recorder.count
        try #require(await rig.askQuestion()).send(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        #expect(await rig.saw(.leds(.speaking), after: mark))
        #expect(detector.answeredWakesKept == 1)
        await rig.stop()
    }

    @Test func theHotPhraseWakesItWithThePreRollAndIsNotHeardOverOurOwnSound() async throws {
        let rig = await LoopRig(hotPhrase: true)
        let detector = try #require(rig.hotPhrase)
        #expect(rig.microphone.openStreams == 1)  // always on, for the hot phrase
        rig.microphone.feed(frames: 20, value: 7)  // 400 ms of room, then "OK Hound"
        var mark = rig.recorder.count
        rig.microphone.feed(frames: 1, value: FakeHotPhrase.marker)
        #expect(await rig.saw(.hotPhrase, after: mark))
        #expect(await rig.saw(.leds(.listening), after: mark))
        let session = try #require(rig.search.latest)
        #expect(session.afterHotPhrase)
        // The upload starts with the 300 ms before the phrase fired, the phrase's own frame last.
        let expected = [Int16](repeating: 7, count: 4800 - 320) + [Int16](repeating: FakeHotPhrase.marker, count: 320)
        #expect(Array(session.uploaded.prefix(4800)) == expected)
        #expect(rig.microphone.openStreams == 1)  // no second capture for the question

        rig.speech.endEarcons()
        session.send(.answer(Self.noon))
        #expect(await rig.saw(.leds(.speaking), after: mark))
        // While it speaks, "OK Hound" from its own voice is not listened for.
        let seen = detector.framesSeen
        mark = rig.recorder.count
        rig.microphone.feed(frames: 5, value: FakeHotPhrase.marker)
        await rig.loop.settled()
        #expect(detector.framesSeen == seen)
        let resets = detector.resets
        rig.speech.endSpeech()
        #expect(await rig.saw(.leds(.ready), after: mark))
        #expect(!rig.recorder.all[mark...].contains(.hotPhrase))
        #expect(detector.resets == resets + 1)  // listening again starts afresh
        mark = rig.recorder.count
        rig.microphone.feed(frames: 1, value: FakeHotPhrase.marker)
        #expect(await rig.saw(.hotPhrase, after: mark))
        await rig.stop()
        #expect(rig.microphone.openStreams == 0)
    }

    @Test func aMicrophoneMissingAtStartIsUsedOnceItIsPluggedIn() async {
        let rig = await LoopRig(hotPhrase: true, microphoneMissing: true)
        var mark = rig.recorder.count
        rig.loop.send(.talk)
        #expect(await rig.saw(.leds(.error), after: mark))
        #expect(rig.speech.spoken == [SearchFailure.microphone.sentence])
        rig.speech.endSpeech()
        #expect(await rig.saw(.leds(.ready), after: mark))
        mark = rig.recorder.count
        rig.microphone.plugIn()
        #expect(await rig.saw(.microphone(.opened(device: "fake_mic", rate: 16_000, channels: 1)), after: mark))
        rig.microphone.feed(frames: 1, value: FakeHotPhrase.marker)
        #expect(await rig.saw(.leds(.listening), after: mark))
        await rig.stop()
    }

    /// A search that cannot start is the machine's to hear in the same step, not behind what is queued meanwhile: a
    /// press sent right after the question finds the failure already said (before, the press found the speaker
    /// still recording, and sent it searching for an answer to a search that never started).
    @Test func aSearchThatCannotStartFailsBeforeTheNextInput() async {
        let rig = await LoopRig()
        rig.search.refuseNextStart(SearchError(.offline, detail: "[ConnectionFailure] could not resolve host"))
        let mark = rig.recorder.count
        rig.loop.send(.talk)
        rig.loop.send(.press)
        await rig.loop.settled()
        #expect(rig.speech.spoken == [SearchFailure.offline.sentence])
        #expect(rig.states == [.ready, .recording, .speaking, .ready])
        #expect(rig.recorder.all[mark...].contains(.leds(.error)))
        await rig.stop()
    }

    @Test func withoutTheHotPhraseAMissingMicrophoneIsSaidAtOnce() async {
        let rig = await LoopRig(microphoneMissing: true)
        let mark = rig.recorder.count
        rig.loop.send(.talk)
        #expect(await rig.saw(.leds(.error), after: mark))
        #expect(rig.recorder.all.contains { if case .searchFailed(let e) = $0 { e.failure == .microphone && e.detail.contains("fake_mic") } else { false } })
        #expect(rig.search.latest?.isCancelled == true)
        await rig.stop()
    }

    @Test func aSpeakerThatFailedShowsTheErrorPatternUntilASoundPlays() async {
        let rig = await LoopRig()
        rig.speech.failEverything(.outputFailed)
        await rig.send(.talk, expecting: .listening)
        var mark = rig.recorder.count
        await rig.send(.endOfSpeech, expecting: .searching)
        rig.search.latest?.send(.answer(Self.noon))
        #expect(await rig.saw(.leds(.error), after: mark))  // ready, with nothing heard
        #expect(rig.recorder.all.contains { if case .deviceProblem(let p) = $0 { p.message.contains("no such device") } else { false } })
        rig.speech.failEverything(nil)
        mark = rig.recorder.count
        _ = await ask(rig)
        rig.speech.endSpeech()
        #expect(await rig.saw(.leds(.ready), after: mark))
        await rig.stop()
    }

    @Test func localCommandsUseTheDevice() async {
        let rig = await LoopRig()
        _ = await ask(rig, answer: SpeakerAnswer(transcript: "volume up", text: "ignored"))
        #expect(await rig.saw(.volume(60)))
        #expect(rig.speech.spoken.last == "Volume 60.")
        await rig.endSpeech()
        _ = await ask(rig, answer: SpeakerAnswer(transcript: "what's your IP address", text: "ignored"))
        #expect(rig.speech.spoken.last == "My IP address is 192 dot 168 dot 1 dot 23.")
        await rig.endSpeech()
        rig.volume.breakControl()
        _ = await ask(rig, answer: SpeakerAnswer(transcript: "louder", text: "ignored"))
        #expect(await rig.recorder.wait { if case .deviceProblem(let p) = $0 { p.message.contains("mixer control") } else { false } })
        await rig.stop()
    }

    @Test func aPressSentBeforeTheLoopRunsIsNotLost() async {
        let clock = ManualClock()
        let search = FakeVoiceSearch(clock: clock)
        let recorder = ActivityRecorder()
        let loop = SpeakerLoop(ports: SpeakerPorts(search: search, speech: FakeSpeech(), volume: FakeVolume(),
                                                   microphone: FakeMicrophone(), clock: clock, system: FakeSystem()),
                               logger: Logger(label: "test"), observers: [recorder.observer])
        loop.send(.talk)  // before run()
        let task = Task { await loop.run() }
        #expect(await recorder.wait(for: .stateChanged(from: .ready, to: .recording)))
        await loop.settled()  // the state is told before the search starts
        #expect(search.sessions.count == 1)
        loop.send(.shutdown)
        await task.value
    }
}

/// The activity as the log, `--events json` and the journal's fields tell it.
@Suite struct ActivityTests {
    /// The recorder's wait: true for a match recorded before or after it began, false once its timeout has run
    /// with nothing matching (the safety net still ends a wait), and the activity is kept for a later wait.
    @Test func aWaitEndsAtAMatchOrAtItsTimeout() async {
        let recorder = ActivityRecorder()
        recorder.record(.hotPhrase)
        #expect(await recorder.wait(for: .hotPhrase))
        let mark = recorder.count
        #expect(await recorder.wait(for: .hotPhrase, after: mark, timeout: .milliseconds(600)) == false)
        Task { try? await Task.sleep(for: .milliseconds(50)); recorder.record(.stopPhrase) }
        #expect(await recorder.wait(for: .stopPhrase, after: mark))
        #expect(recorder.all == [.hotPhrase, .stopPhrase])
    }

    @Test func jsonKeepsTheEventFirstAndItsFieldsInOrder() {
        #expect(SpeakerActivity.stateChanged(from: .ready, to: .recording).json == #"{"event":"state","from":"ready","to":"recording"}"#)
        #expect(SpeakerActivity.finalTranscript(transcript: "what's up", answer: "Café ☕").json
                == #"{"event":"final","transcript":"what's up","answer":"Caf\u00e9 \u2615"}"#)
        #expect(SpeakerActivity.button(.release).json == #"{"event":"button","action":"release"}"#)
        #expect(SpeakerActivity.leds(.error).json == #"{"event":"leds","show":"error"}"#)
        #expect(SpeakerActivity.hotPhrase.json == #"{"event":"hotphrase"}"#)
    }

    @Test func timingsHaveTheirLineAndAFieldPerStage() {
        let start = ContinuousClock.now
        var t = InteractionTimings(trigger: start)
        t.firstAudioSent = start + .milliseconds(12)
        t.finalResult = start + .milliseconds(900)
        #expect(t.line == "timings (ms from trigger): first audio sent 12, end of speech -, first partial -, final result 900, "
                + "first TTS sample -, speech end -")
        let activity = SpeakerActivity.timings(t)
        #expect(activity.json == #"{"event":"timings","line":"\#(t.line)","first_audio_sent_ms":12,"final_result_ms":900}"#)
        #expect(activity.logEntry?.message == t.line)
    }
}
