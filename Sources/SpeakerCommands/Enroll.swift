import DeviceCommands
import Audio
import AudioCore
import FoundationEssentials
import HotPhrase
import JSONKit
import Platform
import CommandSupport
import ControlCore
import SpeakerConfig

/// `hound-speaker enroll WAV...`: adds recordings of a phrase to the household's voices (docs/household.md),
/// each take's verdict on its own line. With no recordings, the spoken enrollment: the running speaker's
/// (`ctl enroll`), or, with none running for this config, the same session here on [audio] input and output.
public struct Enroll: Sendable {
    public var wavs: [String]
    public var household: String?
    public var phrase: String?
    public var model: String?
    public var bank: String?
    public var configPath: String?

    public init(wavs: [String] = [], household: String? = nil, phrase: String? = nil, model: String? = nil,
                bank: String? = nil, configPath: String? = nil) {
        self.wavs = wavs
        self.household = household
        self.phrase = phrase
        self.model = model
        self.bank = bank
        self.configPath = configPath
    }

    public func run() async throws {
        let config = try loadConfig(configPath)
        let path = try householdFile(household, config: config)
        if let phrase, let problem = PhraseText.problem(phrase) { throw CommandFailure(message: "enroll: --phrase \(problem)", exitCode: 64) }
        // A running speaker asks for the takes with its own model and bank: this machine's copies (which this
        // user may not even be able to read) are not needed for that.
        if wavs.isEmpty, household == nil || household == config.hotphrase.household, model == nil, bank == nil,
           let kept = try await enrollOnRunningSpeaker(config) {
            if !kept { throw CommandFailure(message: "nothing was kept", exitCode: 1) }
            return
        }
        let loaded: HotPhraseModel
        do { loaded = try HotPhraseModel.locate(model ?? config.hotphrase.model) } catch {
            throw CommandFailure(message: "\(error)", exitCode: 66)
        }
        guard loaded.hasEmbeddings else {
            throw CommandFailure(message: "\(Enrollment.needsEmbedding(loaded))", exitCode: 66)
        }
        let negatives: NegativeBank
        do { negatives = try NegativeBank.locate(bank) } catch { throw CommandFailure(message: "\(error)", exitCode: 66) }
        var current: Household
        do { current = try Household.loadMeasured(path: path, bank: negatives) } catch { throw CommandFailure(message: "\(error)", exitCode: 1) }
        let text = phrase ?? loaded.phrase
        if wavs.isEmpty {
            guard try await StandaloneEnrollment.run(phrase: text, model: loaded, bank: negatives, household: path, config: config,
                                                     print: { printLine($0) }) else {
                throw CommandFailure(message: "nothing was kept", exitCode: 1)
            }
            printError("\"\(text)\" saved in \(path)")
            return
        }
        var keptTakes: [(samples: [Int16], take: EnrolledTake)] = []
        // The recordings of one run are one session: each is compared with those kept before it in this run.
        let sessionStart = current.templateCount(text)
        // A recording that cannot be read stops no other take: the kept ones are saved, then it exits 66.
        var unreadable: AudioFileError?
        for wav in wavs {
            let audio: MonoAudio
            do throws(AudioFileError) { audio = try AudioFile.readMono(path: wav) } catch {
                printLine("\(wav): not kept: \(error)")
                unreadable = unreadable ?? error
                continue
            }
            do {
                let take = try Enrollment.take(audio.samples, model: loaded)
                try current.add(take, phrase: text, bank: negatives, sessionStart: sessionStart)
                keptTakes.append((audio.samples, take))
                printLine("\(wav): kept (" + String(cFormat: "%ld frames, speech %.2f-%.2f s", take.template.count,
                                                  take.speech.lowerBound, take.speech.upperBound) + ")")
            } catch let problem as TakeProblem {
                printLine("\(wav): not kept: \(problem)")
            }
        }
        let kept = keptTakes.count
        if kept > 0 {
            // Added to the file as it is now, under its lock: a forget or a spoken enrollment meanwhile (the running
            // speaker) is kept, not written over by this run's copy. Checked against each other above already.
            do {
                current = try Household.update(path: path, bank: negatives) { latest in
                    for take in keptTakes { try latest.add(take.take, phrase: text, bank: negatives, sessionStart: nil) }
                }
            } catch { throw CommandFailure(message: "\(error)", exitCode: 1) }
            // The templates are kept already; a head, which needs seconds of CPU, is added to them when trained.
            await StandaloneEnrollment.addHead(takes: keptTakes, phrase: text, model: loaded, bank: negatives, path: path)
        }
        let count = current.phrase(text)?.templates.count ?? 0
        printError("\(kept) of \(wavs.count) take\(wavs.count == 1 ? "" : "s") kept; \"\(text)\" has \(count) template\(count == 1 ? "" : "s") in \(path)")
        if Household.isStopPhrase(text) {
            printError("\"\(text)\" is the stop phrase: it stops a ringing timer or an answer, and is listened for only while the speaker rings or speaks, with [audio] echo_cancel on")
        }
        if kept > 0, household == nil || household == config.hotphrase.household { await tellRunningSpeaker(config) }
        if let unreadable { throw CommandFailure(reading: unreadable) }
        if kept == 0 { throw CommandFailure(message: "no take was kept", exitCode: 1) }
    }
}

extension Enroll {
    /// The spoken enrollment on the speaker running with this config, printed step by step until it ends: nil
    /// when none answers (no [control] listen, or nothing there), else whether its takes were saved. A speaker
    /// that answers but refuses (busy, muted) is an error with its reason: it, not this command, owns the
    /// microphone.
    func enrollOnRunningSpeaker(_ config: SpeakerConfiguration) async throws -> Bool? {
        guard config.control.listen != nil else { return nil }
        do { _ = try await ControlClient.send(ControlCommand.status.json, config: config) } catch { return nil }
        printError("the speaker running with this config asks for the takes")
        let reply = try await ControlClient.send(ControlCommand.enroll(phrase: phrase).json, config: config)
        return try await ControlClient.followEnrollment(reply["enrollment"] ?? .null, config: config, print: { printLine($0) })
    }
}

/// A speaker running with this config reads the household again now (through the control API); one that cannot
/// be reached uses the change from its next start, and this says so.
func tellRunningSpeaker(_ config: SpeakerConfiguration) async {
    guard config.control.listen != nil else {
        printError("a running speaker uses the change from its next start ([control] listen is off, so it cannot be told now)")
        return
    }
    do {
        _ = try await ControlClient.send(ControlCommand.reloadHousehold.json, config: config)
        printError("the running speaker uses the change now")
    } catch {
        printError("no running speaker was told (\(error.message)): it uses the change from its next start")
    }
}
