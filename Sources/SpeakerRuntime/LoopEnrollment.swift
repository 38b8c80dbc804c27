public import SpeakerCore
import BoardCore
import Logging
import Synchronization

/// A spoken enrollment in the loop (issue #37, `ctl enroll`): the loop runs an `EnrollmentSession` beside the
/// state machine, which stays ready meanwhile. The session's words go out through the speech port, its takes come
/// from the always-on microphone (`CaptureRouter`'s `TakeRecorder`, the hot phrase not listened for meanwhile),
/// and its checks and save through the enrollment port, each reporting back as a `LoopInput` tagged with the
/// session's number (a late report of a session that ended is dropped).
struct Enrolling {
    var id: Int
    var session: EnrollmentSession
    /// The take recorded last, until it is checked.
    var take: [Int16] = []
}

extension SpeakerLoop {
    /// Said when the button's set-up hold cannot start an enrollment (the log says why).
    public static let cannotTeach = "I can't learn your voice right now."

    /// Starts a spoken enrollment of `phrase` (nil: the model's own): its first progress, or why it cannot start
    /// (the speaker busy, muted, without a microphone, or unable to learn voices).
    public func enroll(phrase: String?) async -> Result<EnrollmentProgress, DeviceProblem> {
        await withCheckedContinuation { reply in
            if case .terminated = continuation.yield(.startEnrollment(phrase: phrase, reply: reply)) {
                reply.resume(returning: .failure(DeviceProblem("the speaker is shutting down")))
            }
        }
    }
}

extension LoopRun {
    /// Carries out the enrollment's own inputs; true when `input` was one.
    mutating func enrollmentInput(_ input: LoopInput, in group: inout DiscardingTaskGroup) -> Bool {
        switch input {
        case .startEnrollment(let phrase, let reply):
            reply.resume(returning: startEnrollment(phrase, in: &group))
        case .enrollFromButton:
            // The person is at the speaker with no screen to read: why it cannot start is said, as a question's
            // problems are (the long press before it has already ended whatever was going on).
            if case .failure(let problem) = startEnrollment(nil, in: &group) {
                logger.notice("set-up hold: no enrollment: \(problem.message)")
                let words = SpeakerLoop.cannotTeach
                tell(.speech(words))
                let playback = ports.speech.speak(words, onFirstSample: {})
                group.addTask { _ = await playback.ended() }
            }
        case .enrollment(let id, let step):
            // The last words of a session that has ended are said: the hot phrase is listened for again.
            if step == .spoken, enrolling?.id != id { router.endEnrolling(id) }
            drive(id, step, in: &group)
        case .takeRecorded(let id, let samples):
            if enrolling?.id == id {
                enrolling?.take = samples
                drive(id, .captured, in: &group)
            }
        case .microphone(.lost(let why)):
            // No frames, no take (the recorder's wait is counted in frames): the session ends rather than waits.
            if let id = enrolling?.id { drive(id, .abort("the microphone was lost: \(why)"), in: &group) }
            return false  // the loop tells it as ever
        default:
            return false
        }
        return true
    }

    /// While a session runs, the button, the listen command and `stop` end it and do nothing else; anything else
    /// that needs the speaker (a timer going off, a typed question, an announcement, mute, shutdown) ends it and
    /// goes on as usual. True: `event` was the session's alone.
    mutating func enrollmentTakes(_ event: SpeakerEvent, in group: inout DiscardingTaskGroup) -> Bool {
        guard let id = enrolling?.id else { return false }
        switch event {
        case .talk, .hold, .press, .listen, .hotPhrase:
            drive(id, .abort("stopped by the button"), in: &group)
            return true
        case .cancel, .stopPhrase:
            drive(id, .abort("stopped (a long press, or the stop command)"), in: &group)
            return true
        case .tapEnded, .endTalk:
            return true  // the end of the press that stopped it
        case .timersRunning, .networkBack, .watchdog, .speechEnded, .soundEnded, .started, .partialTranscript, .endOfSpeech,
             .noSpeech, .answer, .searchFailed:
            return false  // nothing the session is in the way of
        default:
            drive(id, .abort("stopped: \(Speaker.dropReason(event, watchdogExpired: nil, settings: .init()))"), in: &group)
            return false
        }
    }

    private mutating func startEnrollment(_ phrase: String?, in group: inout DiscardingTaskGroup) -> Result<EnrollmentProgress, DeviceProblem> {
        guard let port = ports.enrollment, ports.hotPhrase != nil else {
            return .failure(DeviceProblem("this speaker cannot learn voices: it does not listen for the hot phrase ([hotphrase] enabled = false)"))
        }
        if let why = port.unavailable { return .failure(DeviceProblem(why)) }
        // Spaces around and between the words are not part of the phrase (Household compares phrases so too).
        let text = phrase.map { $0.split(whereSeparator: \.isWhitespace).joined(separator: " ") } ?? port.defaultPhrase
        if enrolling != nil { return .failure(DeviceProblem("an enrollment is under way already (ctl stop ends it)")) }
        if speaker.machine.muted { return .failure(DeviceProblem("the microphone is muted: unmute it to enroll")) }
        if speaker.machine.state != .ready {
            return .failure(DeviceProblem("the speaker is busy (\(speaker.machine.state.rawValue)): enroll when it is ready"))
        }
        if !speaker.microphoneUp { return .failure(DeviceProblem("microphone \(ports.microphone.device) is not available: nothing to record")) }
        enrollmentCount += 1
        let id = enrollmentCount
        enrolling = Enrolling(id: id, session: EnrollmentSession(phrase: text))
        router.startEnrolling(id)
        drive(id, .start, in: &group)
        return .success(enrolling?.session.progress ?? EnrollmentSession(phrase: text).progress)
    }

    /// Hands `input` to session `id` (if it is still the one under way) and carries out what it asks.
    private mutating func drive(_ id: Int, _ input: EnrollmentInput, in group: inout DiscardingTaskGroup) {
        guard enrolling?.id == id else { return }
        let effects = enrolling?.session.handle(input) ?? []
        guard let port = ports.enrollment else { return }
        var saying: (any Playback)?
        for effect in effects {
            switch effect {
            case .say(let words):
                tell(.speech(words))
                let playback = ports.speech.speak(words, onFirstSample: {})
                saying = playback
                group.addTask { [continuation] in
                    _ = await playback.ended()
                    continuation.yield(.enrollment(id: id, .spoken))
                }
            case .stopSpeaking:
                ports.speech.stopSpeaking()
            case .startCapture:
                router.startTake(id: id)
            case .stopCapture:
                router.stopTake()
            case .checkTake:
                let (take, phrase) = (enrolling?.take ?? [], enrolling?.session.phrase ?? "")
                enrolling?.take = []
                port.check(take, phrase: phrase) { [continuation] verdict in
                    let input: EnrollmentInput = switch verdict {
                    case .success: .accepted
                    case .failure(.refused(let refusal)): .refused(refusal)
                    case .failure(.failed(let why)): .checkFailed(why)
                    }
                    continuation.yield(.enrollment(id: id, input))
                }
            case .show(let progress):
                loop.published.withLock { $0.enrollment = progress }  // the snapshot is its only holder
                tell(.enrollment(progress))
                let leds: LEDState? = switch progress.step {
                case .prompting: .speaking
                case .listening: .listening
                case .checking, .saving: .searching
                case .done, .failed, .aborted: nil
                }
                if let leds {
                    ports.board?.show(leds)
                    tell(.leds(leds))
                }
            case .save:
                let phrase = enrolling?.session.phrase ?? ""
                port.save(phrase: phrase) { [continuation] problem in
                    continuation.yield(.enrollment(id: id, problem.map { .saveFailed($0) } ?? .saved))
                }
            case .discard:
                port.discard()
            case .finished:
                enrolling = nil
                let leds = speaker.machine.readyLEDs
                // Its last words ("Done. I know your voice now.") are the speaker's own sound too, which the machine
                // does not know of: the hot phrase is listened for again once they end (their `.spoken`).
                if saying == nil { router.endEnrolling(id) }
                ports.board?.show(leds)
                tell(.leds(leds))
            }
        }
    }
}
