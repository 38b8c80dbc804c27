import AudioCore
import CommandSupport
import Audio
import FoundationEssentials
import Platform
import HotPhrase
import JSONKit
import SpeakerConfig

/// `hound-speaker hotphrase WAV`: the speaker's own detector over a file, fed in 20 ms frames as the microphone
/// would feed it.
public struct HotPhraseScan: Sendable {
    public var wav: String
    public var threshold: Double?
    public var json: Bool
    public var model: String?
    public var household: String?
    public var bank: String?
    public var configPath: String?
    /// Every wake is kept as a household negative, as the speaker keeps a wake that heard nothing: saved to the
    /// household's file and applied at once (a measurement of a household living with the recording).
    public var keepFalseWakes: Bool

    public init(wav: String, threshold: Double? = nil, json: Bool = false, model: String? = nil,
                household: String? = nil, bank: String? = nil, configPath: String? = nil, keepFalseWakes: Bool = false) {
        self.wav = wav
        self.threshold = threshold
        self.json = json
        self.model = model
        self.household = household
        self.bank = bank
        self.configPath = configPath
        self.keepFalseWakes = keepFalseWakes
    }

    public func run() async throws {
        let config = try loadConfig(configPath)
        let loaded: HotPhraseModel
        do { loaded = try HotPhraseModel.locate(model ?? config.hotphrase.model) } catch {
            throw CommandFailure(message: "\(error)", exitCode: 66)
        }
        let audio: MonoAudio
        do throws(AudioFileError) { audio = try AudioFile.readMono(path: wav) } catch { throw CommandFailure(reading: error) }
        let chosen = threshold ?? HotPhraseDetector.threshold(sensitivity: config.hotphrase.sensitivity, model: loaded)
        if let household {
            try runFused(loaded, threshold: chosen, household: household, config: config, audio: audio)
            return
        }
        let detector = HotPhraseDetector(model: loaded, threshold: chosen,
                                         refractorySeconds: config.hotphrase.refractorySeconds)
        var count = 0
        audio.forEachFrame { frame in
            detector.process(frame) { d in
                count += 1
                if json {
                    printLine(detectionLine(time: d.time, score: d.score, phrase: nil))
                } else {
                    printLine(String(cFormat: "%8.2f s  ", d.time) + "\"\(loaded.phrase)\"" + String(cFormat: "  score %.5f", d.score))
                }
            }
            return true
        }
        if !json {
            printError("\(count) detection\(count == 1 ? "" : "s") in "
                       + String(cFormat: "%.1f s of audio (threshold %.6f, ", audio.duration, chosen) + "model \(loaded.path))")
        }
    }

    /// The generic model and the household's templates together (FusedDetector).
    private func runFused(_ loaded: HotPhraseModel, threshold chosen: Double, household folder: String,
                          config: SpeakerConfiguration, audio: MonoAudio) throws {
        let path = try householdFile(folder, config: config)
        let negatives: NegativeBank
        do { negatives = try NegativeBank.locate(bank) } catch { throw CommandFailure(message: "\(error)", exitCode: 66) }
        var members: Household
        do {
            guard let found = try Household.load(path: path) else {
                throw CommandFailure(message: "household file \(path): no such file (`hound-speaker enroll` makes it)", exitCode: 66)
            }
            members = found
            _ = try members.remeasure(bank: negatives)
        } catch let failure as CommandFailure { throw failure } catch { throw CommandFailure(message: "\(error)", exitCode: 66) }
        let zThreshold = negatives.zThreshold(sensitivity: config.hotphrase.sensitivity)
        func makeDetector(_ household: Household) throws -> FusedDetector {
            do {
                return try FusedDetector(model: loaded, household: household, bank: negatives, threshold: chosen,
                                         zThreshold: zThreshold, refractorySeconds: config.hotphrase.refractorySeconds)
            } catch { throw CommandFailure(message: "\(error)", exitCode: 66) }
        }
        var detector = try makeDetector(members)
        var count = 0, kept = 0
        // With --keep-false-wakes each wake's frames become a negative, and a new detector runs from the next
        // boundary of the old one's 80 ms steps (so a sound heard again lies on the grid it would have without the
        // wake: the file's own times and grid throughout); its times start at zero, so `offset` is where it started.
        let step = max(1, Int((loaded.stepSeconds * Double(audio.sampleRate)).rounded()))
        var fed = 0, offset = 0, rebuild = false
        var unsaved: [[[Float]]] = []  // the false wakes kept since the last save
        func report(_ d: WakeDetection) {
            count += 1
            let time = d.time + Double(offset) / Double(audio.sampleRate)
            if json {
                printLine(detectionLine(time: time, score: d.score, phrase: d.phrase))
            } else {
                printLine(String(cFormat: "%8.2f s  ", time) + "\"\(d.phrase)\"" + String(cFormat: "  score %.5f", d.score)
                          + (d.personal ? " (z, enrolled voices)" : ""))
            }
            guard keepFalseWakes else { return }
            members.addNegative(detector.framesAtLastWake)
            unsaved.append(detector.framesAtLastWake)
            kept += 1
            rebuild = true
        }
        // Added to the file as it is now, under its lock: a running speaker's changes meanwhile are kept.
        func save() throws {
            do {
                try Household.update(path: path, bank: negatives) { latest in for frames in unsaved { latest.addNegative(frames) } }
                unsaved = []
            } catch {
                throw CommandFailure(message: "household file \(path): cannot be saved: \(error)", exitCode: 73)
            }
        }
        var failure: (any Error)?
        audio.forEachFrame { frame in
            detector.process(frame) { report($0) }
            fed += frame.count
            guard rebuild, fed % step == 0 else { return true }
            rebuild = false
            do {
                try save()
                detector = try makeDetector(members)
            } catch {
                failure = error
                return false
            }
            offset = fed
            return true
        }
        if let failure { throw failure }
        // a wake still waiting for its peak when the file ends comes at its last step
        detector.finish { report($0) }
        if rebuild { try save() }
        if !json {
            printError("\(count) detection\(count == 1 ? "" : "s") in " + String(cFormat: "%.1f s of audio (threshold %.6f, z %.2f, ", audio.duration,
                                                                                chosen, detector.zThreshold)
                       + "model \(loaded.path), household \(path): \(detector.personalPhrases.count) enrolled phrase\(detector.personalPhrases.count == 1 ? "" : "s"), "
                       + PersonalHead.counted(detector.headCount) + ")"
                       + (keepFalseWakes ? "; \(kept) kept as household negatives, \(members.negatives.count) in the file" : ""))
        }
    }
}

/// One `--json` line of `hotphrase`, in JSONKit's writer: the time to the millisecond, the score to six decimals,
/// and the phrase only with a household (the generic model has one phrase).
func detectionLine(time: Double, score: Double, phrase: String?) -> String {
    JSONValue.asciiJSON(orderedMembers: [("time", .double((time * 1000).rounded() / 1000)),
                                         ("score", .double((score * 1_000_000).rounded() / 1_000_000))]
                        + (phrase.map { [("phrase", JSONValue.string($0))] } ?? []))
}
