import Testing
@testable import SpeakerCore
import Timers

/// Answers the speaker made itself, Houndify being out of reach (issue #63): what it does, says and tells.
@Suite struct DeviceAnswerTests {
    static func spoken(_ effects: [Speaker.Effect]) -> [Utterance] {
        effects.compactMap { if case .speak(let u, _) = $0 { u } else { nil } }
    }

    @Test func aTimerSetOnTheDeviceIsSetAndTheSpeakerStaysOffline() {
        var rig = CoreRig.inState(.searching)
        let answer = SpeakerAnswer(transcript: "set a timer for five minutes", text: "", action: .timer(.set(seconds: 300, name: "")),
                                   device: DeviceAnswer(failure: .offline))
        let effects = rig.step(.answer(answer))
        #expect(rig.speaker.timers.timers.count == 1, "the timer was not set")
        #expect(rig.speaker.machine.offline, "an answer of the device's own is no sign that the internet is back")
        #expect(rig.state == .speaking)
        #expect(effects.contains(.finalWithNextWords(transcript: "set a timer for five minutes", done: "", onDevice: true)))
    }

    @Test func theTimeAndTheDateAreTheSpeakersClocks() {
        var rig = CoreRig.inState(.searching)
        let time = rig.step(.answer(SpeakerAnswer(transcript: "what time is it", text: "", device: DeviceAnswer(failure: .offline, tell: .time))))
        #expect(Self.spoken(time) == [.time])
        #expect(Speaker.timeSentence(rig.now) == "It's 8:00 AM.")
        #expect(Speaker.dateSentence(rig.now) == "Today is Friday, January 15, 2027.")
        var unset = rig.now
        unset.clockSynchronized = false
        #expect(Speaker.timeSentence(unset).contains("clock isn't set"))
        #expect(CivilDate.civil(days: CivilDate.days(year: 2024, month: 2, day: 29)) == (2024, 2, 29))
        #expect(CivilDate.civil(days: 0) == (1970, 1, 1))
    }

    @Test func stopHeardOnTheDeviceStopsAndSaysNothing() {
        var rig = CoreRig.inState(.searching)
        let effects = rig.step(.answer(SpeakerAnswer(transcript: "stop", text: "", device: DeviceAnswer(failure: .serviceFailing))))
        #expect(rig.state == .ready && Self.spoken(effects).isEmpty)
        #expect(effects.contains(.final(transcript: "stop", answer: "", done: "stopped", onDevice: true)))
    }

    @Test func offlineTheFailureSaysWhatTheSpeakerCanStillDo() {
        var settings = Speaker.Settings()
        settings.machine.offlineCommands = true
        var rig = CoreRig(settings: settings)
        rig.step(.started)
        rig.step(.talk)
        rig.step(.endOfSpeech)
        let effects = rig.step(.searchFailed(.offline))
        #expect(Self.spoken(effects) == [.text("I can't reach the internet, but I can still set timers and alarms, tell the time and change the volume.")])
        var plain = CoreRig.inState(.searching)
        #expect(Self.spoken(plain.step(.searchFailed(.offline))) == [.text("I can't reach the internet.")])
        var error = SearchError(.offline, detail: "refused")
        error.offlineCommands = true
        #expect(error.sentence.hasSuffix(SearchFailure.stillCan))
        #expect(SearchFailure.authentication.sentence(offlineCommands: true) == "My Houndify key was refused.")
    }

    /// The offline problem with what the speaker can still do goes from the snapshot once the service answers
    /// again, as the plain one does.
    @Test func theOfflineSentenceWithWhatItCanStillDoGoesWhenTheServiceIsBack() {
        var snapshot = SpeakerSnapshot(state: .ready, muted: false, offline: true, volume: 50, soundOff: false, timers: [], alarms: [], now: 0)
        var error = SearchError(.offline, detail: "[ConnectionFailure] refused")
        error.offlineCommands = true
        snapshot.record(.searchFailed(error))
        #expect(snapshot.problem == "I can't reach the internet, " + SearchFailure.stillCan)
        snapshot.record(.online)
        #expect(snapshot.problem == "")
        // Another problem stays: the service being back says nothing of it.
        snapshot.record(.searchFailed(SearchError(.authentication, detail: "401")))
        snapshot.record(.online)
        #expect(snapshot.problem == SearchFailure.authentication.sentence)
    }
}
