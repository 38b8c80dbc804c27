import ArgumentParser
import AudioCore
import SpeakerApp
import Audio
import FoundationEssentials
import Platform
import HotPhrase
import SpeakerConfig

/// `hound-speaker hotphrase WAV`: the speaker's own detector over a file, fed in 20 ms frames as the microphone
/// would feed it.
struct HotPhraseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hotphrase",
        abstract: "Run the \"OK Hound\" detector over a WAV file.",
        discussion: "Any sample rate or channel count (converted to 16 kHz mono). One line per detection; with --json, {\"time\":seconds,\"score\":0..1}.")

    @Argument(help: "The WAV file.") var wav: String
    @Option(help: "Detection threshold, 0 to 1 (default: from [hotphrase] sensitivity).") var threshold: Double?
    @Flag(help: "One JSON line per detection.") var json = false
    @Option(help: ArgumentHelp("Model file (default: [hotphrase] model, else the installed ok-hound.hpm).", valueName: "FILE"))
    var model: String?
    @OptionGroup var options: ConfigOption

    func validate() throws {
        if let threshold, !(0...1).contains(threshold) { throw ValidationError("--threshold must be between 0 and 1, not \(threshold)") }
    }

    func run() async throws {
        try await reporting {
            let config: SpeakerConfiguration
            do { config = try ConfigLoader.load(path: ConfigLoader.resolvePath(explicit: options.config)) } catch {
                throw CommandFailure(message: "\(error)", exitCode: 78)
            }
            let loaded: HotPhraseModel
            do { loaded = try HotPhraseModel.locate(model ?? config.hotphrase.model) } catch {
                throw CommandFailure(message: "\(error)", exitCode: 66)
            }
            let audio: MonoAudio
            do throws(AudioFileError) { audio = try AudioFile.readMono(path: wav) } catch { throw CommandFailure(reading: error) }
            let chosen = threshold ?? HotPhraseDetector.threshold(sensitivity: config.hotphrase.sensitivity, model: loaded)
            let detector = HotPhraseDetector(model: loaded, threshold: chosen,
                                             refractorySeconds: config.hotphrase.refractorySeconds)
            var count = 0
            audio.forEachFrame { frame in
                detector.process(frame) { d in
                    count += 1
                    if json {
                        printLine(String(cFormat: "{\"time\":%.3f,\"score\":%.6f}", d.time, d.score))
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
    }
}
