import Testing
import HotPhrase
import Assembly
@testable import SpeakerCore

/// The enrollment session driven step by step (issue #37, "Teach it my voice"): every path, by its effects.
@Suite struct EnrollmentSessionTests {
    let quiet = TakeRefusal(.tooQuiet, detail: "it is too quiet (loudest -52 dBFS, needs -40)")
    let clipped = TakeRefusal(.clipped, detail: "it is clipped (2.0 % of the samples at full scale)")
    let unlike = TakeRefusal(.unlike, detail: "it sounds unlike the other takes (z 1.2, needs 4.0)")

    func progress(_ session: EnrollmentSession, _ step: EnrollmentStep, take: Int, accepted: Int, attempts: Int,
                  refusal: TakeRefusal? = nil, reason: String? = nil) -> EnrollmentEffect {
        .show(EnrollmentProgress(phrase: session.phrase, step: step, take: take, accepted: accepted, needed: 3, attempts: attempts,
                                 maxAttempts: 5, lastRefusal: refusal, reason: reason))
    }

    /// One take recorded: the prompt said, capture started, the take ended and checked.
    /// The last refusal is shown while the next take is recorded, and cleared once it is.
    func record(_ s: inout EnrollmentSession, take: Int, accepted: Int, attempt: Int) {
        let refused = s.lastRefusal
        #expect(s.handle(.spoken) == [progress(s, .listening, take: take, accepted: accepted, attempts: attempt - 1, refusal: refused), .startCapture])
        #expect(s.step == .listening)
        #expect(s.handle(.captured) == [.stopCapture, progress(s, .checking, take: take, accepted: accepted, attempts: attempt), .checkTake])
        #expect(s.step == .checking)
    }

    @Test func threeAcceptedTakesAreSavedAndAnnounced() {
        var s = EnrollmentSession(phrase: "OK Hound")
        #expect(s.handle(.start) == [progress(s, .prompting, take: 1, accepted: 0, attempts: 0), .say("Say OK Hound")])
        record(&s, take: 1, accepted: 0, attempt: 1)
        #expect(s.handle(.accepted) == [progress(s, .prompting, take: 2, accepted: 1, attempts: 1), .say("Got it, 2 more")])
        record(&s, take: 2, accepted: 1, attempt: 2)
        #expect(s.handle(.accepted) == [progress(s, .prompting, take: 3, accepted: 2, attempts: 2), .say("Got it, 1 more")])
        record(&s, take: 3, accepted: 2, attempt: 3)
        #expect(s.handle(.accepted) == [progress(s, .saving, take: 3, accepted: 3, attempts: 3), .save])
        #expect(!s.isOver)
        #expect(s.handle(.saved) == [progress(s, .done, take: 3, accepted: 3, attempts: 3), .say("Done. I know your voice now."),
                                    .finished(.done(takes: 3))])
        #expect(s.isOver)
        #expect(s.progress.summary == "done: 3 of 3 takes kept")
        // Over: nothing more happens, whatever comes late.
        for late: EnrollmentInput in [.start, .spoken, .captured, .accepted, .refused(quiet), .saved, .abort("button")] {
            #expect(s.handle(late).isEmpty)
        }
    }

    @Test func aRefusedTakeSaysWhyAndAsksAgain() {
        var s = EnrollmentSession(phrase: "OK Hound")
        _ = s.handle(.start)
        record(&s, take: 1, accepted: 0, attempt: 1)
        #expect(s.handle(.refused(quiet)) == [progress(s, .prompting, take: 1, accepted: 0, attempts: 1, refusal: quiet),
                                              .say("That was too quiet, say it again")])
        #expect(s.progress.summary == "take 1 of 3")
        record(&s, take: 1, accepted: 0, attempt: 2)
        #expect(s.handle(.accepted) == [progress(s, .prompting, take: 2, accepted: 1, attempts: 2), .say("Got it, 2 more")])
        record(&s, take: 2, accepted: 1, attempt: 3)
        #expect(s.handle(.refused(clipped)) == [progress(s, .prompting, take: 2, accepted: 1, attempts: 3, refusal: clipped),
                                                .say("That was too loud, say it again a little further away")])
        record(&s, take: 2, accepted: 1, attempt: 4)
        #expect(s.handle(.accepted) == [progress(s, .prompting, take: 3, accepted: 2, attempts: 4), .say("Got it, 1 more")])
        // The fifth and last attempt: still enough for three.
        record(&s, take: 3, accepted: 2, attempt: 5)
        #expect(s.handle(.accepted) == [progress(s, .saving, take: 3, accepted: 3, attempts: 5), .save])
        #expect(s.handle(.saved).last == .finished(.done(takes: 3)))
    }

    @Test func eachRefusalIsSaidInItsOwnWords() {
        let said: [TakeRefusal.Kind: String] = [
            .clipped: "That was too loud, say it again a little further away",
            .tooQuiet: "That was too quiet, say it again",
            .noSpeech: "I didn't hear it, say it again",
            .tooLong: "That was too long, say just hey kitchen",
            .unlike: "That sounded different from the others, say it again the same way",
        ]
        for kind in TakeRefusal.Kind.allCases {
            var s = EnrollmentSession(phrase: "hey kitchen")
            #expect(s.handle(.start).last == .say("Say hey kitchen"))
            _ = s.handle(.spoken)
            _ = s.handle(.captured)
            #expect(s.handle(.refused(TakeRefusal(kind, detail: "why"))).last == .say(said[kind]!))
            #expect(s.progress.lastRefusal?.kind == kind)
        }
    }

    /// Three refusals leave two attempts for three takes: it ends there, keeping nothing, and says why.
    @Test func tooManyRefusalsEndItKeepingNothing() {
        var s = EnrollmentSession(phrase: "OK Hound")
        _ = s.handle(.start)
        record(&s, take: 1, accepted: 0, attempt: 1)
        _ = s.handle(.accepted)
        record(&s, take: 2, accepted: 1, attempt: 2)
        _ = s.handle(.refused(quiet))
        record(&s, take: 2, accepted: 1, attempt: 3)
        _ = s.handle(.refused(clipped))
        record(&s, take: 2, accepted: 1, attempt: 4)
        // Four attempts, one accepted: the fifth could not make three.
        let effects = s.handle(.refused(unlike))
        let expectedReason = "3 of 4 takes were refused (the last: \(unlike.detail)); nothing was kept"
        #expect(effects == [.discard, progress(s, .failed, take: 2, accepted: 1, attempts: 4, refusal: unlike, reason: expectedReason),
                            .say("That sounded different from the others. That's too many tries, so I kept nothing. Let's try again later."),
                            .finished(.failed(expectedReason))])
        #expect(s.step == .failed)
        #expect(s.progress.summary == "failed: nothing kept")
        #expect(s.handle(.spoken).isEmpty)
        #expect(s.handle(.captured).isEmpty)
    }

    @Test func threeRefusalsInARowEndItAtTheThird() {
        var s = EnrollmentSession(phrase: "OK Hound")
        _ = s.handle(.start)
        for attempt in 1...2 {
            record(&s, take: 1, accepted: 0, attempt: attempt)
            #expect(s.handle(.refused(quiet)).last == .say("That was too quiet, say it again"))
        }
        record(&s, take: 1, accepted: 0, attempt: 3)
        let effects = s.handle(.refused(quiet))
        #expect(effects.first == .discard)
        #expect(effects.last == .finished(.failed("3 of 3 takes were refused (the last: \(quiet.detail)); nothing was kept")))
        #expect(s.isOver)
    }

    @Test func aStopWhilePromptingStopsTheWordsAndKeepsNothing() {
        var s = EnrollmentSession(phrase: "OK Hound")
        _ = s.handle(.start)
        record(&s, take: 1, accepted: 0, attempt: 1)
        _ = s.handle(.accepted)  // "Got it, 2 more" being said
        #expect(s.handle(.abort("the button was pressed")) == [
            .stopSpeaking, .discard, progress(s, .aborted, take: 2, accepted: 1, attempts: 1, reason: "the button was pressed"),
            .finished(.aborted("the button was pressed")),
        ])
        #expect(s.step == .aborted)
        #expect(s.handle(.spoken).isEmpty)
        #expect(s.handle(.abort("again")).isEmpty)
    }

    @Test func aStopWhileListeningStopsTheCapture() {
        var s = EnrollmentSession(phrase: "OK Hound")
        _ = s.handle(.start)
        _ = s.handle(.spoken)
        #expect(s.handle(.abort("ctl stop")) == [
            .stopCapture, .discard, progress(s, .aborted, take: 1, accepted: 0, attempts: 0, reason: "ctl stop"), .finished(.aborted("ctl stop")),
        ])
        // The capture's end arriving after the stop checks nothing.
        #expect(s.handle(.captured).isEmpty)
    }

    @Test func aStopWhileCheckingDropsTheTake() {
        var s = EnrollmentSession(phrase: "OK Hound")
        _ = s.handle(.start)
        record(&s, take: 1, accepted: 0, attempt: 1)
        #expect(s.handle(.abort("ctl stop")).first == .discard)
        #expect(s.handle(.accepted).isEmpty)
        #expect(s.accepted == 0)
    }

    @Test func aStopWhileSavingIsTooLate() {
        var s = EnrollmentSession(phrase: "OK Hound")
        _ = s.handle(.start)
        for take in 1...3 {
            record(&s, take: take, accepted: take - 1, attempt: take)
            _ = s.handle(.accepted)
        }
        #expect(s.step == .saving)
        #expect(s.handle(.abort("ctl stop")).isEmpty)
        #expect(s.handle(.saved).last == .finished(.done(takes: 3)))
    }

    @Test func aSaveThatFailsKeepsNothingAndSaysSo() {
        var s = EnrollmentSession(phrase: "OK Hound")
        _ = s.handle(.start)
        for take in 1...3 {
            record(&s, take: take, accepted: take - 1, attempt: take)
            _ = s.handle(.accepted)
        }
        let reason = "the takes could not be saved: disk full"
        #expect(s.handle(.saveFailed("disk full")) == [
            .discard, progress(s, .failed, take: 3, accepted: 3, attempts: 3, reason: reason),
            .say("Sorry, I couldn't keep your voice."), .finished(.failed(reason)),
        ])
    }

    @Test func inputsOutOfTurnChangeNothing() {
        var s = EnrollmentSession(phrase: "OK Hound")
        #expect(s.handle(.spoken).isEmpty)
        #expect(s.handle(.abort("early")).isEmpty)
        #expect(s.step == nil)
        _ = s.handle(.start)
        #expect(s.handle(.start).isEmpty)
        #expect(s.handle(.captured).isEmpty)  // no capture before the prompt is said
        #expect(s.handle(.accepted).isEmpty)
        _ = s.handle(.spoken)
        #expect(s.handle(.spoken).isEmpty)
        #expect(s.handle(.accepted).isEmpty)  // no verdict before the take is recorded
        #expect(s.step == .listening)
        #expect(s.attempts == 0)
    }

    /// The reasons come from the real take checks.
    @Test func refusalsCarryTheTakeChecksWords() {
        let clippedTake = (0..<16_000).map { Int16($0 % 2 == 0 ? 32_767 : -32_768) }
        let quietTake = (0..<16_000).map { Int16($0 % 2 == 0 ? 10 : -10) }
        for (samples, kind) in [(clippedTake, TakeRefusal.Kind.clipped), (quietTake, .tooQuiet)] {
            do throws(TakeProblem) {
                _ = try Enrollment.check(samples)
                Issue.record("a \(kind) take passed the checks")
            } catch {
                let refusal = TakeRefusal(error)
                #expect(refusal.kind == kind)
                #expect(refusal.detail == error.description)
            }
        }
        #expect(TakeRefusal(.unlikeTheOthers(z: 1, needed: 4)).kind == .unlike)
        #expect(TakeRefusal(.recordingTooLong(seconds: 11)).kind == .tooLong)
        #expect(TakeRefusal(.speechTooLong(seconds: 3)).kind == .tooLong)
        #expect(TakeRefusal(.noSpeech).kind == .noSpeech)
    }
}

extension EnrollmentSessionTests {
    @Test func aTakeThatCannotBeCheckedEndsItKeepingNothing() {
        var s = EnrollmentSession(phrase: "OK Hound")
        _ = s.handle(.start)
        record(&s, take: 1, accepted: 0, attempt: 1)
        _ = s.handle(.accepted)
        record(&s, take: 2, accepted: 1, attempt: 2)
        let reason = "the take could not be checked: household file /x/household.json: is damaged"
        #expect(s.handle(.checkFailed("household file /x/household.json: is damaged")) == [
            .discard, progress(s, .failed, take: 2, accepted: 1, attempts: 2, reason: reason),
            .say("Sorry, something went wrong, so I kept nothing."), .finished(.failed(reason)),
        ])
        #expect(s.handle(.checkFailed("again")).isEmpty)
    }
}
