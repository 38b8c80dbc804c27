import Testing
import BoardCore
import AudioCore
import Timers
@testable import SpeakerCore

/// Puts a machine in `state` the way the speaker gets there.
func machine(in state: SpeakerState, settings: SpeakerMachine.Settings = .init()) -> SpeakerMachine {
    var m = SpeakerMachine(settings: settings)
    if state == .none { return m }
    _ = m.handle(.started)
    switch state {
    case .ready: break
    case .recording: _ = m.handle(.talk)
    case .searching: _ = m.handle(.talk); _ = m.handle(.endOfSpeech)
    case .speaking: _ = m.handle(.talk); _ = m.handle(.endOfSpeech); _ = m.handle(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
    case .ringing: _ = m.handle(.timerDue)
    case .enrolling: _ = m.handle(.enroll(phrase: "OK Hound", refusal: nil, fromButton: false))
    case .none: break
    }
    #expect(m.state == state)
    return m
}

let allEvents: [SpeakerEvent] = [
    .started, .talk, .hold, .endTalk, .cancel, .press, .tapEnded, .hotPhrase, .stopPhrase, .partialTranscript("what"), .endOfSpeech, .noSpeech,
    .questionLimit,
    .answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")),
    .answer(SpeakerAnswer(transcript: "set a timer", text: "For how long?", autoListen: true)),
    .searchFailed(.offline), .searchFailed(.serviceFailing), .searchFailed(.authentication), .searchFailed(.nothingHeard),
    .searchFailed(.microphone),
    .speechEnded(.finished, id: currentSound), .speechEnded(.interrupted, id: currentSound), .speechEnded(.outputFailed, id: currentSound),
    .soundEnded(.finished, id: currentSound), .soundEnded(.interrupted, id: currentSound), .soundEnded(.outputFailed, id: currentSound),
    // A sound asked for before (the answer a press stopped, an earcon), ending late: it ends only itself.
    .speechEnded(.interrupted, id: 1), .speechEnded(.finished, id: 1), .soundEnded(.finished, id: 1), .speechEnded(.interrupted, id: 99),
    .watchdog(generation: -1), .shutdown,
    .answer(SpeakerAnswer(transcript: "set a timer for ten minutes", text: "", action: .timer(.set(seconds: 600, name: "")))),
    .timerDue, .timersRunning(true), .timersRunning(true, lastMinute: true), .timersRunning(false), .toggleMute, .setMuted(true), .setMuted(false),
    .listen, .textQuery("what time is it"), .announce("Dinner is ready."), .carryOut(.volume(.to(30))), .carryOut(.muteMicrophone),
    .carryOut(.timer(.cancel(.all))), .clearConversation, .networkBack, .setupMode(true), .setupMode(false),
    .enroll(phrase: "hey kitchen", refusal: nil, fromButton: false), .enroll(phrase: "OK Hound", refusal: "the microphone is muted", fromButton: true),
    .enrollment(id: 1, .spoken), .enrollment(id: 1, .abort("stopped by the test")), .enrollment(id: 99, .captured),
]

/// In the table, the id of the sound the machine waits for (the utterance being said, the ring playing): `resolved`
/// puts in the machine's own.
let currentSound = -2

func resolved(_ event: SpeakerEvent, in m: SpeakerMachine) -> SpeakerEvent {
    switch event {
    case .speechEnded(let end, currentSound): .speechEnded(end, id: m.speakingID ?? currentSound)
    case .soundEnded(let end, currentSound): .soundEnded(end, id: m.ringingID ?? currentSound)
    default: event
    }
}

/// The state each (state, event) leads to. A current-generation watchdog is tested separately.
func expectedNext(_ state: SpeakerState, _ event: SpeakerEvent) -> SpeakerState {
    if event == .shutdown { return .none }
    // Muting stops whatever was going on; unmuting a speaker that is not muted changes nothing.
    if state != .none && (event == .toggleMute || event == .setMuted(true) || event == .carryOut(.muteMicrophone)) { return .ready }
    // A typed question cuts no one off: refused while a person asks one (recording, searching) or a timer rings;
    // otherwise searched at once, over an answer being spoken too.
    // A spoken enrollment is ended for it, as for anything that needs the speaker.
    if case .textQuery = event { return state == .ready || state == .speaking || state == .enrolling ? .searching : state }
    // An enrollment starts only in ready, and only when nothing refused it; its reports reach only its session.
    if case .enroll(_, let refusal, _) = event { return state == .ready && refusal == nil ? .enrolling : state }
    if case .enrollment(let id, let input) = event, state == .enrolling, id == 1, case .abort = input { return .ready }
    if case .enrollment = event { return state }
    // The control API's listen is a tap, except that over an answer it asks the next question.
    if event == .listen { return state == .speaking ? .recording : expectedNext(state, .talk) }
    // A hold-to-talk press is a press, but for what happens while it is held (HoldToTalkTests).
    if event == .hold { return expectedNext(state, .talk) }
    switch state {
    case .none: return event == .started ? .ready : .none
    case .ready:
        switch event {
        case .talk, .press, .hotPhrase: return .recording
        case .timerDue: return .ringing
        case .announce: return .speaking
        default: return .ready
        }
    case .recording:
        switch event {
        case .talk, .press, .endTalk, .endOfSpeech, .questionLimit: return .searching
        case .cancel: return .ready
        case .noSpeech, .answer, .searchFailed: return .speaking
        default: return .recording
        }
    case .searching:
        switch event {
        case .talk, .press, .cancel: return .ready
        case .answer, .searchFailed: return .speaking
        default: return .searching
        }
    case .speaking:
        switch event {
        case .talk, .press, .cancel, .stopPhrase: return .ready
        case .speechEnded(_, currentSound): return .ready  // this answer did not ask for a follow-up
        case .speechEnded: return .speaking  // another utterance's end, reported late: this one goes on
        case .timerDue: return .ringing  // a timer cuts an answer short
        default: return .speaking
        }
    case .ringing:
        switch event {
        case .talk, .press, .cancel, .hotPhrase, .stopPhrase, .endTalk: return .ready  // a press stops the ringing
        default: return .ringing
        }
    case .enrolling:
        switch event {
        case .talk, .press, .cancel, .hotPhrase, .stopPhrase: return .ready  // stopped, and nothing else
        case .timerDue: return .ringing  // ended, then it rings
        case .announce: return .speaking  // ended, then the announcement
        default: return .enrolling
        }
    }
}

@Suite struct SpeakerMachineTests {
    @Test(arguments: SpeakerState.allCases)
    func everyEventInEveryState(state: SpeakerState) {
        for event in allEvents {
            var m = machine(in: state)
            let before = m.state
            let effects = m.handle(resolved(event, in: m))
            #expect(m.state == expectedNext(before, event), "\(before) + \(event) -> \(m.state)")
            let changes = effects.compactMap { if case .stateChanged(let from, let to) = $0 { return (from, to) }; return nil }
            if m.state != before {
                // Every change is announced once, and LEDs follow it.
                #expect(changes.count >= 1 && changes.first?.0 == before && changes.last?.1 == m.state, "\(before) + \(event)")
                #expect(effects.contains { if case .leds = $0 { return true }; return false }, "\(before) + \(event): no LEDs")
                // Busy states are always guarded; ready and none never are.
                let armed = effects.contains { if case .armWatchdog = $0 { return true }; return false }
                let disarmed = effects.contains(.disarmWatchdog)
                if [.recording, .searching, .speaking, .ringing, .enrolling].contains(m.state) { #expect(armed, "\(before) + \(event)") } else { #expect(disarmed, "\(before) + \(event)") }
            } else {
                #expect(changes.isEmpty, "\(before) + \(event) announced a change it did not make")
            }
        }
    }

    /// Issue #64: setup mode shows on the LEDs whenever the speaker is ready (muted still says muted first), and
    /// goes once the credentials are saved; a question asked meanwhile comes back to the setup pattern.
    @Test func setupModeShowsOnTheLEDsWhileReady() {
        var m = machine(in: .ready)
        #expect(m.handle(.setupMode(true)) == [.leds(.setup)])
        #expect(m.handle(.setupMode(true)) == [])
        #expect(m.handle(.talk).contains(.leds(.listening)))
        #expect(m.handle(.setupMode(true)) == [])
        #expect(m.handle(.cancel).contains(.leds(.setup)))
        #expect(m.handle(.setMuted(true)).last == .leds(.muted))
        #expect(m.handle(.setMuted(false)).last == .leds(.setup))
        #expect(m.handle(.setupMode(false)) == [.leds(.ready)])
        #expect(!m.settingUp)
    }

    @Test func everyWayOutOfRecordingClosesTheMicrophoneAndTheUpload() {
        // A search that failed while the person was still speaking once left the capture running, and every later
        // query uploaded the audio two or three times over.
        for event in allEvents {
            var m = machine(in: .recording)
            let effects = m.handle(event)
            guard m.state != .recording else { continue }
            // (A press leaves the upload open but unfinished until the button comes up: stopRecording.)
            #expect(effects.contains(.endAudio) || effects.contains(.cancelSearch) || effects.contains(.stopRecording),
                    "recording + \(event) left the microphone open")
        }
        var m = machine(in: .recording)
        #expect(m.handle(.searchFailed(.authentication)).first == .cancelSearch)
    }

    @Test(arguments: [SpeakerState.recording, .searching, .speaking])
    func theWatchdogEndsEveryBusyStateAndSaysWhy(state: SpeakerState) {
        var m = machine(in: state)
        let effects = m.handle(.watchdog(generation: m.watchdogGeneration))
        #expect(effects.plays(.error))
        #expect(effects.contains(state == .speaking ? .stopSpeaking : .cancelSearch))
        switch state {
        case .recording:
            // No end of speech within the limit: no audio has been arriving.
            #expect(effects.says(.text(SearchFailure.microphone.sentence)))
            #expect(m.state == .speaking)
        case .searching:
            #expect(effects.says(.text(SearchFailure.serviceFailing.sentence)))
            #expect(m.state == .speaking)
        default:
            // The speech output is what hangs: the earcon says it, and the speaker is ready again.
            #expect(m.state == .ready)
        }
    }

    @Test func ourOwnSoundLastsUntilTheLastEarconAndSentenceHaveEnded() {
        // An error earcon and then the spoken failure: the earcon's end must not let the hot phrase hear the
        // sentence that is still being spoken.
        var m = machine(in: .searching)
        _ = m.endOldestSound(.finished)  // the start-listening earcon
        _ = m.endOldestSound(.finished)  // the stop-listening earcon
        #expect(!m.soundPlaying)
        _ = m.handle(.searchFailed(.offline))
        #expect(m.soundPlaying)
        _ = m.endOldestSound(.finished)  // the error earcon
        #expect(m.soundPlaying)
        _ = m.endSpeech(.finished)
        #expect(m.state == .ready && !m.soundPlaying)
        #expect(m.handle(.hotPhrase).contains(.startSearch(preRoll: true)))
        // More ends than starts (a stray event) never make the count negative.
        var n = machine(in: .ready)
        _ = n.endOldestSound(.finished)
        _ = n.endSpeech(.interrupted)
        #expect(n.soundsPlaying == 0)
    }

    @Test(arguments: ["", "  ", "\n"])
    func anAnswerWithNothingToSayIsNotSilence(text: String) {
        var m = machine(in: .searching)
        let e = m.handle(.answer(SpeakerAnswer(transcript: "what time is it", text: text)))
        #expect(e.says(.text(SpeakerAnswer.nothingToSay)))
    }

    @Test func partialTranscriptsLogNothing() {
        // One query can bring hundreds of partials: the loop shows them at debug level, the machine says nothing.
        var m = machine(in: .recording)
        #expect(m.handle(.partialTranscript("what time")).isEmpty)
    }

    @Test func buttonQueryFromStartToAnswer() {
        var m = machine(in: .ready)
        var e = m.handle(.talk)
        #expect(e.plays(.startListening) && e.contains(.leds(.listening)) && e.contains(.startSearch(preRoll: false)))
        e = m.handle(.endOfSpeech)
        #expect(e.contains(.endAudio) && e.contains(.leds(.searching)))
        e = m.handle(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        #expect(e.says(.text("It is noon.")) && e.contains(.leds(.speaking)))
        e = m.endSpeech(.finished)
        #expect(m.state == .ready && e.contains(.leds(.ready)))
    }

    /// A long press while recording: its press ends the recording, its long press cancels. The question is not
    /// sent whole until the button comes up as a tap (it once reached Houndify anyway); an answer that arrives in
    /// between once played for about a second before the cancel; now it waits for the button.
    @Test func aLongPressWhileRecordingCancelsBeforeTheAnswerPlays() {
        let answer = SpeakerEvent.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon."))
        for outcome in [answer, .searchFailed(.offline)] {
            var m = machine(in: .recording)
            let pressed = m.handle(.press)
            #expect(pressed.contains(.stopRecording) && !pressed.contains(.endAudio))
            #expect(m.state == .searching)
            let early = m.handle(outcome)
            #expect(m.state == .searching, "\(outcome)")
            #expect(!early.contains { if case .speak = $0 { return true }; if case .playEarcon = $0 { return true }; return false })
            let cancel = m.handle(.cancel)
            #expect(m.state == .ready && cancel.contains(.cancelSearch) && cancel.plays(.cancel))
            #expect(m.handle(.tapEnded).isEmpty)  // the long press's release: nothing more
            #expect(!cancel.contains { if case .speak = $0 { return true }; return false })  // nothing of it is said
        }
    }

    /// A short tap that ends the question: the answer that came while the button was still down plays on release,
    /// and one that comes after the release plays at once.
    @Test func aShortTapThatEndsTheQuestionPlaysTheAnswerOnRelease() {
        let answer = SpeakerEvent.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon."))
        var m = machine(in: .recording)
        _ = m.handle(.press)
        #expect(!m.handle(answer).says(.text("It is noon.")))
        let released = m.handle(.tapEnded)
        #expect(released.says(.text("It is noon.")) && m.state == .speaking)

        var late = machine(in: .recording)
        _ = late.handle(.press)
        #expect(late.handle(.tapEnded) == [.endAudio] && late.state == .searching)
        #expect(late.handle(answer).says(.text("It is noon.")))
        // A talk with no release to come (a script, the hot phrase's follow-up) never holds its answer.
        var scripted = machine(in: .recording)
        _ = scripted.handle(.talk)
        #expect(scripted.handle(answer).says(.text("It is noon.")))
    }

    /// A speaker that could not play: ready shows the error pattern (nothing else can tell the person), until a
    /// sound plays through again. An interrupted one proves nothing either way.
    @Test func aFailedOutputShowsTheErrorPatternUntilASoundPlays() {
        var m = machine(in: .speaking)
        #expect(m.endSpeech(.outputFailed).contains(.leds(.error)))  // nothing was heard
        #expect(m.state == .ready && m.outputMissing)
        _ = m.handle(.talk)
        _ = m.handle(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        let stopped = m.speakingID!
        _ = m.handle(.talk)  // stopped: interrupted, so nothing is known
        #expect(m.handle(.speechEnded(.interrupted, id: stopped)).isEmpty && m.outputMissing)
        // In ready: an earcon that failed shows the error pattern at once; the next one that plays through, ready.
        var again = machine(in: .ready)
        _ = again.handle(.toggleMute)
        _ = again.handle(.toggleMute)  // two earcons: mute on, mute off
        let (on, off) = (again.playing.min()!, again.playing.max()!)
        #expect(again.handle(.soundEnded(.outputFailed, id: on)) == [.leds(.error)] && again.outputMissing)
        #expect(again.handle(.soundEnded(.outputFailed, id: on)).isEmpty && again.outputMissing)  // told twice: nothing
        #expect(again.handle(.soundEnded(.finished, id: off)) == [.leds(.ready)] && !again.outputMissing)
    }

    @Test func holdToTalkReleaseEndsTheQuestion() {
        var m = machine(in: .recording)
        #expect(m.handle(.endTalk).contains(.endAudio))
        #expect(m.state == .searching)
    }

    @Test func pressWhileSpeakingStopsAtOnce() {
        var m = machine(in: .speaking)
        let e = m.handle(.talk)
        #expect(e.first == .stopSpeaking)
        #expect(m.state == .ready)
        // The interruption that follows changes nothing.
        #expect(m.endSpeech(.interrupted).isEmpty)
        #expect(m.state == .ready)
    }

    @Test func hotPhraseKeepsPreRollAndIsIgnoredWhileOurOwnSoundPlays() {
        var m = machine(in: .ready)
        #expect(m.handle(.hotPhrase).contains(.startSearch(preRoll: true)))
        _ = m.endOldestSound(.finished)  // the start-listening earcon
        _ = m.handle(.cancel)  // plays the cancel earcon, back in ready
        #expect(m.state == .ready && m.soundPlaying)
        #expect(m.handle(.hotPhrase).isEmpty)
        #expect(m.state == .ready)
        // The button still works while the earcon plays.
        #expect(m.handle(.talk).contains(.startSearch(preRoll: false)))
        _ = m.handle(.cancel)
        // Three earcons were asked for (cancel, start listening, cancel): all three end before it listens again.
        _ = m.endOldestSound(.finished)
        _ = m.endOldestSound(.finished)
        #expect(m.soundPlaying)
        _ = m.endOldestSound(.finished)
        #expect(m.handle(.hotPhrase).contains(.startSearch(preRoll: true)))
    }

    @Test func autoListenAsksAgainAfterSpeaking() {
        var m = machine(in: .searching)
        _ = m.handle(.answer(SpeakerAnswer(transcript: "set a timer", text: "For how long?", autoListen: true)))
        let e = m.endSpeech(.finished)
        #expect(m.state == .recording)
        #expect(e.contains(.startSearch(preRoll: false)))
        // Interrupting the question cancels the follow-up.
        var n = machine(in: .searching)
        _ = n.handle(.answer(SpeakerAnswer(transcript: "set a timer", text: "For how long?", autoListen: true)))
        _ = n.handle(.talk)
        _ = n.endSpeech(.interrupted)
        #expect(n.state == .ready)
    }

    @Test func followUpModeReopensAfterEachAnswerAndSilenceEndsItQuietly() {
        var settings = SpeakerMachine.Settings()
        settings.followUp = true
        var m = machine(in: .searching, settings: settings)
        _ = m.handle(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        // Only once the answer has played to its end, with the listening LEDs.
        let reopened = m.endSpeech(.finished)
        #expect(m.state == .recording && reopened.contains(.startSearch(preRoll: false)) && reopened.contains(.leds(.listening)))
        // Nothing said: back to ready without "I didn't hear anything".
        let silence = m.handle(.noSpeech)
        #expect(m.state == .ready && !silence.contains { if case .speak = $0 { true } else { false } })
        #expect(silence.contains(.cancelSearch))
        // "Thank you" in the follow-up ends it too, silently.
        var n = machine(in: .searching, settings: settings)
        _ = n.handle(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        _ = n.endSpeech(.finished)
        _ = n.handle(.endOfSpeech)
        let thanks = n.handle(.answer(SpeakerAnswer(transcript: "thank you", text: "You're welcome.")))
        #expect(n.state == .ready && !thanks.contains { if case .speak = $0 { true } else { false } })
        // An error is not followed up, nor an answer the output could not play, nor anything when muted.
        var o = machine(in: .searching, settings: settings)
        _ = o.handle(.searchFailed(.offline))
        _ = o.endSpeech(.finished)
        #expect(o.state == .ready)
        var p = machine(in: .searching, settings: settings)
        _ = p.handle(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        _ = p.endSpeech(.outputFailed)
        #expect(p.state == .ready)
        // Without follow-up mode, silence after AutoListen is still told.
        var q = machine(in: .searching)
        _ = q.handle(.answer(SpeakerAnswer(transcript: "set a timer", text: "For how long?", autoListen: true)))
        _ = q.endSpeech(.finished)
        #expect(q.handle(.noSpeech).says(.text(SearchFailure.nothingHeard.sentence)))
    }

    @Test(arguments: SearchFailure.allCases)
    func failuresAreSpokenWithTheErrorLEDs(failure: SearchFailure) {
        var m = machine(in: .searching)
        let e = m.handle(.searchFailed(failure))
        #expect(e.says(.text(failure.sentence)) && e.contains(.leds(.error)) && e.plays(.error))
        let after = m.endSpeech(.finished)
        #expect(m.state == .ready)
        #expect(after.contains(.leds(failure == .offline ? .offline : .ready)))
    }

    @Test func offlineShowsUntilARequestWorks() {
        var m = machine(in: .searching)
        _ = m.handle(.searchFailed(.offline))
        _ = m.endSpeech(.finished)
        #expect(m.offline)
        _ = m.handle(.talk)
        _ = m.handle(.endOfSpeech)
        _ = m.handle(.answer(SpeakerAnswer(transcript: "hi", text: "Hello.")))
        #expect(!m.offline)
        #expect(m.endSpeech(.finished).contains(.leds(.ready)))
    }

    @Test func nothingHeardIsSaid() {
        var m = machine(in: .recording)
        let e = m.handle(.noSpeech)
        #expect(e.first == .cancelSearch)
        #expect(e.says(.text("Sorry, I didn't hear anything.")))
    }

    /// Issue #37: a hot-phrase wake that hears nothing goes back to ready with the earcon and LEDs only; a press
    /// that hears nothing is still told so (a person is there).
    @Test func aHotPhraseWakeThatHearsNothingIsQuiet() {
        var m = machine(in: .ready)
        _ = m.handle(.hotPhrase)
        #expect(m.state == .recording && m.wokenByHotPhrase)
        let e = m.handle(.noSpeech)
        #expect(e.first == .cancelSearch)
        #expect(e.plays(.stopListening) && e.contains(.leds(.ready)))
        #expect(!e.contains { if case .speak = $0 { true } else { false } })
        #expect(m.state == .ready)
        // The next question, by the button, is not a hot-phrase one.
        _ = m.handle(.talk)
        #expect(!m.wokenByHotPhrase)
        #expect(m.handle(.noSpeech).says(.text(SearchFailure.nothingHeard.sentence)))
    }

    /// Issue #37: which wakes become the household's false wakes. A hot-phrase wake that hears nothing, or
    /// whose recording Houndify found empty, or that is cancelled while it listens or searches; never a
    /// question started by the button, nor a cancel of an answer being spoken.
    @Test func onlyHotPhraseWakesThatCameToNothingAreFalseWakes() {
        func falseWakes(_ effects: [SpeakerEffect]) -> [FalseWake] {
            effects.compactMap { if case .falseWake(let w) = $0 { w } else { nil } }
        }
        func woken() -> SpeakerMachine {
            var m = machine(in: .ready)
            _ = m.handle(.hotPhrase)
            return m
        }
        var m = woken()
        #expect(falseWakes(m.handle(.noSpeech)) == [.heardNothing])
        m = woken()
        #expect(falseWakes(m.handle(.cancel)) == [.cancelled])
        m = woken()
        _ = m.handle(.endOfSpeech)
        #expect(m.state == .searching)
        #expect(falseWakes(m.handle(.cancel)) == [.cancelled])
        m = woken()
        #expect(falseWakes(m.handle(.answer(SpeakerAnswer(transcript: " ", text: "")))) == [.heardNothing])
        // an answered wake is no false wake, nor is stopping its answer
        m = woken()
        #expect(falseWakes(m.handle(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))).isEmpty)
        #expect(m.state == .speaking)
        #expect(falseWakes(m.handle(.cancel)).isEmpty)
        // the button's questions never are
        var n = machine(in: .ready)
        _ = n.handle(.talk)
        #expect(falseWakes(n.handle(.noSpeech)).isEmpty)
        n = machine(in: .ready)
        _ = n.handle(.talk)
        #expect(falseWakes(n.handle(.cancel)).isEmpty)
    }

    /// Issue #37: an answered wake (Houndify heard words after the hot phrase) is said once, when its answer has
    /// been heard to the end (at once where nothing is spoken); a wake with no words, an answer stopped or cut
    /// short, and any question the button started, are not.
    @Test func onlyHotPhraseWakesWithWordsHeardToTheEndAreAnsweredWakes() {
        func answered(_ effects: [SpeakerEffect]) -> Int { effects.filter { $0 == .answeredWake }.count }
        func held(_ effects: [SpeakerEffect]) -> Int { effects.filter { $0 == .holdAnsweredWake }.count }
        func woken(_ settings: SpeakerMachine.Settings = .init()) -> SpeakerMachine {
            var m = machine(in: .ready, settings: settings)
            _ = m.handle(.hotPhrase)
            return m
        }
        let noon = SpeakerAnswer(transcript: "what time is it", text: "It is noon.")
        var m = woken()
        var effects = m.handle(.answer(noon))
        // set aside as it is when the answer comes, learned only once that answer has been heard out
        #expect(held(effects) == 1 && answered(effects) == 0)
        #expect(m.state == .speaking)
        #expect(answered(m.endSpeech(.finished)) == 1)
        #expect(m.state == .ready)
        m = woken()
        #expect(answered(m.handle(.answer(SpeakerAnswer(transcript: "set a timer for 5 minutes", text: "Done.",
                                                         action: .timer(.set(seconds: 300, name: "")))))) == 0)
        #expect(answered(m.endSpeech(.finished)) == 1)
        // stopped by a press, by "stop", or cut short: a false wake mid-conversation is answered too
        for stop in [SpeakerEvent.press, .stopPhrase] {
            m = woken()
            _ = m.handle(.answer(noon))
            #expect(answered(m.handle(stop)) == 0)
            #expect(m.state == .ready)
            #expect(answered(m.endSpeech(.interrupted)) == 0)
        }
        for end in [SoundEnd.interrupted, .outputFailed] {
            m = woken()
            _ = m.handle(.answer(noon))
            #expect(answered(m.endSpeech(end)) == 0)
        }
        // "OK Hound" over the answer: that answer teaches nothing, and the next wake's answer is its own
        m = woken(BargeInMachineTests.bargeIn)
        _ = m.handle(.answer(noon))
        _ = m.handle(.hotPhrase)
        #expect(m.state == .recording)
        _ = m.handle(.endOfSpeech)
        #expect(answered(m.handle(.answer(noon))) == 0)
        #expect(answered(m.endSpeech(.finished)) == 1)
        // an answer a person stopped leaves nothing behind for a later answer to the button or a typed question
        m = woken()
        _ = m.handle(.answer(noon))
        _ = m.handle(.press)
        _ = m.handle(.talk)
        _ = m.handle(.endOfSpeech)
        _ = m.handle(.answer(noon))
        #expect(answered(m.endSpeech(.finished)) == 0)
        // nothing spoken: told at once
        var quiet = SpeakerMachine.Settings()
        quiet.enableSpeech = false
        m = woken(quiet)
        effects = m.handle(.answer(noon))
        #expect(effects.filter { $0 == .holdAnsweredWake || $0 == .answeredWake } == [.holdAnsweredWake, .answeredWake])
        #expect(m.state == .ready)
        m = woken()
        #expect(held(m.handle(.answer(SpeakerAnswer(transcript: " ", text: "")))) == 0)
        m = woken()
        #expect(answered(m.handle(.noSpeech)) == 0)
        var n = machine(in: .ready)
        _ = n.handle(.talk)
        #expect(held(n.handle(.answer(noon))) == 0)
        #expect(answered(n.endSpeech(.finished)) == 0)
    }

    @Test func aCancelCountsOnlyWithinTwoSecondsOfTheWake() {
        #expect(FalseWake.kept(.cancelled, sinceWake: .milliseconds(300)))
        #expect(FalseWake.kept(.cancelled, sinceWake: .seconds(2)))
        #expect(!FalseWake.kept(.cancelled, sinceWake: .milliseconds(2001)))
        #expect(FalseWake.kept(.heardNothing, sinceWake: .seconds(8)))
    }

    /// Houndify heard no words after the hot phrase (a noise ended the recording): quiet too; the same answer to
    /// a press is spoken.
    @Test func aHotPhraseWakeWithAnEmptyTranscriptIsQuiet() {
        let nothing = SpeakerAnswer(transcript: " ", text: "Didn't get that!")
        var m = machine(in: .ready)
        _ = m.handle(.hotPhrase)
        _ = m.handle(.endOfSpeech)
        let e = m.handle(.answer(nothing))
        #expect(!e.contains { if case .speak = $0 { true } else { false } })
        #expect(e.contains(.leds(.ready)) && m.state == .ready)
        var pressed = machine(in: .searching)
        #expect(pressed.handle(.answer(nothing)).says(.text("Didn't get that!")))
        // Words after the hot phrase are answered as ever (once the earcons have ended: the hot phrase is not
        // listened for over our own sound).
        while m.soundPlaying { _ = m.endOldestSound(.finished) }
        _ = m.handle(.hotPhrase)
        _ = m.handle(.endOfSpeech)
        #expect(m.handle(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon."))).says(.text("It is noon.")))
    }

    @Test func localCommandsComeBeforeTheServersAnswer() {
        var m = machine(in: .searching)
        var e = m.handle(.answer(SpeakerAnswer(transcript: "Volume up", text: "server text")))
        #expect(e.contains(.volume(.step(up: true))) && e.says(.actionOutcome(nil)))
        m = machine(in: .searching)
        e = m.handle(.answer(SpeakerAnswer(transcript: "what's your IP address", text: "server text")))
        #expect(e.says(.ipAddress))
        m = machine(in: .searching)
        e = m.handle(.answer(SpeakerAnswer(transcript: "stop", text: "server text")))
        #expect(m.state == .ready && !e.contains { if case .speak = $0 { return true }; return false })
        #expect(LocalCommand.match("turn the volume down please") == .volumeDown)
        #expect(LocalCommand.match("what time is it") == nil)
        #expect(LocalCommand.match("don't stop believing") == nil)
    }

    @Test func speechOffShowsTheAnswerInstead() {
        var settings = SpeakerMachine.Settings()
        settings.enableSpeech = false
        var m = machine(in: .searching, settings: settings)
        let e = m.handle(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        #expect(e.contains(.show(.text("It is noon."))))
        #expect(!e.contains { if case .speak = $0 { return true }; return false })
        #expect(m.state == .ready)
    }

    @Test func staleWatchdogsAreIgnored() {
        var m = machine(in: .recording)
        let old = m.watchdogGeneration
        _ = m.handle(.endOfSpeech)
        #expect(m.handle(.watchdog(generation: old)).isEmpty)
        #expect(m.state == .searching)
    }

    @Test func shutdownFromAnywhereTurnsTheLEDsOff() {
        for state in SpeakerState.allCases {
            var m = machine(in: state)
            let e = m.handle(.shutdown)
            #expect(e.contains(.leds(.off)) && e.last == .stopped)
            if state == .recording || state == .searching { #expect(e.contains(.cancelSearch)) }
        }
    }
}

@Suite struct BargeInMachineTests {
    static let bargeIn: SpeakerMachine.Settings = { var s = SpeakerMachine.Settings(); s.bargeIn = true; return s }()

    @Test func theHotPhraseOverAnAnswerStopsItAndListensWithBargeIn() {
        var m = machine(in: .speaking, settings: Self.bargeIn)
        let effects = m.handle(.hotPhrase)
        #expect(effects.first == .stopSpeaking)
        #expect(effects.contains(.startSearch(preRoll: true)))
        #expect(effects.contains(.leds(.listening)))
        #expect(m.state == .recording)
        // Without barge-in (the microphone hears the speaker itself), a detection over the answer changes nothing.
        var plain = machine(in: .speaking)
        #expect(plain.handle(.hotPhrase).isEmpty)
        #expect(plain.state == .speaking)
    }

    /// What the detector is told plays: a ring while it rings, an answer while it speaks, and the last of a ring
    /// stopped by a press (its end not yet reported) as an answer, at the stricter threshold.
    @Test func ownSoundTellsARingFromAnAnswer() {
        var m = machine(in: .ringing)
        #expect(m.ownSound == .ring)
        _ = m.handle(.talk)
        #expect(m.state != .ringing && m.soundPlaying && m.ownSound == .answer)
        #expect(machine(in: .speaking).ownSound == .answer)
        var quiet = machine(in: .ready)
        while quiet.soundPlaying { _ = quiet.endOldestSound(.finished) }
        #expect(quiet.ownSound == .none)
    }

    @Test func theHotPhraseOverTheRingStopsItAndListensWithBargeIn() {
        var m = machine(in: .ringing, settings: Self.bargeIn)
        let effects = m.handle(.hotPhrase)
        #expect(Array(effects.prefix(2)) == [.stopSpeaking, .stopRinging])
        #expect(effects.contains(.startSearch(preRoll: true)))
        #expect(m.state == .recording)
        // Without it, the ring stops and that is all (as a press does).
        var plain = machine(in: .ringing)
        #expect(!plain.handle(.hotPhrase).contains(.startSearch(preRoll: true)))
        #expect(plain.state == .ready)
    }

    @Test func aMutedSpeakerIgnoresTheHotPhraseOverItsOwnSound() {
        var m = machine(in: .ready, settings: Self.bargeIn)
        _ = m.handle(.setMuted(true))
        _ = m.handle(.textQuery("what time is it"))
        _ = m.handle(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        #expect(m.state == .speaking)
        #expect(m.handle(.hotPhrase).isEmpty)
        #expect(m.state == .speaking)
    }

    @Test func withBargeInADetectionDuringAnEarconInReadyStillListens() {
        for bargeIn in [true, false] {
            var m = machine(in: .ready, settings: bargeIn ? Self.bargeIn : .init())
            _ = m.handle(.toggleMute)
            _ = m.handle(.toggleMute)  // unmuted again, its earcon still playing
            #expect(m.state == .ready && m.soundPlaying)
            let effects = m.handle(.hotPhrase)
            #expect(effects.contains(.startSearch(preRoll: true)) == bargeIn)
            #expect(m.state == (bargeIn ? .recording : .ready))
        }
    }
}

/// Hold-to-talk: the question is the person's to end while they hold the button (issue #35: it ended at the
/// first pause while the button was still held).
@Suite struct HoldToTalkTests {
    func holding() -> SpeakerMachine {
        var m = machine(in: .ready)
        let effects = m.handle(.hold)
        #expect(m.state == .recording)
        // The upload is the person's to end: the service's SafeToStopAudio does not end it.
        #expect(effects.contains(.startSearch(preRoll: false, held: true)))
        return m
    }

    @Test func theLongestQuestionIsSentWhileHeld() {
        var m = holding()
        let effects = m.handle(.questionLimit)
        #expect(m.state == .searching && effects.contains(.endAudio) && !effects.plays(.error))
        var tapped = machine(in: .recording)
        #expect(tapped.handle(.questionLimit).contains(.endAudio) && tapped.state == .searching)
    }

    @Test func aPauseWhileHeldKeepsListening() {
        var m = holding()
        #expect(m.handle(.endOfSpeech) == [])
        #expect(m.handle(.noSpeech) == [])
        #expect(m.state == .recording)
        // The release ends it, and the question is sent.
        let effects = m.handle(.endTalk)
        #expect(m.state == .searching)
        #expect(effects.contains(.endAudio))
    }

    @Test func aTapOrAScriptStillEndsAtThePause() {
        var m = machine(in: .recording)  // by .talk, which has no release
        _ = m.handle(.endOfSpeech)
        #expect(m.state == .searching)
        var tapped = machine(in: .ready)
        _ = tapped.handle(.press)
        _ = tapped.handle(.tapEnded)
        _ = tapped.handle(.endOfSpeech)
        #expect(tapped.state == .searching)
    }

    @Test func heldPastTheRecordingLimitTheQuestionIsSentNotFailed() {
        var m = holding()
        let effects = m.handle(.watchdog(generation: m.watchdogGeneration))
        #expect(m.state == .searching)
        #expect(effects.contains(.endAudio))
        #expect(!effects.plays(.error))
    }

    @Test func aLongHoldCanStillBeCancelledAndTheAnswerStillArrives() {
        var cancelled = holding()
        _ = cancelled.handle(.cancel)
        #expect(cancelled.state == .ready)
        var answered = holding()
        _ = answered.handle(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        #expect(answered.state == .speaking)
    }

    @Test func holdingWhileMutedSaysSo() {
        var m = machine(in: .ready)
        _ = m.handle(.setMuted(true))
        let effects = m.handle(.hold)
        #expect(m.state == .speaking)
        #expect(effects.says(.text(SpeakerMachine.mutedSentence)))
    }

    /// The next press after the hold-to-talk question is a new question (held again), not left over.
    @Test func theNextHoldIsHeldToo() {
        var m = holding()
        _ = m.handle(.endTalk)
        _ = m.handle(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        _ = m.endSpeech(.finished)
        #expect(m.state == .ready)
        _ = m.handle(.hold)
        #expect(m.handle(.endOfSpeech) == [])
        #expect(m.state == .recording)
    }
}
