public import JSONKit

/// Why a take was refused, as the take checks say it (HotPhrase's `TakeProblem`, docs/household.md, "A take
/// becomes a template"): the kind picks what the speaker says, `detail` is the checks' own words (shown and logged).
/// SpeakerCore has no C and no HotPhrase: Assembly turns a `TakeProblem` into this.
public struct TakeRefusal: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable {
        case clipped
        case tooQuiet = "too_quiet"
        case noSpeech = "no_speech"
        /// The speech (or the whole recording) was too long.
        case tooLong = "too_long"
        /// Unlike the takes of the phrase the household has already.
        case unlike
    }

    public var kind: Kind
    public var detail: String

    public init(_ kind: Kind, detail: String) {
        self.kind = kind
        self.detail = detail
    }
}

/// Where an enrollment session is.
public enum EnrollmentStep: String, Sendable, Equatable {
    /// A prompt is being said ("Say OK Hound", "Got it, 2 more", why the last take was refused).
    case prompting
    /// One take is being recorded.
    case listening
    /// The take is being checked.
    case checking
    /// The accepted takes are being saved.
    case saving
    case done
    /// Ended without keeping anything: too many takes refused, or the takes could not be saved.
    case failed
    /// Stopped by a button press or `ctl stop`; nothing kept.
    case aborted
}

/// What the LEDs, the screen, `ctl status` and the event stream show of a session.
public struct EnrollmentProgress: Sendable, Equatable {
    public var phrase: String
    public var step: EnrollmentStep
    /// The take asked for now, 1-based: accepted takes + 1 (at most `needed`).
    public var take: Int
    public var accepted: Int
    public var needed: Int
    /// Takes recorded so far (accepted or refused), and the most there may be.
    public var attempts: Int
    public var maxAttempts: Int
    /// Why the latest take was refused, until the next is recorded (nil: it was accepted, or none was checked yet).
    public var lastRefusal: TakeRefusal?
    /// How it ended, for `failed` and `aborted`.
    public var reason: String?

    /// The event's and the status's fields (docs/control-api.md, "enroll").
    public var fields: [(String, JSONValue)] {
        [("phrase", .string(phrase)), ("step", .string(step.rawValue)), ("take", .int(Int64(take))),
         ("accepted", .int(Int64(accepted))), ("needed", .int(Int64(needed))), ("attempts", .int(Int64(attempts))),
         ("max_attempts", .int(Int64(maxAttempts))), ("summary", .string(summary)),
         ("refused", lastRefusal.map { .string($0.kind.rawValue) } ?? .null),
         ("refusal", lastRefusal.map { .string($0.detail) } ?? .null), ("reason", reason.map { .string($0) } ?? .null)]
    }

    /// "take 2 of 3", as the screen shows it.
    public var summary: String {
        switch step {
        case .done: "done: \(accepted) of \(needed) takes kept"
        case .failed, .aborted: "\(step.rawValue): nothing kept"
        default: "take \(take) of \(needed)"
        }
    }
}

/// What a session asks its driver to do, in order.
public enum EnrollmentEffect: Sendable, Equatable {
    /// Say these words; the driver sends `.spoken` when they have been said.
    case say(String)
    /// Stop the words being said now (the session was stopped while it prompted).
    case stopSpeaking
    /// Record one take from the microphone; the driver sends `.captured` when the take's recording has ended.
    case startCapture
    /// Stop recording; the take recorded is checked only when `.checkTake` follows.
    case stopCapture
    /// Run the take checks (and "unlike the others" against the phrase's takes so far, the session's accepted ones
    /// included); the driver sends `.accepted` (holding the take, not yet saved) or `.refused`.
    case checkTake
    case show(EnrollmentProgress)
    /// Keep the accepted takes (the household's file, as `enroll` does); the driver sends `.saved` or `.saveFailed`.
    case save
    /// Drop the accepted takes held so far: nothing is kept.
    case discard
    /// The session is over.
    case finished(EnrollmentOutcome)
}

public enum EnrollmentOutcome: Sendable, Equatable {
    /// The takes were saved.
    case done(takes: Int)
    /// Too many takes were refused, or the takes could not be checked or saved; nothing was kept.
    case failed(String)
    /// Stopped; nothing was kept.
    case aborted(String)
}

/// What the driver tells a session.
public enum EnrollmentInput: Sendable, Equatable {
    case start
    /// The prompt asked for has been said (or could not be: the session goes on either way).
    case spoken
    /// The take's recording has ended (the driver decides its length).
    case captured
    case accepted
    case refused(TakeRefusal)
    /// The take could not be checked at all (the household's file unreadable): not the take's fault, so the
    /// session ends, keeping nothing.
    case checkFailed(String)
    case saved
    case saveFailed(String)
    /// A button press, `ctl stop`, or the speaker shutting down: `reason` says which.
    case abort(String)
}

/// "Teach it my voice" (issue #37): the speaker asks for the phrase, records one take at a time, has it checked,
/// and after three accepted takes saves them and says so. At most five takes are recorded; once too many are
/// refused for three to be accepted, it ends and keeps nothing. Pure: the driver (the speaker's loop, or
/// `hound-speaker enroll` on its own) carries out the effects and reports back with inputs. An input that does
/// not belong to the current step (a late `.captured`, a second `.start`) changes nothing.
public struct EnrollmentSession: Sendable, Equatable {
    public static let takesNeeded = 3
    public static let maxAttempts = 5

    public let phrase: String
    public private(set) var step: EnrollmentStep? = nil
    public private(set) var accepted = 0
    public private(set) var attempts = 0
    public private(set) var lastRefusal: TakeRefusal?
    public private(set) var reason: String?

    public init(phrase: String) {
        self.phrase = phrase
    }

    /// Whether the session has ended (done, failed or aborted).
    public var isOver: Bool { step == .done || step == .failed || step == .aborted }

    public var progress: EnrollmentProgress {
        EnrollmentProgress(phrase: phrase, step: step ?? .prompting, take: min(accepted + 1, Self.takesNeeded),
                           accepted: accepted, needed: Self.takesNeeded, attempts: attempts, maxAttempts: Self.maxAttempts,
                           lastRefusal: lastRefusal, reason: reason)
    }

    public mutating func handle(_ input: EnrollmentInput) -> [EnrollmentEffect] {
        switch (step, input) {
        case (nil, .start):
            return prompt("Say \(phrase)")
        case (.prompting?, .spoken):
            step = .listening
            return [.show(progress), .startCapture]
        case (.listening?, .captured):
            step = .checking
            attempts += 1
            lastRefusal = nil
            return [.stopCapture, .show(progress), .checkTake]
        case (.checking?, .accepted):
            accepted += 1
            lastRefusal = nil
            if accepted == Self.takesNeeded {
                step = .saving
                return [.show(progress), .save]
            }
            let left = Self.takesNeeded - accepted
            return prompt("Got it, \(left) more")
        case (.checking?, .refused(let refusal)):
            lastRefusal = refusal
            let attemptsLeft = Self.maxAttempts - attempts
            if accepted + attemptsLeft < Self.takesNeeded {
                let refusedCount = attempts - accepted
                return end(.failed, reason: "\(refusedCount) of \(attempts) takes were refused (the last: \(refusal.detail)); nothing was kept",
                           saying: Self.retry(refusal.kind, phrase: phrase, again: false) + ". That's too many tries, so I kept nothing. Let's try again later.",
                           outcome: { .failed($0) })
            }
            return prompt(Self.retry(refusal.kind, phrase: phrase, again: true))
        case (.checking?, .checkFailed(let why)):
            return end(.failed, reason: "the take could not be checked: \(why)",
                       saying: "Sorry, something went wrong, so I kept nothing.", outcome: { .failed($0) })
        case (.saving?, .saved):
            step = .done
            return [.show(progress), .say("Done. I know your voice now."), .finished(.done(takes: accepted))]
        case (.saving?, .saveFailed(let why)):
            return end(.failed, reason: "the takes could not be saved: \(why)",
                       saying: "Sorry, I couldn't keep your voice.", outcome: { .failed($0) })
        case (let current?, .abort(let why)) where current == .prompting || current == .listening || current == .checking:
            // While saving, the takes are already on their way to the file: a stop then is too late to keep nothing.
            var effects: [EnrollmentEffect] = current == .prompting ? [.stopSpeaking] : current == .listening ? [.stopCapture] : []
            effects += end(.aborted, reason: why, saying: nil, outcome: { .aborted($0) })
            return effects
        default:
            return []
        }
    }

    private mutating func prompt(_ words: String) -> [EnrollmentEffect] {
        step = .prompting
        return [.show(progress), .say(words)]
    }

    private mutating func end(_ final: EnrollmentStep, reason why: String, saying words: String?,
                              outcome: (String) -> EnrollmentOutcome) -> [EnrollmentEffect] {
        step = final
        reason = why
        var effects: [EnrollmentEffect] = [.discard, .show(progress)]
        if let words { effects.append(.say(words)) }
        effects.append(.finished(outcome(why)))
        return effects
    }

    /// What the speaker says of a refused take: why, and (`again`) to say it again.
    static func retry(_ kind: TakeRefusal.Kind, phrase: String, again: Bool) -> String {
        let why = switch kind {
        case .clipped: "That was too loud"
        case .tooQuiet: "That was too quiet"
        case .noSpeech: "I didn't hear it"
        case .tooLong: "That was too long"
        case .unlike: "That sounded different from the others"
        }
        guard again else { return why }
        return switch kind {
        case .clipped: why + ", say it again a little further away"
        case .tooLong: why + ", say just \(phrase)"
        case .unlike: why + ", say it again the same way"
        default: why + ", say it again"
        }
    }
}
