/// The speaker's states, as the Hound SDK names them (docs/houndify-protocol.md, "Speaker states"): none (not
/// listening), ready (waiting for the button or the hot phrase), recording (streaming the question), searching
/// (waiting for the answer), speaking.
public enum SpeakerState: String, Sendable, CaseIterable {
    case none, ready, recording, searching, speaking
}

/// What went wrong with a search, as the person is told it.
public enum SearchFailure: String, Sendable, CaseIterable {
    /// No network, DNS, refused, TLS: "I can't reach the internet."
    case offline
    /// Houndify answered badly or not at all.
    case serviceFailing
    /// The client ID or key was refused.
    case authentication
    /// Nothing was said.
    case nothingHeard
    /// The microphone cannot be opened, or stopped delivering audio.
    case microphone

    public var sentence: String {
        switch self {
        case .offline: "I can't reach the internet."
        case .serviceFailing: "Houndify isn't answering right now."
        case .authentication: "My Houndify key was refused."
        case .nothingHeard: "Sorry, I didn't hear anything."
        case .microphone: "I can't hear you: my microphone isn't working."
        }
    }
}

/// The answer to a query, reduced to what the speaker acts on.
public struct SpeakerAnswer: Sendable, Equatable {
    public var transcript: String
    public var text: String
    public var autoListen: Bool
    /// Said when Houndify's answer carries no text to speak.
    public static let nothingToSay = "Sorry, Houndify sent me an answer with nothing to say."

    public init(transcript: String, text: String, autoListen: Bool = false) {
        self.transcript = transcript
        self.text = text
        self.autoListen = autoListen
    }
}

/// Commands the speaker carries out itself, recognised in the final transcript before Houndify's answer is
/// spoken (as the AIY demos do).
public enum LocalCommand: Sendable, Equatable {
    case stop, volumeUp, volumeDown, ipAddress

    public static func match(_ transcript: String) -> LocalCommand? {
        let words = transcript.lowercased().split { !$0.isLetter && !$0.isNumber && $0 != "'" }.map(String.init)
        let text = words.joined(separator: " ")
        switch text {
        case "stop", "cancel", "never mind", "nevermind", "stop it", "be quiet": return .stop
        default: break
        }
        if text.contains("volume up") || text.contains("louder") || text == "turn it up" || text.contains("increase the volume") {
            return .volumeUp
        }
        if text.contains("volume down") || text.contains("quieter") || text == "turn it down" || text.contains("decrease the volume") {
            return .volumeDown
        }
        if text.contains("ip address") { return .ipAddress }
        return nil
    }
}

/// Something the speaker says; the loop turns the last three into words (they need the device's state).
public enum Utterance: Sendable, Equatable {
    case text(String)
    case ipAddress
    case volume
}

public enum SpeakerEarcon: String, Sendable {
    case startListening, stopListening, cancel, error
}

/// Everything the loop feeds the state machine.
public enum SpeakerEvent: Sendable, Equatable {
    /// The devices are up.
    case started
    /// The button: talk (press), endTalk (hold-to-talk release), cancel (long press). `talk` also comes from
    /// what has no release (a script, a test).
    case talk, endTalk, cancel
    /// The button went down in tap-to-talk: `talk`, and then `tapEnded` or `cancel` (a long press) follows.
    case press
    /// The tap-to-talk button came up without being held long enough to cancel.
    case tapEnded
    case hotPhrase
    case partialTranscript(String)
    /// The device's endpointer (or Houndify's SafeToStopAudio) says the person has finished.
    case endOfSpeech
    /// The endpointer heard nothing before its timeout.
    case noSpeech
    case answer(SpeakerAnswer)
    case searchFailed(SearchFailure)
    /// The utterance or earcon that was playing has ended (finished or interrupted).
    case speechEnded(interrupted: Bool)
    case soundEnded
    /// The output device could not play the utterance or earcon whose end comes next (a speaker missing or
    /// unplugged): nothing was heard, so the LEDs say so until a sound plays again.
    case outputFailed
    /// The watchdog of the given generation expired.
    case watchdog(generation: Int)
    /// The service manager's liveness check passing through the loop (systemd's watchdog); it changes nothing.
    case heartbeat
    case shutdown
}

extension SpeakerEvent {
    /// How a search ends: its answer or its failure.
    var isOutcome: Bool {
        switch self {
        case .answer, .searchFailed: true
        default: false
        }
    }
}

/// LED pattern names (the Board module's LEDState, repeated here so the machine depends on nothing).
public enum SpeakerLEDs: String, Sendable {
    case off, ready, listening, searching, speaking, error, offline, muted
}

/// What the state machine asks the loop to do.
public enum SpeakerEffect: Sendable, Equatable {
    /// Start streaming the microphone into a new voice search (with the audio from before a hot phrase if asked).
    case startSearch(preRoll: Bool)
    /// stopSearch: end the upload; the search goes on to its answer.
    case endAudio
    case cancelSearch
    case speak(Utterance)
    case stopSpeaking
    case playEarcon(SpeakerEarcon)
    case leds(SpeakerLEDs)
    case changeVolume(up: Bool)
    /// Arms the watchdog for `ms`; its expiry comes back as `.watchdog(generation:)`.
    case armWatchdog(generation: Int, ms: Int)
    case disarmWatchdog
    case stateChanged(from: SpeakerState, to: SpeakerState)
    /// Speech is off: the answer is printed/logged instead.
    case show(String)
    case log(String)
    case stopped
}

/// The speaker's behaviour, with no I/O: `handle` takes an event and returns the effects. Every state handles
/// every event (an exhaustive test checks it), and every busy state is guarded by a watchdog, so the speaker
/// cannot stay stuck listening, searching or speaking.
public struct SpeakerMachine: Sendable {
    public struct Settings: Sendable, Equatable {
        /// The Hound SDK's enableSpeech (docs/houndify-protocol.md, "enableSpeech"): off, answers are shown, not spoken.
        public var enableSpeech = true
        public var recordingLimitMS = 15_000
        public var searchingLimitMS = 20_000
        public var speakingLimitMS = 60_000
        public init() {}
    }

    public let settings: Settings
    public private(set) var state = SpeakerState.none
    /// Connection failures show the offline pattern in ready until a request works.
    public private(set) var offline = false
    /// The output device failed: ready shows the error pattern until an utterance plays through.
    public private(set) var outputMissing = false
    /// An `outputFailed` whose sound's end has not come yet (that end must not count as a sound that played).
    private var failedSoundPending = false
    /// How many of the earcons and utterances asked for (`.playEarcon`, `.speak`) have not reported their end
    /// (`.soundEnded`, `.speechEnded`) yet. The machine is the one owner of "our own sound is playing": the loop
    /// mirrors it into the capture router after every event, so the hot phrase stays off until the last of an error
    /// earcon and the sentence after it has ended, not just the first.
    public private(set) var soundsPlaying = 0
    /// Our own sound is playing: the hot phrase is not listened for (the "hears itself" bug).
    public var soundPlaying: Bool { soundsPlaying > 0 }
    private var pendingAutoListen = false
    private var generation = 0
    /// The press that ended the recording is still down: it may yet become a long press (cancel), so the answer
    /// (or failure) waits in `held` until the button comes up, instead of playing for a second and being cut off.
    private var pressDown = false
    private var held: SpeakerEvent?

    public init(settings: Settings = Settings()) { self.settings = settings }

    public mutating func handle(_ event: SpeakerEvent) -> [SpeakerEffect] {
        let before = state
        var effects = transition(event)
        // Every way out of recording closes what recording opened: the microphone and the upload. A path that
        // forgot it (a search that failed while the person was still speaking) once left the capture running and
        // every later query uploaded the audio two or three times over.
        if before == .recording && state != .recording && !effects.contains(.endAudio) && !effects.contains(.cancelSearch) {
            effects.insert(.cancelSearch, at: 0)
        }
        // A held press and its held answer belong to the search they ended: every way out of searching drops them.
        if state != .searching {
            pressDown = false
            held = nil
        }
        for effect in effects {
            switch effect {
            case .playEarcon, .speak: soundsPlaying += 1
            default: break
            }
        }
        return effects
    }

    private mutating func transition(_ event: SpeakerEvent) -> [SpeakerEffect] {
        switch event {
        case .press:
            let effects = transition(.talk)
            // Only the press that sent the question can hold its answer back.
            pressDown = state == .searching
            return effects
        case .tapEnded:
            pressDown = false
            if state == .searching, let waiting = held {
                held = nil
                return transition(waiting)
            }
        default:
            break
        }
        switch (state, event) {
        case (let current, .shutdown):
            var effects: [SpeakerEffect] = []
            if current == .recording || current == .searching { effects.append(.cancelSearch) }
            if current == .speaking { effects.append(.stopSpeaking) }
            if current != .none { effects += leave(to: .none) }
            return effects + [.leds(.off), .stopped]
        case (.none, .started):
            return leave(to: .ready) + [.leds(.ready)]
        case (.none, _):
            return []

        case (_, .watchdog(let g)) where g != generation:
            return []  // an old watchdog, from a state already left
        case (let current, .outputFailed):
            outputMissing = true
            failedSoundPending = true
            return [.log("the speaker (output device) failed: nothing was heard")] + (current == .ready ? [.leds(readyLEDs)] : [])
        case (let current, .soundEnded):
            let was = outputMissing
            soundEnded()
            return current == .ready && was != outputMissing ? [.leds(readyLEDs)] : []
        case (let current, .speechEnded(let interrupted)) where current != .speaking:
            let was = outputMissing
            soundEnded(interrupted: interrupted)  // speech that was stopped on the way to another state has now ended
            return current == .ready && was != outputMissing ? [.leds(readyLEDs)] : []
        case (_, .cancel):
            return cancelAll(earcon: true)
        case (.searching, _) where pressDown && event.isOutcome:
            held = event
            return [.log("the answer waits for the button to come up (a long press would cancel it)")]

        // ready
        case (.ready, .talk):
            return startListening(preRoll: false)
        case (.ready, .hotPhrase):
            guard !soundPlaying else { return [.log("hot phrase ignored: the speaker's own sound is playing")] }
            return startListening(preRoll: true)
        case (.ready, _):
            return []

        // recording
        case (.recording, .talk), (.recording, .endTalk), (.recording, .endOfSpeech):
            return [.endAudio, .playEarcon(.stopListening)] + enter(.searching) + [.leds(.searching)]
        case (.recording, .partialTranscript), (.searching, .partialTranscript):
            return []  // shown by the loop's event stream; one query can bring hundreds of them
        case (.recording, .noSpeech):
            return [.cancelSearch] + fail(.nothingHeard)
        case (.recording, .answer(let answer)), (.searching, .answer(let answer)):
            return answered(answer)
        case (.recording, .searchFailed(let failure)), (.searching, .searchFailed(let failure)):
            return fail(failure)  // from recording, handle() closes the microphone as on every way out of it
        case (.recording, .watchdog):
            // The endpointer ends every query well before this, so no audio has been arriving: the microphone.
            return [.log("watchdog: still recording after \(settings.recordingLimitMS) ms"), .cancelSearch] + fail(.microphone)
        case (.recording, _):
            return []

        // searching
        case (.searching, .talk):
            return cancelAll(earcon: true)
        case (.searching, .watchdog):
            return [.log("watchdog: no answer after \(settings.searchingLimitMS) ms"), .cancelSearch] + fail(.serviceFailing)
        case (.searching, _):
            return []

        // speaking
        case (.speaking, .talk):
            pendingAutoListen = false
            return [.stopSpeaking] + leave(to: .ready) + [.leds(readyLEDs)]
        case (.speaking, .speechEnded(let interrupted)):
            soundEnded(interrupted: interrupted)
            if pendingAutoListen {
                pendingAutoListen = false
                return startListening(preRoll: false)
            }
            return leave(to: .ready) + [.leds(readyLEDs)]
        case (.speaking, .watchdog):
            // The speech output itself is what hangs, so another sentence would hang too: the earcon says it.
            pendingAutoListen = false
            return [.log("watchdog: still speaking after \(settings.speakingLimitMS) ms"), .stopSpeaking, .playEarcon(.error)]
                + leave(to: .ready) + [.leds(readyLEDs)]
        case (.speaking, _):
            return []
        }
    }

    private var readyLEDs: SpeakerLEDs { outputMissing ? .error : offline ? .offline : .ready }

    private mutating func startListening(preRoll: Bool) -> [SpeakerEffect] {
        [.playEarcon(.startListening)] + enter(.recording) + [.leds(.listening), .startSearch(preRoll: preRoll)]
    }

    private mutating func answered(_ answer: SpeakerAnswer) -> [SpeakerEffect] {
        offline = false
        var effects: [SpeakerEffect] = state == .recording ? [.endAudio] : []
        effects.append(.log("heard: \"\(answer.transcript)\""))
        switch LocalCommand.match(answer.transcript) {
        case .stop?:
            return effects + leave(to: .ready) + [.leds(.ready)]
        case .volumeUp?, .volumeDown?:
            return effects + [.changeVolume(up: LocalCommand.match(answer.transcript) == .volumeUp)] + say(.volume, autoListen: false)
        case .ipAddress?:
            return effects + say(.ipAddress, autoListen: false)
        case nil:
            // An answer with nothing to say (no results, or responses that are not text) must not be silence.
            let text = answer.text.allSatisfy(\.isWhitespace) ? SpeakerAnswer.nothingToSay : answer.text
            return effects + say(.text(text), autoListen: answer.autoListen)
        }
    }

    private mutating func say(_ utterance: Utterance, autoListen: Bool) -> [SpeakerEffect] {
        guard settings.enableSpeech else {
            let shown: String
            if case .text(let text) = utterance { shown = text } else { shown = "\(utterance)" }
            return [.show(shown)] + leave(to: .ready) + [.leds(readyLEDs)]
        }
        pendingAutoListen = autoListen
        return enter(.speaking) + [.leds(.speaking), .speak(utterance)]
    }

    private mutating func fail(_ failure: SearchFailure) -> [SpeakerEffect] {
        if failure == .offline { offline = true }
        var effects: [SpeakerEffect] = [.log("search failed: \(failure.rawValue)"), .playEarcon(.error)]
        guard settings.enableSpeech else {
            effects.append(.show(failure.sentence))
            return effects + leave(to: .ready) + [.leds(readyLEDs)]
        }
        pendingAutoListen = false
        effects += enter(.speaking) + [.leds(.error), .speak(.text(failure.sentence))]
        return effects
    }

    private mutating func cancelAll(earcon: Bool) -> [SpeakerEffect] {
        pendingAutoListen = false
        var effects: [SpeakerEffect] = []
        switch state {
        case .recording, .searching: effects.append(.cancelSearch)
        case .speaking: effects.append(.stopSpeaking)
        case .ready, .none: return []
        }
        if earcon { effects.append(.playEarcon(.cancel)) }
        return effects + leave(to: .ready) + [.leds(readyLEDs)]
    }

    private mutating func soundEnded(interrupted: Bool = false) {
        soundsPlaying = max(0, soundsPlaying - 1)
        if failedSoundPending {
            failedSoundPending = false
        } else if !interrupted {
            outputMissing = false  // a sound played through: the speaker is there
        }
    }

    /// Enters a busy state, armed with its watchdog.
    private mutating func enter(_ next: SpeakerState) -> [SpeakerEffect] {
        let previous = state
        state = next
        generation += 1
        let limit = switch next {
        case .recording: settings.recordingLimitMS
        case .searching: settings.searchingLimitMS
        default: settings.speakingLimitMS
        }
        return [.stateChanged(from: previous, to: next), .armWatchdog(generation: generation, ms: limit)]
    }

    /// Enters ready or none: no watchdog.
    private mutating func leave(to next: SpeakerState) -> [SpeakerEffect] {
        let previous = state
        state = next
        generation += 1
        return [.stateChanged(from: previous, to: next), .disarmWatchdog]
    }

    /// The watchdog generation now armed (for tests and the loop).
    public var watchdogGeneration: Int { generation }
}
