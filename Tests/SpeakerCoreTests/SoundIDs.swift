import AudioCore
@testable import SpeakerCore

// Every sound the machine asks for has an id; these say what was asked without naming the id, and end the sound
// the machine waits for as the loop would report it.

extension Array where Element == SpeakerEffect {
    func says(_ utterance: Utterance) -> Bool { firstIndex(saying: utterance) != nil }
    func plays(_ earcon: Earcon) -> Bool { contains { if case .playEarcon(earcon, _) = $0 { true } else { false } } }
    func firstIndex(saying utterance: Utterance) -> Int? {
        firstIndex { if case .speak(let said, _) = $0 { said == utterance } else { false } }
    }
    /// The ids of the utterances and earcons asked for, in order.
    var soundIDs: [Int] {
        compactMap {
            switch $0 {
            case .speak(_, let id), .playEarcon(_, let id): id
            default: nil
            }
        }
    }
}

extension Array where Element == Speaker.Effect {
    func says(_ utterance: Utterance) -> Bool { firstIndex(saying: utterance) != nil }
    func plays(_ earcon: Earcon) -> Bool { contains { if case .playEarcon(earcon, _) = $0 { true } else { false } } }
    func firstIndex(saying utterance: Utterance) -> Int? {
        firstIndex { if case .speak(let said, _) = $0 { said == utterance } else { false } }
    }
}

extension SpeakerMachine {
    /// The utterance being said has ended (in no state but speaking: an end of nothing, which changes nothing).
    @discardableResult mutating func endSpeech(_ end: SoundEnd = .finished) -> [SpeakerEffect] {
        handle(.speechEnded(end, id: speakingID ?? -1))
    }

    /// The oldest sound still playing has ended: an earcon, or the utterance if it is the oldest.
    @discardableResult mutating func endOldestSound(_ end: SoundEnd = .finished) -> [SpeakerEffect] {
        guard let id = playing.min() else { return handle(.soundEnded(end, id: -1)) }
        return id == speakingID ? handle(.speechEnded(end, id: id)) : handle(.soundEnded(end, id: id))
    }
}

extension CoreRig {
    @discardableResult mutating func endSpeech(_ end: SoundEnd = .finished) -> [Speaker.Effect] {
        step(.speechEnded(end, id: speaker.machine.speakingID ?? -1))
    }

    @discardableResult mutating func endOldestSound(_ end: SoundEnd = .finished) -> [Speaker.Effect] {
        guard let id = speaker.machine.playing.min() else { return step(.soundEnded(end, id: -1)) }
        return id == speaker.machine.speakingID ? step(.speechEnded(end, id: id)) : step(.soundEnded(end, id: id))
    }
}
