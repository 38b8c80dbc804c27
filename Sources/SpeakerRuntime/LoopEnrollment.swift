public import SpeakerCore
import Logging

extension SpeakerLoop {
    /// Said when the button's set-up hold cannot start an enrollment (the log says why).
    public static let cannotTeach = SpeakerMachine.cannotTeach

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

/// A spoken enrollment is a state of the core (`SpeakerMachine`, enrolling), which decides its prompts, its takes,
/// its LEDs and what ends it. The loop only records the takes (the capture router's `TakeRecorder`), has them
/// checked and saved through the enrollment port, and reports back, each report tagged with the session's number.
extension LoopRun {
    /// The core's input for one of the enrollment's loop inputs (nil: `input` is none of them).
    mutating func enrollmentInput(_ input: LoopInput) -> Speaker.Input? {
        switch input {
        case .startEnrollment(let phrase, let reply):
            // Answered within this input's step (`.enrollmentAnswer`): at most one waits at a time.
            enrollmentReply?.resume(returning: .failure(DeviceProblem("another enrollment was asked for at the same moment")))
            enrollmentReply = reply
            return startEnrollment(phrase, fromButton: false)
        case .enrollFromButton:
            return startEnrollment(nil, fromButton: true)
        case .enrollment(let id, let step):
            return .event(.enrollment(id: id, step))
        case .takeRecorded(let id, let samples):
            take = (id, samples)
            return .event(.enrollment(id: id, .captured))
        default:
            return nil
        }
    }

    private func startEnrollment(_ phrase: String?, fromButton: Bool) -> Speaker.Input {
        let port = ports.enrollment
        return .startEnrollment(phrase: phrase, defaultPhrase: port?.defaultPhrase ?? "", unavailable: port?.unavailable,
                                fromButton: fromButton)
    }

    /// The asker of `.startEnrollment` gets the core's answer; the button's hold has nobody waiting, so its refusal
    /// is logged (the core has it said).
    mutating func answerEnrollment(_ answer: Result<EnrollmentProgress, DeviceProblem>) {
        if let reply = enrollmentReply.take() {
            reply.resume(returning: answer)
        } else if case .failure(let problem) = answer {
            logger.notice("set-up hold: no enrollment: \(problem.message)")
        }
    }

    mutating func sayForEnrollment(_ words: String, id: Int, in group: inout DiscardingTaskGroup) {
        tell(.speech(words))
        let playback = ports.speech.speak(words, onFirstSample: {})
        group.addTask { [continuation] in
            _ = await playback.ended()
            continuation.yield(.enrollment(id: id, .spoken))
        }
    }

    /// Has the take recorded for enrollment `id` checked; the verdict comes back to the core.
    mutating func checkTake(id: Int, phrase: String) {
        let samples = take?.id == id ? take?.samples ?? [] : []
        take = nil
        guard let port = ports.enrollment else {
            continuation.yield(.enrollment(id: id, .checkFailed("this speaker cannot learn voices")))
            return
        }
        port.check(samples, phrase: phrase) { [continuation] verdict in
            let input: EnrollmentInput = switch verdict {
            case .success: .accepted
            case .failure(.refused(let refusal)): .refused(refusal)
            case .failure(.failed(let why)): .checkFailed(why)
            }
            continuation.yield(.enrollment(id: id, input))
        }
    }

    func saveTakes(id: Int, phrase: String) {
        guard let port = ports.enrollment else {
            continuation.yield(.enrollment(id: id, .saveFailed("this speaker cannot learn voices")))
            return
        }
        port.save(phrase: phrase) { [continuation] problem in
            continuation.yield(.enrollment(id: id, problem.map { .saveFailed($0) } ?? .saved))
        }
    }
}
