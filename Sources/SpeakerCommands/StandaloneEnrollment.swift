import DeviceCommands
import Assembly
import DeviceAssembly
import Audio
public import CommandSupport
public import HotPhrase
import JSONKit
import Platform
public import SpeakerConfig
import SpeakerCore
import Speech
import Synchronization

/// `hound-speaker enroll` with no recordings and no speaker running with this config: the spoken enrollment
/// (SpeakerCore's `EnrollmentSession`, as `ctl enroll` runs it in the speaker) driven here, with the config's
/// [audio] input and output. Each take is cut by the same `TakeRecorder`, checked as a recording is, and the
/// accepted ones are saved into household.json only once the third is in (Ctrl-C before that keeps nothing).
public enum StandaloneEnrollment {
    private enum Input: Sendable {
        case session(EnrollmentInput)
        case take([Int16])
        /// A take checked: the household with it added and what it made of the take (accepted), or why not.
        case checked(Result<Accepted, TakeCheckFailure>)
    }

    private struct Accepted: Sendable {
        let household: Household
        let samples: [Int16]
        let take: EnrolledTake
    }

    /// Runs the session for `phrase`; prints each step (`ControlClient.progressLine`) as it changes. True when
    /// the takes were saved.
    public static func run(phrase: String, model: HotPhraseModel, bank: NegativeBank, household path: String,
                           config: SpeakerConfiguration, print: @escaping @Sendable (String) -> Void) async throws(CommandFailure) -> Bool {
        var household: Household
        do {
            household = try Household.loadMeasured(path: path, bank: bank)
            try household.check(dim: bank.dim)
        } catch { throw CommandFailure(message: "\(error)", exitCode: 1) }
        // This session's takes are compared with each other only (Household.add): the file's may be other people's.
        let sessionStart = household.templateCount(phrase)
        let speech = try makeSpeech(config)
        let (inputs, feed) = AsyncStream.makeStream(of: Input.self)
        let recorder = Mutex<TakeRecorder?>(nil)
        let stream: any MicrophoneStream
        do throws(DeviceProblem) {
            stream = try ALSAMicrophone(config.audio.capture).open(waitForDevice: false, onEvent: { event in
                if case .lost(let why) = event { feed.yield(.session(.abort("the microphone was lost: \(why)"))) }
            }, onFrame: { frame in
                let take = recorder.withLock { current -> [Int16]? in
                    guard var taking = current else { return nil }
                    let take = taking.process(frame)
                    current = take == nil ? taking : nil
                    return take
                }
                if let take { feed.yield(.take(take)) }
            })
        } catch { throw CommandFailure(message: error.message, exitCode: 1) }
        defer { stream.stop() }
        // Ctrl-C or SIGTERM stops it, keeping nothing (nothing is written before the last take is in).
        let interrupt = Task {
            await Signals.waitForTermination()
            if !Task.isCancelled { feed.yield(.session(.abort("interrupted"))) }
        }
        defer { interrupt.cancel() }

        var session = EnrollmentSession(phrase: phrase)
        var take: [Int16] = []
        var shown = ""
        // The session's accepted takes, for its personal head once they are saved.
        var accepted: [(samples: [Int16], take: EnrolledTake)] = []
        var speaking: (any Playback)?
        var effects = session.handle(.start)
        var iterator = inputs.makeAsyncIterator()
        var outcome: EnrollmentOutcome?
        while outcome == nil {
            for effect in effects {
                switch effect {
                case .say(let words):
                    let playback = speech.speak(words, onFirstSample: {})
                    speaking = playback
                    Task {
                        _ = await playback.ended()
                        feed.yield(.session(.spoken))
                    }
                case .stopSpeaking:
                    speech.stopSpeaking()
                case .startCapture:
                    recorder.withLock { $0 = TakeRecorder() }
                case .stopCapture:
                    recorder.withLock { $0 = nil }
                case .checkTake:
                    let (samples, trial) = (take, household)
                    // The embedding and the DTW over the bank take a while: on a thread of this command's own.
                    OwnedThread.start(name: "hs-enroll") {
                        do {
                            var next = trial
                            let enrolled = try Enrollment.take(samples, model: model)
                            try next.add(enrolled, phrase: phrase, bank: bank, sessionStart: sessionStart)
                            feed.yield(.checked(.success(Accepted(household: next, samples: samples, take: enrolled))))
                        } catch let problem as TakeProblem {
                            feed.yield(.checked(.failure(.refused(TakeRefusal(problem)))))
                        } catch {
                            feed.yield(.checked(.failure(.failed("\(error)"))))
                        }
                    }
                case .show(let progress):
                    let line = ControlClient.progressLine(.object(Dictionary(uniqueKeysWithValues: progress.fields)))
                    if line != shown { print(line) }
                    shown = line
                case .save:
                    do {
                        // Added to the file as it is now, under its lock (a running speaker may have changed it):
                        // nothing another writer kept is lost, nothing it forgot comes back.
                        let takes = accepted
                        household = try Household.update(path: path, bank: bank) { latest in
                            for take in takes { try latest.add(take.take, phrase: phrase, bank: bank, sessionStart: nil) }
                        }
                        feed.yield(.session(.saved))
                    } catch {
                        feed.yield(.session(.saveFailed("\(error)")))
                    }
                case .discard:
                    break  // the takes are only in `household`, which is not saved
                case .finished(let end):
                    outcome = end
                }
            }
            guard outcome == nil, let input = await iterator.next() else { break }
            switch input {
            case .session(let next): effects = session.handle(next)
            case .take(let samples):
                take = samples
                effects = session.handle(.captured)
            case .checked(.success(let next)):
                household = next.household
                accepted.append((next.samples, next.take))
                effects = session.handle(.accepted)
            case .checked(.failure(.refused(let refusal))): effects = session.handle(.refused(refusal))
            case .checked(.failure(.failed(let why))): effects = session.handle(.checkFailed(why))
            }
        }
        // The last words ("Done. I know your voice now.", or why it ended) are said to the end.
        if let speaking { _ = await speaking.ended() }
        guard case .done = outcome else { return false }
        await addHead(takes: accepted, phrase: phrase, model: model, bank: bank, path: path)
        return true
    }

    /// A session's personal head (this spoken one's, or `enroll WAV...`'s run), trained once its takes are saved
    /// and added to the file as it is then (a running speaker may have kept a false wake meanwhile); a head that
    /// cannot be trained or kept, or too few takes for one, is said, and the templates (saved already) listen alone.
    static func addHead(takes: [(samples: [Int16], take: EnrolledTake)], phrase: String, model: HotPhraseModel,
                        bank: NegativeBank, path: String) async {
        guard takes.count >= PersonalHead.minimumTakes else {
            printError("no personal head: \(takes.count) take\(takes.count == 1 ? "" : "s") kept in this run, a head needs \(PersonalHead.minimumTakes)")
            return
        }
        printError("training a personal head on the \(takes.count) takes kept...")
        do {
            let head = try await HeadTraining.train(takes: takes, model: model, bank: bank)
            try Household.update(path: path, bank: bank) { latest in
                try latest.addHead(head, phrase: phrase, takes: takes.count, bank: bank)
            }
            printError("personal head trained and kept in \(path)")
        } catch Household.NotLearned.notEnrolled {
            printError(PersonalHead.forgotten(phrase))
        } catch {
            printError("\(error); the templates listen alone")
        }
    }

    /// espeak-ng to [audio] output, with the assembly's volume and voice, as `say` speaks.
    private static func makeSpeech(_ config: SpeakerConfiguration) throws(CommandFailure) -> EngineSpeech {
        do throws(AssemblyError) {
            let output = SpeechOutput.device(config.audio.output)
            let engine = try DeviceAssembly.speechEngine(config, volume: try DeviceAssembly.outputVolume(config, for: output))
            return EngineSpeech(engine: engine, output: output, earcons: [:])
        } catch { throw CommandFailure(error) }
    }
}
