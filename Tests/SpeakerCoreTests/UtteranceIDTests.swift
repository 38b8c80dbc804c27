import Testing
import AudioCore
import BoardCore
@testable import SpeakerCore

/// Every utterance and earcon has an id from its start to its end, and an end applies only to its own sound: the
/// answer a press or Stop stopped reports its end after the next one has started, and must not end that one.
@Suite struct UtteranceIDTests {
    static let noon = SpeakerAnswer(transcript: "what time is it", text: "It is noon.")

    /// The id of the utterance `effects` ask for.
    func utterance(_ effects: [SpeakerEffect]) -> Int? {
        effects.lazy.compactMap { if case .speak(_, let id) = $0 { id } else { nil } }.first
    }

    /// What a late end of `stopped` must leave alone: the speaker still speaking `current`, and a press then stops it.
    func expectStillSpeaking(_ m: inout SpeakerMachine, current: Int, afterLateEndOf stopped: Int) {
        #expect(m.handle(.speechEnded(.interrupted, id: stopped)).isEmpty)
        #expect(m.state == .speaking && m.speakingID == current && m.soundPlaying)
        let press = m.handle(.press)
        #expect(press.first == .stopSpeaking && m.state == .ready)
        #expect(!press.contains(.startSearch(preRoll: false)))  // it stops the sound; it does not listen over it
        _ = m.handle(.speechEnded(.interrupted, id: current))
        #expect(m.state == .ready && !m.playing.contains(current))
    }

    @Test func theStopCommandThenAnAnnouncement() {
        var m = machine(in: .speaking)
        let answer = m.speakingID!
        #expect(m.handle(.cancel).first == .stopSpeaking)
        let said = m.handle(.announce("Dinner is ready."))
        let announcement = utterance(said)!
        #expect(said.says(.text("Dinner is ready.")) && said.plays(.announce) && announcement != answer)
        expectStillSpeaking(&m, current: announcement, afterLateEndOf: answer)
    }

    @Test func aTypedQuestionOverAnAnswer() {
        var m = machine(in: .speaking)
        let answer = m.speakingID!
        let typed = m.handle(.textQuery("what is the weather"))
        #expect(typed.first == .stopSpeaking && m.state == .searching)
        let next = utterance(m.handle(.answer(SpeakerAnswer(transcript: "what is the weather", text: "Sunny."))))!
        expectStillSpeaking(&m, current: next, afterLateEndOf: answer)
    }

    @Test func aPressThatStopsAnAnswerWhileAnAnnouncementWaits() {
        var m = machine(in: .speaking)
        let answer = m.speakingID!
        #expect(m.handle(.announce("The laundry is done.")).isEmpty)  // waits for the answer
        let press = m.handle(.press)
        #expect(press.first == .stopSpeaking && m.state == .speaking)  // ready, then the announcement at once
        let announcement = utterance(press)!
        expectStillSpeaking(&m, current: announcement, afterLateEndOf: answer)
    }

    @Test func anAnswerEndsSpeakingOnlyWithItsOwnEnd() {
        var m = machine(in: .speaking)
        let answer = m.speakingID!
        #expect(m.handle(.speechEnded(.finished, id: answer + 1000)).isEmpty)  // no such utterance
        #expect(m.state == .speaking)
        #expect(m.handle(.speechEnded(.finished, id: answer)).contains(.leds(.ready)))
        #expect(m.state == .ready && !m.playing.contains(answer))
    }

    @Test func onlyTheRingsOwnEndPlaysTheNextRing() {
        var m = machine(in: .ringing)
        let ring = m.ringingID!
        // Another sound's end (an earcon asked for before) starts no second ring over the first.
        #expect(m.handle(.soundEnded(.finished, id: ring + 1000)).isEmpty)
        let next = m.handle(.soundEnded(.finished, id: ring))
        #expect(next.plays(.timer) && m.ringingID != ring && m.state == .ringing)
        // The ring stopped by a press: its end rings nothing more.
        let stopped = m.ringingID!
        _ = m.handle(.press)
        #expect(m.handle(.soundEnded(.interrupted, id: stopped)).isEmpty && m.state == .ready && !m.soundPlaying)
    }

    @Test func everySoundHasItsOwnIDAndIsPlayingUntilItsEnd() {
        var m = machine(in: .ready)
        var ids: [Int] = []
        ids += m.handle(.talk).soundIDs
        ids += m.handle(.endOfSpeech).soundIDs
        ids += m.handle(.searchFailed(.offline)).soundIDs  // the error earcon and the sentence
        #expect(ids.count == 4 && Set(ids).count == 4 && m.playing == Set(ids))
        for id in ids.dropLast() { _ = m.handle(.soundEnded(.finished, id: id)) }
        #expect(m.state == .speaking && m.soundPlaying)
        _ = m.handle(.speechEnded(.finished, id: ids.last!))
        #expect(m.state == .ready && !m.soundPlaying)
    }
}
