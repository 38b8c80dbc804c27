import ArgumentParser
import SpeakerApp
import Audio
import FoundationEssentials
import Logging
import SpeakerConfig
import Speech

struct Say: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Speak TEXT with espeak-ng through [audio] output, or into a WAV file.")
    @Argument(help: "What to say.") var text: String
    @OptionGroup var options: ConfigOption
    @Option(help: ArgumentHelp("Write the speech to this WAV file instead.", valueName: "WAV")) var output: String?

    func run() async throws {
        try await reporting {
            let context = try AppContext(configPath: options.config)
            // The speaker's own volume and voice (its assembly's), so that `say` sounds as it does.
            let engine = try SpeakerAssembly.speechEngine(context.config, volume: try SpeakerAssembly.outputVolume(context.config))
            let task = engine.speak(text, to: output.map(SpeechOutput.file) ?? .device(context.config.audio.output))
            // Ctrl-C stops the speech at once rather than killing the process mid-buffer: the signal watcher is a
            // child of this command, cancelled once the speech ends.
            let outcome = await withDiscardingTaskGroup { group in
                group.addTask { await Signals.waitForTermination(); engine.stopSpeaking() }
                let outcome = await task.result()
                group.cancelAll()
                return outcome
            }
            switch outcome {
            case .success(let result):
                let first = await task.firstSpeechSample()
                let latency = first.map { Int((task.requestedAt.duration(to: $0)) / .milliseconds(1)) }
                context.logger.debug("spoke \(result.sampleCount) samples at \(result.sampleRate) Hz, first speech after \(latency.map(String.init) ?? "?") ms")
                if result.outcome == .interrupted { throw CommandFailure(message: "speech interrupted", exitCode: 130) }
            case .failure(let error):
                throw CommandFailure(message: error.message)
            }
        }
    }
}
