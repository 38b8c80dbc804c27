import DeviceAssembly
import Audio
import CommandSupport
import FoundationEssentials
import Logging
import SpeakerConfig
import Speech

/// `hound-speaker say`: espeak-ng with the speaker's own volume and voice, to [audio] output or a WAV file.
public struct SayText: Sendable {
    public var text: String
    public var output: String?
    public var configPath: String?

    public init(text: String, output: String? = nil, configPath: String? = nil) {
        self.text = text
        self.output = output
        self.configPath = configPath
    }

    public func run() async throws {
        // Nothing to say is a mistake in the command, not 0.16 s of silence (the lead-in) and success.
        guard !text.allSatisfy(\.isWhitespace) else {
            throw CommandFailure(message: "say: TEXT is empty: nothing to say", exitCode: 64)
        }
        let context = try AppContext(configPath: configPath)
        // The speaker's own volume and voice (its assembly's), so that `say` sounds as it does.
        let engine: SpeechEngine
        let destination = output.map(SpeechOutput.file) ?? .device(context.config.audio.output)
        do throws(AssemblyError) {
            engine = try DeviceAssembly.speechEngine(context.config, volume: try DeviceAssembly.outputVolume(context.config, for: destination))
        } catch { throw CommandFailure(error) }
        let task = engine.speak(text, to: destination)
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
