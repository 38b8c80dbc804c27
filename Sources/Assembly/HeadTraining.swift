import AudioCore
import Audio
public import HotPhrase
import Platform
public import Speech

/// A personal head trained at enrollment (docs/household.md, "The personal head"): the session's takes, clean and
/// in the measured renderings, with espeak-ng's voices as the renderings' babble, against the bank's windows.
/// What every enrollment path runs once its takes are saved (`enroll WAV...`, the command's spoken session,
/// `ctl enroll`); the templates listen from the save on, the head joins them when it is trained.
public enum HeadTraining {
    /// espeak-ng voices for the babble: accents and variants of English that every espeak-ng-data has (Debian's
    /// espeak-ng-data, a dependency of the package), male and female, at several rates and pitches.
    static let voices: [(voice: String, rate: Int, pitch: Int)] = [
        ("en-us", 175, 50), ("en-us+f3", 160, 60), ("en-gb+m3", 190, 40), ("en-gb+f2", 170, 65),
        ("en-us+m7", 150, 35), ("en-gb-x-rp+f4", 180, 55), ("en-gb-scotland+m1", 165, 45), ("en-029+f1", 185, 60),
        ("en-us+m4", 200, 50), ("en-gb-x-gbclan+f5", 155, 70),
    ]
    /// What the voices say: ordinary talk in a kitchen, none of it a wake phrase.
    public static let sentences = [
        "Could you pass me the salt and the pepper, please?",
        "I think the bus leaves at a quarter past eight tomorrow.",
        "We need milk, eggs, bread and some apples from the shop.",
        "Did you remember to call your grandmother this week?",
        "The soup needs another ten minutes on the stove.",
        "Turn the music down a little, the baby is sleeping.",
        "My meeting moved to Thursday afternoon after lunch.",
        "Whose turn is it to take the rubbish out tonight?",
        "It looks like it will rain again all weekend.",
        "Put the plates in the dishwasher when you are done.",
    ]
    /// Utterances of babble: the measurement's 100 (its babble is the head's gain in a room with noise:
    /// BENCHMARKS.md, "the personal head as a speaker can train it, and trained by the speaker's code").
    public static var babbleCount: Int { voices.count * sentences.count }

    /// Each voice saying each sentence, 16 kHz mono in [-1, 1]. Synthesised on the speech thread the speaker
    /// shares, one utterance at a time, so an answer waits behind one at most; never played.
    public static func babble() async throws(SpeechError) -> [[Float]] {
        var out: [[Float]] = []
        out.reserveCapacity(babbleCount)
        for v in voices {
            var settings = VoiceSettings()
            settings.voice = v.voice
            settings.rate = v.rate
            settings.pitch = v.pitch
            settings.leadInMS = 0
            let engine = try SpeechEngine(settings: settings)
            for sentence in sentences {
                let result = try await engine.speak(sentence, to: .memory).result().get()
                let samples = result.samples.map { Float($0) / 32768 }
                do throws(AudioFileError) {
                    // the resampler's ringing may overshoot full scale a little
                    out.append(try AudioFile.resample(samples, from: result.sampleRate, to: SpeakerAudio.sampleRate).map { max(-1, min(1, $0)) })
                } catch { throw SpeechError("the babble could not be resampled: \(error)") }
            }
        }
        return out
    }

    /// Why no head was trained, in words for the person enrolling.
    public struct Failure: Error, CustomStringConvertible {
        public let problem: String
        public var description: String { "no personal head: \(problem)" }
    }

    /// The head of one session's takes (each its samples and what `Enrollment.take` made of them), trained on a
    /// thread of its own (seconds of CPU: BENCHMARKS.md), with espeak-ng's babble.
    public static func train(takes: [(samples: [Int16], take: EnrolledTake)], model: HotPhraseModel,
                             bank: NegativeBank) async throws(Failure) -> PersonalHead {
        guard takes.count >= PersonalHead.minimumTakes else {
            throw Failure(problem: "\(takes.count) take\(takes.count == 1 ? "" : "s") in this session; a head needs \(PersonalHead.minimumTakes)")
        }
        let voices: [[Float]]
        do throws(SpeechError) { voices = try await babble() } catch {
            throw Failure(problem: "espeak-ng could not make its babble (\(error))")
        }
        // The fit's failure, or (a thread the system refused) why it never ran, in words.
        let trained: Result<PersonalHead, Failure> = await withCheckedContinuation { continuation in
            let refused = OwnedThread.tryStart(name: "hs-head") {
                do throws(HeadFit.Failure) {
                    continuation.resume(returning: .success(try PersonalHead.train(takes: takes, model: model, bank: bank, babble: voices)))
                } catch {
                    continuation.resume(returning: .failure(Failure(problem: "\(error)")))
                }
            }
            if let refused { continuation.resume(returning: .failure(Failure(problem: refused))) }
        }
        return try trained.get()
    }
}
