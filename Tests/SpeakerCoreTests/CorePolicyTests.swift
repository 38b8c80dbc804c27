import AudioCore
import JSONKit
import BoardCore
import Testing
@testable import SpeakerCore
import Timers

/// What the core decides that the loop once decided itself: the network check's back-off, which false wakes the
/// detector keeps, the words after a volume change, an answer's `final`, and the local commands, matched once.
@Suite struct CorePolicyTests {
    /// A question that cannot reach the service: the core is offline.
    static func offline() -> CoreRig {
        var rig = CoreRig.inState(.searching)
        rig.step(.searchFailed(.offline))
        #expect(rig.speaker.machine.offline)
        return rig
    }

    @Test func offlineTheServiceIsCheckedLessAndLessOftenUntilItAnswers() {
        var rig = CoreRig.inState(.searching)
        let failed = rig.step(.searchFailed(.offline))
        #expect(failed.filter { if case .armNetworkCheck = $0 { true } else { false } } == [.armNetworkCheck(.seconds(5))])
        #expect(rig.speaker.networkCheckDelay == .seconds(5))
        // Armed once: the events after it arm nothing more.
        #expect(!rig.endSpeech(.finished).contains(.armNetworkCheck(.seconds(5))))
        var waits: [Duration] = []
        for _ in 0..<6 {
            for effect in rig.step(.networkChecked(false)) { if case .armNetworkCheck(let after?) = effect { waits.append(after) } }
        }
        #expect(waits == [.seconds(10), .seconds(20), .seconds(40), .seconds(60), .seconds(60), .seconds(60)])
        #expect(rig.state == .ready && machineEffects(rig.step(.wakeScreen)).isEmpty)
        // It answers: the offline pattern goes now, not at the next question, and no check is armed.
        let back = rig.step(.networkChecked(true))
        #expect(!rig.speaker.machine.offline && rig.speaker.networkCheckDelay == nil)
        #expect(back.contains(.leds(.ready)) && !back.contains { if case .armNetworkCheck = $0 { true } else { false } })
        // Told, for the screens and the snapshot that show the offline problem; once.
        #expect(back.first == .tell(.online))
        #expect(!rig.step(.networkChecked(true)).contains(.tell(.online)))
        // A late "not yet" (a check that was under way) arms nothing: the speaker is online.
        #expect(rig.step(.networkChecked(false)).isEmpty)
        // Offline again: counted from the first wait again.
        rig.step(.talk)
        rig.step(.endOfSpeech)
        #expect(rig.step(.searchFailed(.offline)).contains(.armNetworkCheck(.seconds(5))))
    }

    @Test func anAnswerEndsTheOfflineChecks() {
        var rig = Self.offline()
        rig.endSpeech(.finished)
        rig.step(.talk)
        rig.step(.endOfSpeech)
        rig.step(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        #expect(!rig.speaker.machine.offline)
        // The check armed before comes back "not yet" (it raced the answer): nothing more is armed.
        #expect(rig.step(.networkChecked(false)).isEmpty && rig.speaker.networkCheckDelay == nil)
    }

    @Test func aFalseWakeIsKeptWhenNothingWasHeardOrItWasCancelledSoon() {
        var rig = CoreRig.inState(.ready)
        // Its earcons have played: the hot phrase is listened for again.
        func quiet() { while rig.speaker.machine.soundPlaying { rig.endOldestSound(.finished) } }
        // Nothing after the phrase: kept, however long it listened.
        rig.step(.hotPhrase)
        rig.pass(8)
        #expect(rig.step(.noSpeech).contains(.keepFalseWake))
        // Cancelled within the window: kept.
        quiet()
        rig.step(.hotPhrase)
        rig.pass(1.5)
        #expect(rig.step(.cancel).contains(.keepFalseWake))
        // Cancelled later: the person changed their mind about a question the phrase rightly started.
        quiet()
        rig.step(.hotPhrase)
        rig.step(.endOfSpeech)
        rig.pass(2.5)
        #expect(rig.state == .searching && !rig.step(.cancel).contains(.keepFalseWake))
        // A question from the button is no wake at all.
        rig.step(.talk)
        #expect(!rig.step(.cancel).contains(.keepFalseWake))
    }

    @Test func theWordsAfterAVolumeChangeSayTheLevelOrWhyNot() {
        var rig = CoreRig.inState(.searching)
        let answer = SpeakerAnswer(transcript: "volume up", text: "OK.")
        let effects = rig.step(.answer(answer))
        // The local command goes the client action's way: the level changed, then the words for how it went.
        let volume = effects.firstIndex(of: .volume(.step(up: true)))
        let speak = effects.firstIndex(saying: .actionOutcome(nil))
        #expect(volume != nil && speak != nil && volume! < speak!)
        #expect(effects.contains(.finalWithNextWords(transcript: "volume up", done: "turned the volume up")))
        #expect(rig.step(.volumeChanged(.step(up: true), .success(VolumeLevel(percent: 60)))) == [.tell(.volume(60, soundOff: false))])
        #expect(rig.speaker.actionReply(nil).text == "Volume 60.")
        // One rule for what a volume change says, whoever understood it: the level, not Houndify's "OK.".
        #expect(rig.speaker.actionReply(ActionResponses(succeeded: "OK.")).text == "Volume 60.")
        #expect(rig.step(.volumeChanged(.to(30), .success(VolumeLevel(percent: 30)))) == [.tell(.volume(30, soundOff: false))])
        #expect(rig.speaker.actionReply(ActionResponses(succeeded: "OK.")).text == "Volume 30.")
        #expect(rig.step(.volumeChanged(.step(up: false), .success(VolumeLevel(percent: 20)))) == [.tell(.volume(20, soundOff: false))])
        #expect(rig.speaker.actionReply(nil).text == "Volume 20.")
        #expect(rig.step(.volumeChanged(.mute(true), .success(VolumeLevel(percent: 60, soundOff: true)))) == [.tell(.volume(60, soundOff: true))])
        #expect(rig.speaker.actionReply(nil).text == "Sound off.")
        let problem = DeviceProblem("mixer: card 1 is gone")
        #expect(rig.step(.volumeChanged(.to(30), .failure(problem))) == [.tell(.deviceProblem(problem))])
        #expect(rig.speaker.actionReply(ActionResponses(succeeded: "OK.", failed: "")).text == Speaker.volumeFailed)
    }

    /// A wake whose question Houndify found empty goes back to ready without a word: no `final` carries the words
    /// it did not say ("Didn't get that!"), so no screen shows them. A press that hears nothing is answered as ever.
    @Test func aWakeThatHeardNothingTellsNoFinal() {
        let nothing = SpeakerAnswer(transcript: " ", text: "Didn't get that!")
        var woken = CoreRig.inState(.ready)
        woken.step(.hotPhrase)
        woken.step(.endOfSpeech)
        let quiet = woken.step(.answer(nothing))
        #expect(woken.state == .ready)
        #expect(!quiet.contains { if case .final = $0 { true } else if case .finalWithNextWords = $0 { true } else { false } })
        var pressed = CoreRig.inState(.searching)
        #expect(pressed.step(.answer(nothing)).contains(.final(transcript: " ", answer: "Didn't get that!")))
        // The answer that comes while the press that ended the question is still down is told when it is let out.
        func isFinal(_ effect: Speaker.Effect) -> Bool { if case .final = effect { true } else { false } }
        for (answer, quiet) in [(nothing, true), (SpeakerAnswer(transcript: "what time is it", text: "It is noon."), false)] {
            var held = CoreRig.inState(.ready)
            held.step(.hotPhrase)
            held.step(.press)
            #expect(!held.step(.answer(answer)).contains(where: isFinal))
            let released = held.step(.tapEnded)
            #expect(released.first == .tell(.button(.release)))
            #expect(released.contains(where: isFinal) == !quiet, "\(answer)")
            #expect(held.state == (quiet ? .ready : .speaking))
        }
        var cancelled = CoreRig.inState(.ready)
        cancelled.step(.hotPhrase)
        cancelled.step(.press)
        cancelled.step(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        #expect(!cancelled.step(.cancel).contains(where: isFinal))  // a long press: never answered, never told
        #expect(!cancelled.step(.tapEnded).contains(where: isFinal))
    }

    @Test func anAnswersFinalIsToldWithTheWordsTheSpeakerWillSay() {
        func finals(_ answer: SpeakerAnswer) -> [Speaker.Effect] {
            var rig = CoreRig.inState(.searching)
            return rig.step(.answer(answer)).filter {
                switch $0 {
                case .final, .finalWithNextWords, .tell(.display): true
                default: false
                }
            }
        }
        let display: JSONValue = ["Title": "Noon"]
        #expect(finals(SpeakerAnswer(transcript: "what time is it", text: "It is noon.", display: display))
                == [.tell(.display(display)), .final(transcript: "what time is it", answer: "It is noon.")])
        #expect(finals(SpeakerAnswer(transcript: "stop", text: "OK.")) == [.final(transcript: "stop", answer: "", done: "stopped")])
        #expect(finals(SpeakerAnswer(transcript: "lights on", text: "Done.", action: .run(command: "lights")))
                == [.final(transcript: "lights on", answer: "Done.", done: "ran \"lights\"")])
        #expect(finals(SpeakerAnswer(transcript: "set a timer", text: "", action: .timer(.set(seconds: 60, name: ""))))
                == [.finalWithNextWords(transcript: "set a timer", done: "")])
    }

    @Test func aLocalCommandIsMatchedWhenItsTranscriptIsSet() {
        var answer = SpeakerAnswer(transcript: "what time is it", text: "It is noon.")
        #expect(answer.localCommand == nil)
        answer.transcript = "Turn it down"
        #expect(answer.localCommand == .volumeDown)
    }

    /// What the loop hears of an event the spoken enrollment takes: the button's activity, and nothing of the machine.
    @Test func anEventsOwnActivityIsToldWithoutTheMachine() {
        #expect(Speaker.announced(.press) == [.tell(.button(.talk))])
        #expect(Speaker.announced(.cancel) == [.tell(.button(.cancel))])
        #expect(Speaker.announced(.stopPhrase) == [.tell(.stopPhrase)])
        #expect(Speaker.announced(.timerDue).isEmpty)
    }

    /// With the hot phrase, the microphone is open for good (from the start, and again once unmuted) and a question
    /// records from it; a question with it missing is refused at once. Without, each question opens its own.
    @Test func theMicrophoneIsOpenForGoodOnlyForTheHotPhrase() {
        var settings = Speaker.Settings()
        settings.alwaysOnMicrophone = true
        settings.microphoneDevice = "plughw:1"
        var always = CoreRig(settings: settings)
        #expect(always.step(.started).contains(.openAlwaysOnMicrophone))
        let missing = always.step(.talk)
        #expect(!missing.contains { if case .startSearch = $0 { true } else { false } })
        // The SDK's NotReady: asked with no microphone to record it.
        #expect(missing.contains(.tell(.searchFailed(SearchError(.microphone, detail: "microphone plughw:1 is not available: nothing to record", code: "NotReady")))))
        #expect(always.state == .speaking && missing.says(.text(SearchFailure.microphone.sentence)))
        always.endSpeech(.finished)
        always.endOldestSound(.finished)
        always.step(.microphone(.opened(device: "plughw:1", rate: 16_000, channels: 1)))
        #expect(always.step(.talk).contains(.startSearch(preRoll: false, openMicrophone: false)))
        always.step(.cancel)
        #expect(!always.step(.setMuted(true)).contains(.openAlwaysOnMicrophone))
        #expect(always.step(.setMuted(false)).contains(.openAlwaysOnMicrophone))

        var muted = CoreRig(settings: settings)
        muted.speaker.restore(timers: TimerBook(), checkedAt: muted.boot, muted: true)
        #expect(!muted.step(.started).contains(.openAlwaysOnMicrophone))

        var button = CoreRig()
        #expect(!button.step(.started).contains(.openAlwaysOnMicrophone))
        #expect(button.step(.talk).contains(.startSearch(preRoll: false, openMicrophone: true)))
    }

    /// The SDK's AudioInterrupted: the microphone lost in the middle of a question ends it at once, said, and
    /// nothing half-recorded is sent; lost while the answer is awaited or spoken, it changes nothing there.
    @Test func aMicrophoneLostDuringTheQuestionEndsItAsAudioInterrupted() {
        var settings = Speaker.Settings()
        settings.microphoneDevice = "plughw:1"
        for hold in [false, true] {
            var rig = CoreRig(settings: settings)
            rig.step(.started)
            rig.step(hold ? .hold : .talk)
            let lost = rig.step(.microphone(.lost("No such device")))
            let error = SearchError(.microphone, detail: "microphone plughw:1 was lost during the question: No such device",
                                    code: "AudioInterrupted")
            #expect(lost.first == .tell(.searchFailed(error)))
            #expect(lost.contains(.cancelSearch) && !lost.contains(.endAudio))
            #expect(rig.state == .speaking && lost.says(.text(SearchFailure.microphone.sentence)))
        }
        var searching = CoreRig.inState(.searching)
        #expect(searching.step(.microphone(.lost("No such device"))).isEmpty && searching.state == .searching)
    }
}
