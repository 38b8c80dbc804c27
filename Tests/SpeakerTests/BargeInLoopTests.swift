import AudioCore
import BoardCore
import Testing
@testable import SpeakerCore
@testable import SpeakerRuntime
import SpeakerTestKit
import Timers

/// Barge-in through the loop (issue #19), on fakes: with the echo canceller on, the hot phrase is listened for
/// over the speaker's own sound, and a question asked over an answer or a ring stops it and is answered.
@Suite struct BargeInLoopTests {
    static let noon = SpeakerAnswer(transcript: "what time is it", text: "It is noon.")
    static let weather = SpeakerAnswer(transcript: "what is the weather", text: "It is sunny and 21 degrees.")

    static func rig() async -> LoopRig {
        var settings = SpeakerLoopSettings()
        settings.machine.bargeIn = true
        return await LoopRig(settings: settings, hotPhrase: true)
    }

    /// "OK Hound", a question, its answer: the speaker is speaking it.
    static func answerOverHotPhrase(_ rig: LoopRig, _ answer: SpeakerAnswer) async throws -> FakeSearchSession {
        let mark = rig.recorder.count
        rig.microphone.feed(frames: 1, value: FakeHotPhrase.marker)
        #expect(await rig.saw(.leds(.listening), after: mark))
        let session = try #require(rig.search.latest)
        rig.speech.endEarcons()
        rig.microphone.feed(frames: 5, value: 0)
        session.send(.answer(answer))
        #expect(await rig.saw(.leds(.speaking), after: mark))
        return session
    }

    @Test func aQuestionAskedOverAnAnswerStopsItAndIsAnswered() async throws {
        let rig = await Self.rig()
        let detector = try #require(rig.hotPhrase)
        let first = try await Self.answerOverHotPhrase(rig, Self.noon)
        #expect(rig.speech.spoken.last == "It is noon.")
        #expect(rig.speech.playingCount == 1)

        // While the answer plays the detector hears the (echo-cancelled) microphone, marked as over its own sound.
        let over = detector.framesOverOwnSound
        rig.microphone.feed(frames: 5, value: 0)
        await rig.loop.settled()  // heard on the detector's thread
        #expect(detector.framesOverOwnSound == over + 5)
        #expect(detector.framesOverRing == 0)  // an answer, not a ring: the stop word listens at its answer threshold

        // "OK Hound" over the answer: it stops at once, and the question after it goes to a new search, pre-roll first.
        var mark = rig.recorder.count
        rig.microphone.feed(frames: 1, value: FakeHotPhrase.marker)
        #expect(await rig.saw(.hotPhrase, after: mark))
        #expect(await rig.saw(.leds(.listening), after: mark))
        #expect(rig.speech.playingCount <= 1)  // the answer was interrupted: only the listening earcon may play
        let second = try #require(rig.search.latest)
        #expect(second !== first)
        #expect(second.afterHotPhrase)
        #expect(second.uploaded.suffix(320) == ArraySlice(repeating: FakeHotPhrase.marker, count: 320))

        // The new question is answered and spoken.
        rig.speech.endEarcons()
        mark = rig.recorder.count
        rig.microphone.feed(frames: 5, value: 0)
        second.send(.answer(Self.weather))
        #expect(await rig.saw(.leds(.speaking), after: mark))
        #expect(rig.speech.spoken.last == "It is sunny and 21 degrees.")
        mark = rig.recorder.count
        rig.speech.endSpeech()
        #expect(await rig.saw(.leds(.ready), after: mark))
        await rig.stop()
    }

    @Test func withoutBargeInTheDetectorHearsNothingWhileTheSpeakerTalks() async throws {
        let rig = await LoopRig(hotPhrase: true)
        let detector = try #require(rig.hotPhrase)
        _ = try await Self.answerOverHotPhrase(rig, Self.noon)
        let seen = detector.framesSeen
        rig.microphone.feed(frames: 5, value: FakeHotPhrase.marker)
        await rig.loop.settled()
        #expect(detector.framesSeen == seen)
        #expect(detector.framesOverOwnSound == 0)
        #expect(rig.speech.spoken.count == 1)
        await rig.stop()
    }

    /// A ten-second timer set by voice; `beforeItRings` runs while the speaker is quiet again, then the timer is
    /// left to go off.
    static func ringATimer(_ rig: LoopRig, beforeItRings: () async -> Void = {}) async throws {
        var mark = rig.recorder.count
        _ = try await answerOverHotPhrase(rig, SpeakerAnswer(transcript: "set a timer for ten seconds", text: "",
                                                             action: .timer(.set(seconds: 10, name: ""))))
        rig.speech.endSpeech()
        #expect(await rig.saw(.stateChanged(from: .speaking, to: .ready), after: mark))
        await beforeItRings()
        mark = rig.recorder.count
        await rig.advance(by: .seconds(11))
        #expect(await rig.saw(.leds(.ringing), after: mark))
    }

    /// Frames heard while the timer rings reach the detector as over a ring (the stop word's ring threshold), and
    /// the answer after it as over an answer.
    @Test func theDetectorIsToldARingFromAnAnswer() async throws {
        let rig = await Self.rig()
        let detector = try #require(rig.hotPhrase)
        try await Self.ringATimer(rig)
        let (over, ring) = (detector.framesOverOwnSound, detector.framesOverRing)
        rig.microphone.feed(frames: 4, value: 0)
        await rig.loop.settled()
        #expect(detector.framesOverOwnSound == over + 4 && detector.framesOverRing == ring + 4)
        _ = try await Self.answerOverHotPhrase(rig, Self.weather)  // "OK Hound" stops the ring; the answer plays
        let (overAnswer, ringAnswer) = (detector.framesOverOwnSound, detector.framesOverRing)
        rig.microphone.feed(frames: 3, value: 0)
        await rig.loop.settled()
        #expect(detector.framesOverOwnSound == overAnswer + 3 && detector.framesOverRing == ringAnswer)
        await rig.stop()
    }

    @Test func theHotPhraseStopsARingingTimerAndTakesTheQuestion() async throws {
        let rig = await Self.rig()
        try await Self.ringATimer(rig)

        // "OK Hound" over the ring: it stops, and the speaker listens.
        let mark = rig.recorder.count
        let sessions = rig.search.sessions.count
        rig.microphone.feed(frames: 1, value: FakeHotPhrase.marker)
        #expect(await rig.saw(.leds(.listening), after: mark))
        #expect(rig.search.sessions.count == sessions + 1)
        #expect(rig.recorder.all[mark...].contains { if case .stateChanged(from: .ringing, to: .recording) = $0 { true } else { false } })
        await rig.stop()
    }

    /// The household's stop phrase (issue #37): over a ring it stops the ring, and over an answer the answer, with
    /// no question after it; said while the speaker is quiet it does nothing at all.
    @Test func theStopPhraseStopsARingAndAnAnswerAndNothingElse() async throws {
        let rig = await Self.rig()
        try await Self.ringATimer(rig) {
            // Quiet: "stop" is not listened for (the detector reports it only over the speaker's own sound).
            let mark = rig.recorder.count
            rig.microphone.feed(frames: 3, value: FakeHotPhrase.stopMarker)
            await rig.loop.settled()
            #expect(!rig.recorder.all[mark...].contains(.stopPhrase))
        }
        var mark = rig.recorder.count
        let sessions = rig.search.sessions.count
        rig.microphone.feed(frames: 1, value: FakeHotPhrase.stopMarker)
        #expect(await rig.saw(.stopPhrase, after: mark))
        #expect(await rig.saw(.stateChanged(from: .ringing, to: .ready), after: mark))
        #expect(rig.search.sessions.count == sessions)

        // Over an answer: it stops, and the speaker is ready (no new question).
        let answer = try await Self.answerOverHotPhrase(rig, Self.weather)
        #expect(rig.speech.playingCount == 1)
        mark = rig.recorder.count
        rig.microphone.feed(frames: 1, value: FakeHotPhrase.stopMarker)
        #expect(await rig.saw(.stateChanged(from: .speaking, to: .ready), after: mark))
        #expect(rig.speech.playingCount == 0)
        #expect(rig.search.latest === answer)
        await rig.stop()
    }
}
