public import JSONKit
public import AudioCore
public import BoardCore
public import Timers

/// The speaker's states, as the Hound SDK names them (docs/houndify-protocol.md, "Speaker states"): none (not
/// listening), ready (waiting for the button or the hot phrase), recording (streaming the question), searching
/// (waiting for the answer), speaking; and two of the speaker's own: ringing (a timer has gone off) and enrolling
/// (a spoken enrollment is learning a voice, docs/household.md).
public enum SpeakerState: String, Sendable, CaseIterable {
    case none, ready, recording, searching, speaking, ringing, enrolling
}

/// What went wrong with a search, as the person is told it.
public enum SearchFailure: String, Sendable, CaseIterable {
    /// No network, DNS, refused, TLS: "I can't reach the internet."
    case offline
    /// Houndify answered badly or not at all.
    case serviceFailing
    /// The client ID or key was refused.
    case authentication
    /// No credentials yet: the speaker is in setup mode.
    case notSetUp
    /// Nothing was said.
    case nothingHeard
    /// The microphone cannot be opened, or stopped delivering audio.
    case microphone

    /// What a speaker that understands its own commands on the device (issue #63) can still do without Houndify.
    public static let stillCan = "but I can still set timers and alarms, tell the time and change the volume."

    /// The sentence, and with `offlineCommands` what the speaker can still do, when Houndify could not be reached or
    /// did not answer.
    public func sentence(offlineCommands: Bool) -> String {
        guard offlineCommands, self == .offline || self == .serviceFailing else { return sentence }
        return String(sentence.dropLast()) + ", " + Self.stillCan
    }

    public var sentence: String {
        switch self {
        case .offline: "I can't reach the internet."
        case .serviceFailing: "Houndify isn't answering right now."
        case .authentication: "My Houndify key was refused."
        case .notSetUp: "I'm not set up yet."
        case .nothingHeard: "Sorry, I didn't hear anything."
        case .microphone: "I can't hear you: my microphone isn't working."
        }
    }
}

/// Something Houndify leaves to the speaker to do (a client command).
public enum ClientAction: Sendable, Equatable {
    case timer(TimerAction)
    case alarm(AlarmAction)
    case volume(VolumeAction)
    /// An owner's phrase (Houndify's ClientMatches) that runs a command; the answer's text is said meanwhile.
    case run(command: String)
    /// An owner's phrase that switches the microphone off (mute), as the double press does.
    case muteMicrophone
}

/// Houndify's volume commands (DeviceControlCommand, VolumeCommand), as the speaker carries them out.
public enum VolumeAction: Sendable, Equatable {
    /// One step up or down ("turn it up").
    case step(up: Bool)
    /// By so many points of 0-100.
    case by(Int)
    /// To a level of 0-100.
    case to(Int)
    /// The output's sound off (true) or back on (false); the microphone is not touched.
    case mute(Bool)
}

/// The output's level as the volume control reports it after a change.
public struct VolumeLevel: Sendable, Equatable {
    public var percent: Int
    public var soundOff: Bool
    public init(percent: Int, soundOff: Bool = false) {
        self.percent = percent
        self.soundOff = soundOff
    }
}

/// One branch of a dynamic response: what to say and the conversation state that goes with it.
public struct DynamicReply: Sendable, Equatable {
    public var text: String
    public var conversationState: JSONValue?
    public init(_ text: String, conversationState: JSONValue? = nil) {
        self.text = text
        self.conversationState = conversationState
    }
}

/// What to say once a client action has been tried (Houndify's dynamic responses: docs/houndify-protocol.md,
/// "Client commands"): the branch that matches what the speaker did is taken, its conversation state kept, and,
/// for a success, its words spoken. A missing branch: the speaker's own sentence and the answer's own state.
public struct ActionResponses: Sendable, Equatable {
    /// One thing done (ClientActionSucceededResult, or the command's Single branch).
    public var succeeded: DynamicReply?
    /// Several done at once (the Multi or All branch).
    public var succeededSeveral: DynamicReply?
    /// Nothing matched what was asked (the NoMatch branch).
    public var noMatch: DynamicReply?
    /// It could not be done (ClientActionFailedResult).
    public var failed: DynamicReply?
    /// The answer's own state (its top level): kept when the branch taken has none.
    public var conversationState: JSONValue?

    public init(succeeded: DynamicReply? = nil, succeededSeveral: DynamicReply? = nil, noMatch: DynamicReply? = nil,
                failed: DynamicReply? = nil, conversationState: JSONValue? = nil) {
        self.succeeded = succeeded
        self.succeededSeveral = succeededSeveral
        self.noMatch = noMatch
        self.failed = failed
        self.conversationState = conversationState
    }

    /// Texts only (tests, and answers without states).
    public init(succeeded: String, failed: String = "") {
        self.init(succeeded: succeeded.isEmpty ? nil : DynamicReply(succeeded), failed: failed.isEmpty ? nil : DynamicReply(failed))
    }
}

/// How a client action went, in the terms of Houndify's branches.
public struct ActionOutcome: Sendable, Equatable {
    public enum Result: Sendable, Equatable {
        /// So many things were changed.
        case changed(Int)
        /// Only looked at (time left, the list): the speaker's own words, which hold what it knows.
        case told
        /// Nothing matched what was asked.
        case noMatch
        case failed
    }
    public var result: Result
    /// The speaker's own sentence for it.
    public var sentence: String
    /// Said after whichever words are chosen: what was done could not be kept (the timers file could not be
    /// written), so the person is not told a timer is set that a restart would lose.
    public var caveat = ""
    /// The speaker's own sentence even for a change (the volume: the level, heard at that level), whatever words
    /// Houndify gave; the branch is still the one that fits.
    public var ownSentence = false

    public init(_ result: Result, sentence: String) {
        self.result = result
        self.sentence = sentence
    }

    /// The branch that fits, and what to say: Houndify's words for a change when it gave some; for a failure the
    /// speaker's own (they say why: no such timer, which one, the device), as for what only the speaker knows.
    public func reply(from responses: ActionResponses?) -> (text: String, branch: DynamicReply?) {
        let branch: DynamicReply?
        switch result {
        case .changed(let count): branch = count > 1 ? (responses?.succeededSeveral ?? responses?.succeeded) : responses?.succeeded
        case .told: branch = responses?.succeeded
        case .noMatch: branch = responses?.noMatch ?? responses?.failed
        case .failed: branch = responses?.failed
        }
        let useTheirs: Bool
        switch result {
        case .changed: useTheirs = !ownSentence || sentence.allSatisfy(\.isWhitespace)
        case .told, .noMatch, .failed: useTheirs = sentence.allSatisfy(\.isWhitespace)
        }
        let said = if useTheirs, let theirs = branch?.text, !theirs.allSatisfy(\.isWhitespace) { theirs } else { sentence }
        return (caveat.isEmpty ? said : said + " " + caveat, branch)
    }
}

extension ActionOutcome {
    /// A timer or alarm command's outcome, in the terms of Houndify's branches.
    init(_ outcome: TimerOutcome) {
        if outcome.succeeded {
            let count = outcome.changes.count + outcome.alarmChanges.count
            self.init(count > 0 ? .changed(count) : .told, sentence: outcome.sentence)
        } else {
            self.init(outcome.matchedNothing ? .noMatch : .failed, sentence: outcome.sentence)
        }
    }
}

/// The answer to a query, reduced to what the speaker acts on.
public struct SpeakerAnswer: Sendable, Equatable {
    public var transcript: String {
        didSet { localCommand = LocalCommand.match(transcript) }
    }
    /// What the transcript asks of the speaker itself, matched once, when the transcript is set.
    public private(set) var localCommand: LocalCommand?
    public var text: String
    public var autoListen: Bool
    /// A command for the speaker to carry out before it speaks.
    public var action: ClientAction?
    public var responses: ActionResponses?
    /// Houndify's own recording of `text` (ResponseAudioBytes), played instead of espeak-ng when there is one.
    public var voice: MonoAudio?
    /// What a screen shows of it (the result's written response, HTML, template and native data), nil: none.
    public var display: JSONValue?
    /// Understood on the device, because Houndify could not answer (issue #63); nil: Houndify's answer.
    public var device: DeviceAnswer?
    /// Words Home Assistant may carry out (issue #65), where the speaker hands them over; nil: none.
    public var handOff: HomeHandOff?
    /// Said when the speaker cannot do what Houndify left to it (a call, a message, music).
    public static let cannotDoThat = "Sorry, this speaker can't do that."
    /// Said when Houndify's answer carries no text to speak.
    public static let nothingToSay = "Sorry, Houndify sent me an answer with nothing to say."

    public init(transcript: String, text: String, autoListen: Bool = false, action: ClientAction? = nil, responses: ActionResponses? = nil,
                voice: MonoAudio? = nil, display: JSONValue? = nil, device: DeviceAnswer? = nil) {
        self.voice = voice
        self.display = display
        self.device = device
        self.transcript = transcript
        localCommand = LocalCommand.match(transcript)
        self.text = text
        self.autoListen = autoListen
        self.action = action
        self.responses = responses
    }
}

/// Which answers go to Home Assistant's conversation API, where the speaker has one (`[home_assistant] url`).
public enum HomeHandOff: Sendable, Equatable {
    /// An owner's phrase tied to Home Assistant: its reply is said, whatever it is.
    case always
    /// Something the speaker cannot do itself (a client action it lacks, or nothing Houndify understood): Home
    /// Assistant's reply is said if it understood the words, else this answer stands.
    case ifUnderstood
}

/// An answer the speaker made itself from what its own recogniser heard, when Houndify could not answer.
public struct DeviceAnswer: Sendable, Equatable {
    /// What only the device can say: its clock's time or date.
    public enum Tell: Sendable, Equatable { case time, date }
    /// Why Houndify did not answer.
    public var failure: SearchFailure
    public var tell: Tell?
    public init(failure: SearchFailure, tell: Tell? = nil) {
        self.failure = failure
        self.tell = tell
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
        case "stop", "cancel", "never mind", "nevermind", "stop it", "be quiet", "thank you", "thanks", "thank you very much",
             "that's all", "that's it", "no thanks", "no thank you", "nothing": return .stop
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

/// Something the speaker says; the loop turns the others into words (they need the device's state).
public enum Utterance: Sendable, Equatable {
    case text(String)
    /// Houndify's own voice saying `text` (played as it is; `text` is for the log and the screen).
    case recorded(MonoAudio, text: String)
    case ipAddress
    /// The time or the date, by the speaker's clock (said when Houndify cannot be asked).
    case time
    case date
    /// How the last client action (`.timer`, `.alarm`, `.volume`) went, in Houndify's words for that branch when
    /// it gave some.
    case actionOutcome(ActionResponses?)
}

/// How an utterance or earcon ended.
public enum SoundEnd: Sendable, Equatable {
    /// It played through: the output device is there.
    case finished
    /// It was stopped (or could not be made) before its end; says nothing about the device.
    case interrupted
    /// The output device could not play it (a speaker missing or unplugged): nothing was heard.
    case outputFailed
}

/// Everything the loop feeds the state machine.
public enum SpeakerEvent: Sendable, Equatable {
    /// The devices are up.
    case started
    /// The button: talk (press), endTalk (hold-to-talk release), cancel (long press). `talk` also comes from
    /// what has no release (a script, a test).
    case talk, endTalk, cancel
    /// Hold-to-talk: the button went down and stays down until `endTalk`. Like `talk`, except that the question
    /// it starts is the person's to end: a pause is not its end while they hold.
    case hold
    /// The button went down in tap-to-talk: `talk`, and then `tapEnded` or `cancel` (a long press) follows.
    case press
    /// The tap-to-talk button came up without being held long enough to cancel.
    case tapEnded
    case hotPhrase
    /// The household's stop phrase (an enrolled "stop", docs/household.md), heard over the speaker's own sound:
    /// it stops the ringing or the answer as a press would, without the hot phrase first.
    case stopPhrase
    case partialTranscript(String)
    /// The device's endpointer (or Houndify's SafeToStopAudio) says the person has finished.
    case endOfSpeech
    /// The endpointer heard nothing before its timeout.
    case noSpeech
    /// The question has reached the longest the speaker records (the endpointer's 12 s): it is sent, held or not.
    case questionLimit
    case answer(SpeakerAnswer)
    /// `said`: words for it other than the failure's own sentence (setup mode's: where to go, and the code).
    case searchFailed(SearchFailure, said: String? = nil)
    /// Utterance `id` (`.speak`) has ended, and how. Only its own end counts: a stopped answer's end, reported
    /// after the next utterance has started, ends nothing but itself.
    case speechEnded(SoundEnd, id: Int)
    /// Earcon `id` (`.playEarcon`) has ended, and how.
    case soundEnded(SoundEnd, id: Int)
    /// The watchdog of the given generation expired.
    case watchdog(generation: Int)
    /// A timer has gone off (the loop's timer list says which).
    case timerDue
    /// Whether a timer is counting down now, and whether one is in its last minute (ready shows it on the LEDs).
    case timersRunning(Bool, lastMinute: Bool = false)
    /// Mute (privacy): the microphone off and the hot phrase not listened for. `toggleMute` is the button's double
    /// press; `setMuted` a command, or the saved setting at start.
    case toggleMute
    case setMuted(Bool)
    /// From the control API (docs/control-api.md). `listen`: as a tap on the button, except that over an answer it
    /// starts the next question at once.
    case listen
    /// A typed question, in the same conversation as the spoken ones. `id`: the asker's number for it (the control
    /// API's request), told back in the `question` activities that say how it went; 0: nobody waits for it.
    case textQuery(String, id: Int = 0)
    /// Words for the household: a chime, then the words, once the speaker is free (nothing it is doing is cut
    /// short for them, and none is lost).
    case announce(String)
    /// Something to do without a word (volume, a timer cancelled from the screen).
    case carryOut(ClientAction)
    /// The next question starts a new conversation.
    case clearConversation
    /// Houndify answered the light check the loop makes while the speaker is offline: the offline pattern (and a
    /// screen's "No internet") goes without waiting for the next question.
    case networkBack
    /// Setup mode began (the setup page is open: ready shows the setup LEDs) or ended (the credentials are saved).
    case setupMode(Bool)
    /// Start a spoken enrollment of `phrase` (`ctl enroll`, or the button's set-up hold: `fromButton`), unless
    /// `refusal` says why it cannot start (the core's `Speaker` decides that: it knows the microphone and the
    /// household's side). The asker is answered with `.enrollmentAnswer` either way.
    case enroll(phrase: String, refusal: String?, fromButton: Bool)
    /// To enrollment `id`'s session: its words said, a take recorded, a verdict, a save (a late report of a session
    /// that has ended changes nothing).
    case enrollment(id: Int, EnrollmentInput)
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

/// What the state machine asks the loop to do.
public enum SpeakerEffect: Sendable, Equatable {
    /// Start streaming the microphone into a new voice search (with the audio from before a hot phrase if asked).
    /// `held`: hold-to-talk, the button down: the person's release ends the upload, not the service's
    /// SafeToStopAudio.
    case startSearch(preRoll: Bool, held: Bool = false)
    /// Start a text search for a typed question (`id` as in `SpeakerEvent.textQuery`).
    case startTextSearch(String, id: Int = 0)
    /// A typed question is not asked now, and why (a person is asking one, a timer rings): it cuts nobody off.
    case refuseQuestion(id: Int, query: String, reason: String)
    /// Forget the conversation state.
    case clearConversation
    /// stopSearch: end the upload; the search goes on to its answer.
    case endAudio
    /// The microphone stops feeding the question, but its upload is left open, unfinished: a press that ended it
    /// may yet be a long press (cancel), and a cancelled question must never reach Houndify whole. `endAudio`
    /// (the press was a tap) or `cancelSearch` (it was long) follows.
    case stopRecording
    case cancelSearch
    /// Say `utterance`; its end comes back as `.speechEnded(_, id:)`. Every sound the machine asks for has an id of
    /// its own, from one count.
    case speak(Utterance, id: Int)
    /// Stops whatever of ours is playing or queued: every utterance and earcon asked for so far.
    case stopSpeaking
    /// Play `earcon`; its end comes back as `.soundEnded(_, id:)`.
    case playEarcon(Earcon, id: Int)
    case leds(LEDState)
    /// Carry out a timer command on the loop's timer list (and keep its outcome for `.timerOutcome`).
    case timer(TimerAction)
    /// The same for an alarm command.
    case alarm(AlarmAction)
    /// Carry out a volume command (and keep its outcome for `.actionOutcome`).
    case volume(VolumeAction)
    /// Start an owner's command (not waited for).
    case runCommand(String)
    /// The ringing timers are done: off the list.
    case stopRinging
    /// Release (true) or take back (false) the microphone, and remember the choice across restarts.
    case setMicrophoneMuted(Bool)
    /// Arms the watchdog for `ms`; its expiry comes back as `.watchdog(generation:)`.
    case armWatchdog(generation: Int, ms: Int)
    case disarmWatchdog
    case stateChanged(from: SpeakerState, to: SpeakerState)
    /// Speech is off: the answer is printed/logged instead.
    case show(Utterance)
    case stopped
    /// A hot-phrase wake ended without a question: the core (`Speaker`) decides with `FalseWake.kept` whether the
    /// detector keeps it as one of the household's false wakes. It comes before the earcon that marks the end, whose sound
    /// resets the detector.
    case falseWake(FalseWake)
    /// A hot-phrase wake's question was answered (Houndify heard words after the phrase): the detector sets that
    /// wake aside (`HotPhraseDetecting.holdAnsweredWake`), as it is now, for `answeredWake`. A wake it hears while
    /// the answer plays (over the speaker's own sound, with barge-in off) must not take its place.
    case holdAnsweredWake
    /// The answer to the wake set aside, if one was spoken, was heard to the end: the detector may learn that
    /// wake (`HotPhraseDetecting.keepAnsweredWake`).
    case answeredWake
    /// The answer to `.enroll`: the session's first progress, or why it cannot start.
    case enrollmentAnswer(Result<EnrollmentProgress, DeviceProblem>)
    /// Enrollment `id` starts: the hot phrase is not listened for, the microphone's frames go to its takes.
    case startEnrolling(id: Int)
    /// Say `words` for enrollment `id` (0: for no session); their end comes back as `.enrollment(id:, .spoken)`.
    case sayForEnrollment(String, id: Int)
    /// Record one take for enrollment `id`; it comes back as `.enrollment(id:, .captured)`.
    case startTake(id: Int)
    case stopTake
    /// Check the take recorded last against `phrase`; the verdict comes back as `.enrollment(id:, ...)`.
    case checkTake(id: Int, phrase: String)
    /// Keep the accepted takes; the result comes back as `.enrollment(id:, .saved)` or `.saveFailed`.
    case saveTakes(id: Int, phrase: String)
    /// Drop the takes held: nothing is kept.
    case discardTakes
    case enrollmentProgress(EnrollmentProgress)
    /// Enrollment `id` is over and its words said: the hot phrase is listened for again.
    case endEnrolling(id: Int)
}

/// How a hot-phrase wake turned out false (issue #37, "The household's own false wakes").
public enum FalseWake: Sendable, Equatable {
    /// Nothing was heard after the phrase (the quiet false wake), or Houndify heard no words.
    case heardNothing
    /// A person cancelled it (a long press, `ctl cancel`) while it listened or searched.
    case cancelled

    /// A cancel counts only this soon after the wake: later, the person most likely changed their mind about a
    /// question the phrase rightly started.
    public static let cancelWindow: Duration = .seconds(2)

    /// Whether a false wake `sinceWake` after the phrase is kept as a household negative: every wake that heard
    /// nothing; a cancelled one within `cancelWindow`.
    public static func kept(_ wake: FalseWake, sinceWake: Duration) -> Bool {
        switch wake {
        case .heardNothing: true
        case .cancelled: sinceWake <= cancelWindow
        }
    }
}

/// The speaker's behaviour, with no I/O: `handle` takes an event and returns the effects. Every state handles
/// every event (an exhaustive test checks it), and every busy state is guarded by a watchdog, so the speaker
/// cannot stay stuck listening, searching or speaking.
///
/// Each state carries what belongs to it (as async-http-client's HTTPRequestStateMachine does), so nothing
/// outlives the state it was meant for: a held answer is part of searching, a follow-up question part of speaking.
/// Beside the state, the machine owns three facts about the devices that last across states: whether the
/// network was last seen down, whether the output device was last seen missing, and how many of its own sounds
/// are playing.
public struct SpeakerMachine: Sendable {
    public struct Settings: Sendable, Equatable {
        /// The Hound SDK's enableSpeech (docs/houndify-protocol.md, "enableSpeech"): off, answers are shown, not spoken.
        public var enableSpeech = true
        public var recordingLimitMS = 15_000
        public var searchingLimitMS = 20_000
        public var speakingLimitMS = 60_000
        /// A timer that nobody stops rings this long, then stops by itself.
        public var ringingLimitMS = 15 * 60_000
        /// A spoken enrollment ends by itself after this long (five takes and their prompts take about one minute).
        public var enrollingLimitMS = 4 * 60_000
        /// Follow-up mode: after each answer the microphone reopens (once the answer has played to its end) for
        /// another question; silence, "stop" or "thank you" ends it without a word.
        public var followUp = false
        /// Barge-in: the microphone's audio goes through the echo canceller (`[audio] echo_cancel`), so the hot phrase
        /// is listened for while the speaker talks or rings, and stops it to take the next question.
        public var bargeIn = false
        /// The speaker understands its own commands on the device when Houndify cannot answer (issue #63): its
        /// offline failures say what it can still do.
        public var offlineCommands = false
        public init() {}
    }

    /// Why the microphone reopens after an answer.
    enum Reopen: Sendable, Equatable {
        /// It does not.
        case no
        /// Houndify asked a question (AutoListen): silence is "I didn't hear anything".
        case autoListen
        /// Follow-up mode: silence simply ends the conversation.
        case followUp
    }

    enum Phase: Sendable, Equatable {
        case none, ready
        /// `quiet`: a follow-up window, where hearing nothing is no failure. `held`: hold-to-talk, the button is
        /// still down, so the question ends when it comes up, not at a pause. `reopened`: the microphone reopened
        /// by itself after an answer (AutoListen, follow-up), not for a person who asked to speak.
        case recording(quiet: Bool, held: Bool, reopened: Bool = false)
        /// `pressDown`: the press that ended the recording is still down; it may yet become a long press (cancel),
        /// so the question's upload is left unfinished (`stopRecording`) and an answer (or failure) that comes
        /// anyway waits in `held` until the button comes up, instead of playing for a second and being cut off.
        case searching(pressDown: Bool, held: SpeakerEvent?)
        /// `reopen`: whether (and why) the microphone reopens when the answer has been spoken. `learn`: the
        /// answer is a hot-phrase wake's that Houndify heard words after; heard to the end, the wake is told to
        /// the detector to learn from (`answeredWake`), stopped, it is not.
        /// `utterance`: the id of the utterance being said; only its end ends speaking.
        case speaking(reopen: Reopen, learn: Bool = false, utterance: Int)
        /// `earcon`: the id of the ring now playing; only its end plays the next.
        case ringing(earcon: Int)
        /// A spoken enrollment: its session, which the machine drives.
        case enrolling(EnrollmentSession)

        // Not inlined: Swift 6.2's optimizer, built with assertions as Debian's swiftlang is, ended the borrow of
        // the stored phase before this switch once inlined into `handle` and stopped on an ownership error.
        var state: SpeakerState {
            @inline(never) get {
            switch self {
            case .none: .none
            case .ready: .ready
            case .recording: .recording
            case .searching: .searching
            case .speaking: .speaking
            case .ringing: .ringing
            case .enrolling: .enrolling
            }
            }
        }
    }

    public let settings: Settings
    private var phase = Phase.none
    public var state: SpeakerState { phase.state }
    /// Connection failures show the offline pattern in ready until a request works.
    public private(set) var offline = false
    /// The output device failed: ready shows the error pattern until an utterance or earcon plays through.
    public private(set) var outputMissing = false
    /// Setup mode (no Houndify credentials yet, the setup page open): ready shows it.
    public private(set) var settingUp = false
    /// The earcons and utterances asked for (`.playEarcon`, `.speak`) that have not reported their end yet, by id.
    /// The machine is the one owner of "our own sound is playing": the loop passes it on to the capture router
    /// after every event, so the hot phrase stays off until the last of an error earcon and the sentence after it
    /// has ended, not just the first.
    public private(set) var playing: Set<Int> = []
    /// Words said for an enrollment (`.sayForEnrollment`) not yet ended: they report as `.enrollment(_, .spoken)`.
    private var enrollmentWordsPlaying = 0
    /// The last sound id given.
    private var lastSoundID = 0
    public var soundsPlaying: Int { playing.count + enrollmentWordsPlaying }
    /// Our own sound is playing: the hot phrase is not listened for (the "hears itself" bug).
    public var soundPlaying: Bool { soundsPlaying > 0 }
    /// What of our own sound plays: a ring while the machine rings (once it has stopped ringing, the last of it is
    /// heard as an answer would be, at the stricter threshold).
    public var ownSound: OwnSound {
        guard soundPlaying else { return .none }
        return state == .ringing ? .ring : .answer
    }
    /// A timer went off while the speaker was busy: it rings once the speaker is ready.
    public private(set) var ringPending = false
    /// A timer is counting down: ready shows it.
    public private(set) var timersRunning = false
    /// A timer is in its last minute: ready shows the quicker ticks.
    public private(set) var timerLastMinute = false
    /// The microphone is off by the owner's choice: nothing is heard until unmuted.
    public private(set) var muted = false
    /// The question being asked (or just answered) was started by the hot phrase, not by a person at the button:
    /// if nothing follows the phrase it was most likely a false wake, and the speaker goes back to ready quietly.
    public private(set) var wokenByHotPhrase = false
    /// Announcements waiting for the speaker to be free, oldest first.
    public private(set) var pendingAnnouncements: [String] = []
    /// More waiting than this and the oldest is dropped (a script in a loop must not queue an hour of speech).
    public static let announcementLimit = 10
    /// Said when someone presses to talk while muted.
    public static let mutedSentence = "I'm muted. Double-press the button to unmute."
    /// The watchdog generation now armed (for tests and the loop).
    public private(set) var watchdogGeneration = 0
    /// The number of the latest spoken enrollment (its reports carry it).
    public private(set) var enrollmentID = 0
    /// The enrollment whose last words are being said: the hot phrase waits for their end (`.endEnrolling`).
    private var enrollmentWordsPending: Int?
    /// Said when the button's set-up hold cannot start an enrollment (the log says why).
    public static let cannotTeach = "I can't learn your voice right now."

    /// An answer (or failure) waits for the press that ended the question to come up (`Phase.searching`'s `held`).
    public var holdsAnswer: Bool {
        @inline(never) get { if case .searching(pressDown: true, held: _?) = phase { true } else { false } }
    }

    /// The spoken enrollment under way, if any.
    public var enrollment: EnrollmentSession? {
        if case .enrolling(let session) = phase { session } else { nil }
    }

    public init(settings: Settings = Settings()) { self.settings = settings }

    public mutating func handle(_ event: SpeakerEvent) -> [SpeakerEffect] {
        let before = state
        var effects = transition(event)
        // Every way out of recording closes what recording opened: the microphone and the upload. A path that
        // forgot it (a search that failed while the person was still speaking) once left the capture running and
        // every later query uploaded the audio two or three times over.
        if before == .recording && state != .recording && !effects.contains(.endAudio) && !effects.contains(.cancelSearch)
            && !effects.contains(.stopRecording) {
            effects.insert(.cancelSearch, at: 0)
        }
        // A timer that went off during a question rings as soon as the question is over; announcements come after.
        if state == .ready && ringPending { effects += startRinging() }
        while state == .ready && !pendingAnnouncements.isEmpty {
            let text = pendingAnnouncements.removeFirst()
            effects += [earcon(.announce)] + say(.text(text))
        }
        enrollmentWordsPlaying += effects.count { if case .sayForEnrollment = $0 { true } else { false } }
        return effects
    }

    private mutating func transition(_ event: SpeakerEvent) -> [SpeakerEffect] {
        switch (phase, event) {
        case (_, .speechEnded(let end, let id)) where id != speakingID, (_, .soundEnded(let end, let id)) where id != ringingID:
            // Any other sound's end (an earcon, or speech stopped on the way to where the machine is now) ends only
            // itself: never the utterance or the ring that plays now.
            return soundEnded(end, id: id)
        case (_, .enrollment(let id, .spoken)):
            // The end of words said for an enrollment (its own, or the set-up hold's "I can't"): one sound less.
            enrollmentWordsPlaying = max(0, enrollmentWordsPlaying - 1)
            if enrollmentWordsPending == id {
                enrollmentWordsPending = nil
                return [.endEnrolling(id: id)]
            }
            return enrollment != nil && id == enrollmentID ? drive(.spoken) : []
        case (_, .enroll(_, let refusal?, let fromButton)):
            // The person at the button has no screen to read: why it cannot start is said (over a quiet speaker).
            let say: [SpeakerEffect] = fromButton && state == .ready ? [.sayForEnrollment(Self.cannotTeach, id: 0)] : []
            return [.enrollmentAnswer(.failure(DeviceProblem(refusal)))] + say
        case (.ready, .enroll(let phrase, nil, _)):
            return startEnrollment(phrase)
        case (_, .enroll(_, nil, _)):
            let why = enrollment != nil ? "an enrollment is under way already (ctl stop ends it)"
                : "the speaker is busy (\(state.rawValue)): enroll when it is ready"
            return [.enrollmentAnswer(.failure(DeviceProblem(why)))]
        case (.enrolling, _):
            return whileEnrolling(event)
        case (_, .enrollment):
            return []  // a late report of a session that has ended
        case (.none, .started):
            return leave(to: .ready) + [.leds(readyLEDs)]  // muted, when it starts muted
        case (.none, .shutdown):
            return [.leds(.off), .stopped]
        case (.none, .textQuery(let query, let id)):
            return [.refuseQuestion(id: id, query: query, reason: "the speaker is not running")]
        case (.none, .setMuted(let on)):
            // The saved mute, read before the start so that nothing can see the speaker unmuted meanwhile: nothing
            // is open yet, and the start shows it (the muted LEDs).
            muted = on
            return []
        case (.none, _):
            return []
        case (.ready, .hold):
            return muted ? say(.text(Self.mutedSentence)) : startListening(preRoll: false, held: true)
        case (_, .hold):
            return transition(.talk)  // in every other state a hold is what any press is
        case (_, .shutdown):
            var effects: [SpeakerEffect] = []
            if state == .recording || state == .searching { effects.append(.cancelSearch) }
            if state == .speaking || state == .ringing { effects.append(.stopSpeaking) }
            return effects + leave(to: .none) + [.leds(.off), .stopped]
        case (_, .watchdog(let g)) where g != watchdogGeneration:
            return []  // an old watchdog, from a state already left
        case (_, .timersRunning(let running, let lastMinute)):
            timersRunning = running
            timerLastMinute = running && lastMinute
            return state == .ready ? [.leds(readyLEDs)] : []
        case (_, .toggleMute):
            return mute(!muted)
        case (_, .setMuted(let on)):
            return on == muted ? [] : mute(on)
        case (_, .clearConversation):
            return [.clearConversation]
        case (_, .setupMode(let on)):
            guard on != settingUp else { return [] }
            settingUp = on
            return state == .ready ? [.leds(readyLEDs)] : []
        case (_, .networkBack):
            guard offline else { return [] }
            offline = false
            return state == .ready ? [.leds(readyLEDs)] : []
        case (_, .carryOut(let action)):
            return carryOut(action)
        case (_, .announce(let text)):
            // Played by handle() as soon as the speaker is ready (now, if it is).
            pendingAnnouncements.append(text)
            if pendingAnnouncements.count > Self.announcementLimit { pendingAnnouncements.removeFirst() }
            return []
        case (_, .textQuery(let query, let id)):
            if let reason = questionRefusal { return [.refuseQuestion(id: id, query: query, reason: reason)] }
            return ask(query, id: id)
        case (.speaking, .listen):
            return [.stopSpeaking] + (muted ? say(.text(Self.mutedSentence)) : startListening(preRoll: false))
        case (_, .listen):
            return transition(.talk)
        case (.ringing(let ring), .soundEnded(let end, let id)) where id == ring:
            // The ring goes round again until someone stops it; an output that failed is not retried in a spin.
            let effects = soundEnded(end, id: id)
            guard end == .finished else { return effects }
            let next = earcon(.timer)
            if case .playEarcon(_, let again) = next { phase = .ringing(earcon: again) }
            return effects + [next]
        case (.ringing, .hotPhrase) where settings.bargeIn && !muted:
            // "OK Hound" over the ring: it stops, and the question after the phrase is heard.
            return [.stopSpeaking, .stopRinging] + startListening(preRoll: true)
        case (.ringing, .stopPhrase) where !muted:
            return stopRinging()
        case (.ringing, .cancel), (.ringing, .talk), (.ringing, .press), (.ringing, .hotPhrase), (.ringing, .endTalk):
            // A press stops the ringing first of all (and only that: the next press talks).
            return stopRinging()
        case (.ringing, .watchdog):
            return stopRinging()  // nobody came: it stops by itself
        case (.ringing, _):
            return []
        case (_, .cancel):
            return cancelAll()
        case (.ready, .timerDue):
            return startRinging()
        case (.speaking, .timerDue):
            // An answer is cut short for a timer (the pasta matters more); a question being asked is not.
            return [.stopSpeaking] + startRinging()
        case (_, .timerDue):
            ringPending = true
            return []

        case (.ready, .talk), (.ready, .press):
            return muted ? say(.text(Self.mutedSentence)) : startListening(preRoll: false)
        case (.ready, .hotPhrase) where muted:
            return []  // a detection already on its way when the microphone was released
        case (.ready, .hotPhrase):
            // The router gates the detector while our sound plays; this catches a detection already on its way.
            return soundPlaying && !settings.bargeIn ? [] : startListening(preRoll: true)
        case (.ready, _):
            return []

        case (.recording(_, held: true, _), .endOfSpeech), (.recording(_, held: true, _), .noSpeech):
            // A pause (or the service's SafeToStopAudio) while the button is held: the person is still asking.
            return []
        case (.recording, .questionLimit):
            return [.endAudio, earcon(.stopListening)] + enter(.searching(pressDown: false, held: nil)) + [.leds(.searching)]
        case (.recording(_, held: true, _), .watchdog):
            // Held past the speaker's recording limit: what was said is sent, as a release would.
            return [.endAudio, earcon(.stopListening)] + enter(.searching(pressDown: false, held: nil)) + [.leds(.searching)]
        case (.recording, .press):
            // The press that ends the question may become a long press, which cancels it: until the button comes
            // up, the upload is left unfinished, so a cancelled question never reaches Houndify whole.
            return [.stopRecording, earcon(.stopListening)] + enter(.searching(pressDown: true, held: nil)) + [.leds(.searching)]
        case (.recording, .talk), (.recording, .endTalk), (.recording, .endOfSpeech):
            return [.endAudio, earcon(.stopListening)] + enter(.searching(pressDown: false, held: nil)) + [.leds(.searching)]
        case (.recording(quiet: true, _, _), .noSpeech):
            return [.cancelSearch, earcon(.stopListening)] + leave(to: .ready) + [.leds(readyLEDs)]
        case (.recording, .noSpeech) where wokenByHotPhrase:
            // Nothing after "OK Hound": most wakes like this are false (the TV, a word like it), and a sentence each
            // time would make them worse. The earcon and the LEDs say it went back to ready (as peers do); a press
            // that hears nothing is still told so below, since a person is certainly there.
            return [.cancelSearch, .falseWake(.heardNothing), earcon(.stopListening)] + leave(to: .ready) + [.leds(readyLEDs)]
        case (.recording, .noSpeech):
            return [.cancelSearch] + fail(.nothingHeard)
        case (.recording, .answer(let answer)):
            return [.endAudio] + answered(answer)
        case (.recording, .searchFailed(let failure, let said)):
            return fail(failure, said: said)  // handle() closes the microphone, as on every way out of recording
        case (.recording, .watchdog):
            // The endpointer ends every query well before this, so no audio has been arriving: the microphone.
            return [.cancelSearch] + fail(.microphone)
        case (.recording, _):
            return []

        case (.searching(pressDown: true, _), _) where event.isOutcome:
            phase = .searching(pressDown: true, held: event)
            return []
        case (.searching(pressDown: true, let held), .tapEnded):
            // A tap after all: the question is sent whole now.
            phase = .searching(pressDown: false, held: nil)
            return [.endAudio] + (held.map { transition($0) } ?? [])
        case (.searching, .answer(let answer)):
            return answered(answer)
        case (.searching, .searchFailed(let failure, let said)):
            return fail(failure, said: said)
        case (.searching, .talk), (.searching, .press):
            return cancelAll()
        case (.searching, .watchdog):
            return [.cancelSearch] + fail(.serviceFailing)
        case (.searching, _):
            return []

        case (.speaking, .talk), (.speaking, .press):
            return [.stopSpeaking] + leave(to: .ready) + [.leds(readyLEDs)]
        case (.speaking, .stopPhrase) where !muted:
            // "Stop" over the answer: it stops, and nothing more is heard (a press does the same).
            return [.stopSpeaking] + leave(to: .ready) + [.leds(readyLEDs)]
        case (.speaking, .hotPhrase) where settings.bargeIn && !muted:
            // "OK Hound" over the answer (barge-in): it stops at once and the next question is heard.
            return [.stopSpeaking] + startListening(preRoll: true)
        case (.speaking(let reopen, let learn, _), .speechEnded(let end, let id)):
            _ = soundEnded(end, id: id)
            let learned: [SpeakerEffect] = learn && end == .finished ? [.answeredWake] : []
            // Not into a microphone the owner has muted, nor after an answer that never reached the ear.
            guard reopen != .no, !muted, end != .outputFailed else {
                return learned + leave(to: .ready) + [.leds(readyLEDs)]
            }
            return learned + startListening(preRoll: false, quiet: reopen == .followUp, reopened: true)
        case (.speaking, .watchdog):
            // The speech output itself is what hangs, so another sentence would hang too: the earcon says it.
            return [.stopSpeaking, earcon(.error)] + leave(to: .ready) + [.leds(readyLEDs)]
        case (.speaking, _):
            return []
        }
    }

    // MARK: Spoken enrollment

    private mutating func startEnrollment(_ phrase: String) -> [SpeakerEffect] {
        enrollmentID += 1
        enrollmentWordsPending = nil
        let session = EnrollmentSession(phrase: phrase)
        let entered = enter(.enrolling(session)) + [.startEnrolling(id: enrollmentID)]
        let started = drive(.start)
        return [.enrollmentAnswer(.success(enrollment?.progress ?? session.progress))] + entered + started
    }

    /// While a session runs, the button, the listen command, the hot phrase and "stop" end it and do nothing else;
    /// what needs the speaker (a timer going off, a typed question, an announcement, mute, shutdown) ends it and
    /// goes on as usual; the rest (a volume or timer command, the network back, a late search report) leaves it be.
    private mutating func whileEnrolling(_ event: SpeakerEvent) -> [SpeakerEffect] {
        switch event {
        case .enrollment(let id, let input):
            return id == enrollmentID ? drive(input) : []
        case .talk, .hold, .press, .listen, .hotPhrase:
            return drive(.abort("stopped by the button"))
        case .cancel, .stopPhrase:
            return drive(.abort("stopped (a long press, or the stop command)"))
        case .watchdog(let generation):
            guard generation == watchdogGeneration else { return [] }
            // Saving is past stopping (the takes are on their way to the file): a store that never answers fails it.
            let minutes = settings.enrollingLimitMS / 60_000
            return enrollment?.step == .saving ? drive(.saveFailed("no answer from the household's store within \(minutes) min"))
                : drive(.abort("it took longer than \(minutes) min"))
        case .speechEnded(let end, let id), .soundEnded(let end, let id):
            return soundEnded(end, id: id)
        case .tapEnded, .endTalk, .started, .partialTranscript, .endOfSpeech, .noSpeech, .questionLimit, .answer, .searchFailed:
            return []  // the end of the press that stopped it, or a search's late report
        case .enroll:
            return [.enrollmentAnswer(.failure(DeviceProblem("an enrollment is under way already (ctl stop ends it)")))]
        case .timersRunning, .networkBack, .setupMode, .clearConversation:
            return besideEnrollment(event)
        case .carryOut(.muteMicrophone):
            return endEnrollment(for: event)
        case .carryOut:
            return besideEnrollment(event)
        case .setMuted(let on) where on == muted:
            return []
        case .timerDue, .textQuery, .announce, .toggleMute, .setMuted, .shutdown:
            return endEnrollment(for: event)
        }
    }

    /// An event that leaves the session running: handled as in ready, the session kept, its LEDs too.
    private mutating func besideEnrollment(_ event: SpeakerEvent) -> [SpeakerEffect] {
        let kept = phase
        phase = .ready
        let effects = transition(event)
        phase = kept
        return effects.filter { if case .leds = $0 { false } else { true } }
    }

    /// Ends the session for `event`, then handles the event as usual. While saving it cannot be stopped: the event
    /// waits or is refused, and mute or shutdown happen at once.
    private mutating func endEnrollment(for event: SpeakerEvent) -> [SpeakerEffect] {
        let ended = drive(.abort("stopped: \(Speaker.dropReason(event, watchdogExpired: nil, settings: settings))"))
        guard enrollment != nil else { return ended + transition(event) }
        switch event {
        case .shutdown:
            return [.discardTakes] + leave(to: .none) + [.endEnrolling(id: enrollmentID), .leds(.off), .stopped]
        case .timerDue:
            ringPending = true
            return []
        case .textQuery(let query, let id):
            return [.refuseQuestion(id: id, query: query, reason: "the speaker is saving a voice; ask again in a moment")]
        case .toggleMute:
            return muteWhileSaving(!muted)
        case .setMuted(let on):
            return muteWhileSaving(on)
        case .carryOut(.muteMicrophone):
            return muteWhileSaving(true)
        default:
            return besideEnrollment(event)  // an announcement waits for ready
        }
    }

    private mutating func muteWhileSaving(_ on: Bool) -> [SpeakerEffect] {
        muted = on
        return [.setMicrophoneMuted(on), earcon(on ? .muteOn : .muteOff)]
    }

    /// Hands `input` to the session and turns what it asks into the machine's effects, its LEDs decided here.
    private mutating func drive(_ input: EnrollmentInput) -> [SpeakerEffect] {
        guard case .enrolling(var session) = phase else { return [] }
        let asked = session.handle(input)
        phase = .enrolling(session)
        let id = enrollmentID
        var effects: [SpeakerEffect] = []
        var saying = false
        for effect in asked {
            switch effect {
            case .say(let words):
                effects.append(.sayForEnrollment(words, id: id))
                saying = true
            case .stopSpeaking: effects.append(.stopSpeaking)
            case .startCapture: effects.append(.startTake(id: id))
            case .stopCapture: effects.append(.stopTake)
            case .checkTake: effects.append(.checkTake(id: id, phrase: session.phrase))
            case .show(let progress):
                effects.append(.enrollmentProgress(progress))
                switch progress.step {
                case .prompting: effects.append(.leds(.speaking))
                case .listening: effects.append(.leds(.listening))
                case .checking, .saving: effects.append(.leds(.searching))
                case .done, .failed, .aborted: break
                }
            case .save: effects.append(.saveTakes(id: id, phrase: session.phrase))
            case .discard: effects.append(.discardTakes)
            case .finished:
                // Its last words ("Done. I know your voice now.") are the speaker's own sound: the hot phrase waits for
                // their end.
                if saying { enrollmentWordsPending = id }
                effects += leave(to: .ready) + (saying ? [] : [.endEnrolling(id: id)]) + [.leds(readyLEDs)]
            }
        }
        return effects
    }

    /// The LEDs of a ready speaker.
    var readyLEDs: LEDState {
        outputMissing ? .error : muted ? .muted : settingUp ? .setup : offline ? .offline : timersRunning ? (timerLastMinute ? .timerEnding : .timer) : .ready
    }

    /// Mutes or unmutes from any state: what was going on stops (a question is dropped, not sent), a sound marks
    /// the change, and the speaker is ready with the LEDs saying so.
    private mutating func mute(_ on: Bool) -> [SpeakerEffect] {
        muted = on
        guard state != .none else { return [.setMicrophoneMuted(on)] }
        var effects: [SpeakerEffect] = []
        switch state {
        case .recording, .searching: effects = [.cancelSearch]
        case .speaking: effects = [.stopSpeaking]
        case .ringing: effects = [.stopSpeaking, .stopRinging]
        case .ready, .none, .enrolling: break  // an enrollment has ended before (endEnrollment)
        }
        effects += [.setMicrophoneMuted(on), earcon(on ? .muteOn : .muteOff)]
        if state != .ready { effects += leave(to: .ready) }
        return effects + [.leds(readyLEDs)]
    }

    /// Why a typed question cannot be asked now (nil: it can). It cuts no one off: not a person asking a question
    /// (from the press or the hot phrase until the answer comes), nor a timer or alarm ringing, which must be
    /// stopped by someone who heard it. (A microphone reopened by itself after an answer is nobody's question yet,
    /// and an answer being spoken is stopped for it, as a press stops one.)
    private var questionRefusal: String? {
        switch phase {
        case .recording(_, _, reopened: false):
            "someone is asking a question by voice; ask again once it has been answered"
        case .searching:
            "the speaker is answering another question; ask again once it has been answered"
        case .ringing:
            "a timer or alarm is ringing; stop it first (the button, or the stop command)"
        case .none:
            "the speaker is not running"
        case .ready, .recording, .speaking, .enrolling:
            nil
        }
    }

    /// A typed question, when `questionRefusal` allows it: searched at once.
    private mutating func ask(_ query: String, id: Int) -> [SpeakerEffect] {
        let effects: [SpeakerEffect]
        switch state {
        case .recording, .searching: effects = [.cancelSearch]
        case .speaking: effects = [.stopSpeaking]
        case .ringing: effects = [.stopSpeaking, .stopRinging]
        case .ready, .none, .enrolling: effects = []
        }
        return effects + enter(.searching(pressDown: false, held: nil)) + [.leds(.searching), .startTextSearch(query, id: id)]
    }

    /// A client action asked for without a question: done, and nothing said (whoever asked sees the activity).
    private mutating func carryOut(_ action: ClientAction) -> [SpeakerEffect] {
        switch action {
        case .timer(let action): [.timer(action)]
        case .alarm(let action): [.alarm(action)]
        case .volume(let action): [.volume(action)]
        case .run(let command): [.runCommand(command)]
        case .muteMicrophone: muted ? [] : mute(true)
        }
    }

    private mutating func startRinging() -> [SpeakerEffect] {
        ringPending = false
        let ring = earcon(.timer)
        guard case .playEarcon(_, let id) = ring else { return [] }
        return enter(.ringing(earcon: id)) + [.leds(.ringing), ring]
    }

    private mutating func stopRinging() -> [SpeakerEffect] {
        [.stopSpeaking, .stopRinging] + leave(to: .ready) + [.leds(readyLEDs)]
    }

    private mutating func startListening(preRoll: Bool, quiet: Bool = false, held: Bool = false, reopened: Bool = false) -> [SpeakerEffect] {
        wokenByHotPhrase = preRoll  // only the hot phrase starts a question with its pre-roll
        return [earcon(.startListening)] + enter(.recording(quiet: quiet, held: held, reopened: reopened))
            + [.leds(.listening), .startSearch(preRoll: preRoll, held: held)]
    }

    private mutating func answered(_ answer: SpeakerAnswer) -> [SpeakerEffect] {
        // Words after the hot phrase: the wake may have been a person's, which the household's detector may learn
        // from. A false wake in the middle of a conversation is answered too (Houndify hears the people talking
        // on), so an answer that is spoken waits to be heard to the end: the one stopped by a press, "stop" or
        // "OK Hound" over it teaches nothing. One with nothing spoken (speech off, a local "stop") is told now.
        let heardWords = !answer.transcript.allSatisfy(\.isWhitespace)
        let effects = answering(answer)
        guard wokenByHotPhrase, heardWords else { return effects }
        if case .speaking(let reopen, _, let utterance) = phase {
            phase = .speaking(reopen: reopen, learn: true, utterance: utterance)
            return [.holdAnsweredWake] + effects
        }
        return [.holdAnsweredWake, .answeredWake] + effects
    }

    private mutating func answering(_ answer: SpeakerAnswer) -> [SpeakerEffect] {
        // An answer of the device's own is no sign that the internet is back.
        if let device = answer.device {
            if device.failure == .offline { offline = true }
        } else {
            offline = false
        }
        switch answer.device?.tell {
        case .time?: return say(.time)
        case .date?: return say(.date)
        case nil: break
        }
        switch answer.action {
        case .timer(let action)?: return [.timer(action)] + say(.actionOutcome(answer.responses))
        case .alarm(let action)?: return [.alarm(action)] + say(.actionOutcome(answer.responses))
        case .volume(let action)?: return [.volume(action)] + say(.actionOutcome(answer.responses))
        case .run(let command)?: return [.runCommand(command)] + say(.text(answer.text))
        case .muteMicrophone?:
            // Said first, then muted: the sound of the change ends it, as for the double press.
            muted = true
            return [.setMicrophoneMuted(true)] + say(.text(answer.text))
        case nil: break
        }
        if wokenByHotPhrase && answer.transcript.allSatisfy(\.isWhitespace) {
            // Houndify heard no words after the hot phrase (a noise ended the recording): a false wake, as above.
            return [.falseWake(.heardNothing), earcon(.stopListening)] + leave(to: .ready) + [.leds(readyLEDs)]
        }
        switch answer.localCommand {
        case .stop?:
            return leave(to: .ready) + [.leds(.ready)]
        case .volumeUp?:
            return [.volume(.step(up: true))] + say(.actionOutcome(nil))
        case .volumeDown?:
            return [.volume(.step(up: false))] + say(.actionOutcome(nil))
        case .ipAddress?:
            return say(.ipAddress)
        case nil:
            // An answer with nothing to say (no results, or responses that are not text) must not be silence.
            let text = answer.text.allSatisfy(\.isWhitespace) ? SpeakerAnswer.nothingToSay : answer.text
            let utterance: Utterance = answer.voice.map { .recorded($0, text: text) } ?? .text(text)
            return say(utterance, reopen: answer.autoListen ? .autoListen : settings.followUp ? .followUp : .no)
        }
    }

    private mutating func say(_ utterance: Utterance, reopen: Reopen = .no) -> [SpeakerEffect] {
        guard settings.enableSpeech else {
            return [.show(utterance)] + leave(to: .ready) + [.leds(readyLEDs)]
        }
        let id = newSoundID()
        return enter(.speaking(reopen: reopen, utterance: id)) + [.leds(.speaking), .speak(utterance, id: id)]
    }

    private mutating func fail(_ failure: SearchFailure, said: String? = nil) -> [SpeakerEffect] {
        if failure == .offline { offline = true }
        let sentence = said ?? failure.sentence(offlineCommands: settings.offlineCommands)
        guard settings.enableSpeech else {
            return [earcon(.error), .show(.text(sentence))] + leave(to: .ready) + [.leds(readyLEDs)]
        }
        let error = earcon(.error)
        let id = newSoundID()
        return [error] + enter(.speaking(reopen: .no, utterance: id)) + [.leds(.error), .speak(.text(sentence), id: id)]
    }

    private mutating func cancelAll() -> [SpeakerEffect] {
        let effects: [SpeakerEffect]
        switch state {
        case .recording, .searching: effects = [.cancelSearch] + (wokenByHotPhrase ? [.falseWake(.cancelled)] : [])
        case .speaking, .ringing: effects = [.stopSpeaking]
        case .ready, .none, .enrolling: return []
        }
        return effects + [earcon(.cancel)] + leave(to: .ready) + [.leds(readyLEDs)]
    }

    /// A new sound id, counted as playing until its end is reported.
    private mutating func newSoundID() -> Int {
        lastSoundID += 1
        playing.insert(lastSoundID)
        return lastSoundID
    }

    /// `earcon`, with an id of its own.
    private mutating func earcon(_ earcon: Earcon) -> SpeakerEffect {
        .playEarcon(earcon, id: newSoundID())
    }

    // Not inlined, as `Phase.state`: inlined into `transition`, Swift 6.2's optimizer (with assertions, as Debian
    // builds it) ends the borrow of the stored phase before the switch and stops on an ownership error.

    /// The utterance being said now, if the machine is speaking.
    public var speakingID: Int? {
        @inline(never) get { if case .speaking(_, _, let id) = phase { id } else { nil } }
    }

    /// The ring playing now, if the machine is ringing.
    public var ringingID: Int? {
        @inline(never) get { if case .ringing(let id) = phase { id } else { nil } }
    }

    /// Sound `id` has ended; in ready, the LEDs follow a change in what it says about the output device. An end
    /// of no sound playing (told twice, or never asked for) changes nothing.
    private mutating func soundEnded(_ end: SoundEnd, id: Int) -> [SpeakerEffect] {
        guard playing.remove(id) != nil else { return [] }
        let was = outputMissing
        switch end {
        case .finished: outputMissing = false  // a sound played through: the speaker is there
        case .outputFailed: outputMissing = true
        case .interrupted: break
        }
        return state == .ready && was != outputMissing ? [.leds(readyLEDs)] : []
    }

    /// Enters a busy state, armed with its watchdog.
    private mutating func enter(_ next: Phase) -> [SpeakerEffect] {
        changeState(to: next) + [.armWatchdog(generation: watchdogGeneration, ms: settings.limitMS(in: next.state))]
    }

    /// Enters ready or none: no watchdog.
    private mutating func leave(to next: Phase) -> [SpeakerEffect] {
        changeState(to: next) + [.disarmWatchdog]
    }

    /// A new phase, with a new watchdog generation. Re-entering the same state (a typed question replacing the one
    /// being searched) starts it anew but is no change of state, so it is not announced.
    private mutating func changeState(to next: Phase) -> [SpeakerEffect] {
        let previous = state
        phase = next
        watchdogGeneration += 1
        return previous == next.state ? [] : [.stateChanged(from: previous, to: next.state)]
    }
}

extension SpeakerMachine.Settings {
    /// The limit of the watchdog that guards `state`.
    public func limitMS(in state: SpeakerState) -> Int {
        switch state {
        case .recording: recordingLimitMS
        case .searching: searchingLimitMS
        case .ringing: ringingLimitMS
        case .enrolling: enrollingLimitMS
        default: speakingLimitMS
        }
    }
}
