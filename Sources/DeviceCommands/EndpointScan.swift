import AudioCore
import CommandSupport
import Audio
import FoundationEssentials
import JSONKit
import Platform

/// Runs the end-of-speech detector over a recording, as the speaker would while listening: for checking a
/// microphone's recordings and for the measurements in BENCHMARKS.md (tools/bench/endpoint.py).
public struct EndpointScan: Sendable {
    public var wav: String
    public var mode: String
    public var json: Bool

    public init(wav: String, mode: String = "short", json: Bool = false) {
        self.wav = wav
        self.mode = mode
        self.json = json
    }

    public func run() async throws {
        guard let endpointMode = Endpointer.Mode(rawValue: mode) else {
            throw CommandFailure(message: "--mode must be short, long or none, not \(mode)", exitCode: 64)
        }
        let audio: MonoAudio
        do throws(AudioFileError) { audio = try AudioFile.readMono(path: wav) } catch {
            throw CommandFailure(reading: error)
        }
        var settings = Endpointer.Settings()
        settings.mode = endpointMode
        var endpointer = Endpointer(settings: settings, frameMS: 20)
        var decision: Endpointer.Decision? = nil
        var speechAt: Int? = nil
        audio.forEachFrame(wholeOnly: true) { frame in
            let d = endpointer.process(frame)
            if d == .speechStarted { speechAt = endpointer.elapsedMS }
            if let d { decision = d }
            return decision == nil || decision == .speechStarted
        }
        let ended = decision.flatMap { $0 == .speechStarted ? nil : $0 }
        let time = Double(endpointer.elapsedMS) / 1000
        if json {
            // No decision and no speech are nulls (tools/bench/endpoint.py reads them).
            printLine(JSONValue.asciiJSON(orderedMembers: [
                ("decision", ended.map { .string("\($0)") } ?? .null), ("time", .double(time)),
                ("speechStarted", speechAt.map { .double(Double($0) / 1000) } ?? .null),
                ("lastSpeech", .double(Double(endpointer.lastSpeechEndMS) / 1000))]))
        } else if let ended {
            printLine("\(ended) at \(String(cFormat: "%.2f", time)) s (speech last heard at \(String(cFormat: "%.2f", Double(endpointer.lastSpeechEndMS) / 1000)) s)")
        } else {
            printLine("no decision before the end of the recording (\(String(cFormat: "%.2f", audio.duration)) s)")
        }
    }
}
