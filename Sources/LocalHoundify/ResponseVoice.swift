import Audio
import AudioCore
import FoundationEssentials
import JSONKit
import Speech

/// Houndify's own voice, as the local service gives it (docs/houndify-protocol.md, "Houndify's voice"): when
/// RequestInfo asks for a `ResponseAudioVoice`, the first result's spoken text (long or short, as
/// `ResponseAudioShortOrLong` says) is rendered by espeak-ng in a voice unlike the speaker's own (`en-us+f3`) and
/// sent as a base64 WAV in `ResponseAudioBytes`. The voice named `Unavailable` is refused with a
/// `ResponseAudioError`, as an account without the feature would be, so a client's fallback can be tested.
final class ResponseVoice: Sendable {
    static let refusedVoice = "Unavailable"
    private let engine: SpeechEngine?

    init() {
        var settings = VoiceSettings()
        settings.voice = "en-us+f3"
        settings.leadInMS = 0
        engine = try? SpeechEngine(settings: settings)
    }

    /// `answer` with the voice added to its first result, or with the reason it has none.
    func voiced(_ answer: JSONValue, voice: String, long: Bool) async -> JSONValue {
        guard case .object(var server) = answer, case .array(var results)? = server["AllResults"],
              case .object(var first)? = results.first else { return answer }
        if voice == Self.refusedVoice {
            first["ResponseAudioError"] = .string("The voice \(voice) is not available to this client.")
        } else {
            let keys = long ? ["SpokenResponseLong", "SpokenResponse"] : ["SpokenResponse", "SpokenResponseLong"]
            let text = keys.lazy.compactMap { first[$0]?.stringValue }.first { !$0.isEmpty } ?? ""
            if let wav = await render(text) {
                first["ResponseAudioBytes"] = .string(Data(wav).base64EncodedString())
                first["ResponseAudioEncoding"] = "WAV"
            } else if !text.isEmpty {
                first["ResponseAudioError"] = "The local service could not render the voice."
            }
        }
        results[0] = .object(first)
        server["AllResults"] = .array(results)
        return .object(server)
    }

    /// A 16-bit WAV of `text`, through libsndfile (it writes files: a private one, removed at once).
    private func render(_ text: String) async -> [UInt8]? {
        guard let engine, !text.isEmpty else { return nil }
        guard case .success(let result) = await engine.speak(text, to: .memory).result(), result.outcome == .finished,
              !result.samples.isEmpty else { return nil }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("houndify-local-voice-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        do throws(AudioFileError) {
            try AudioFile.writeWAV(MonoAudio(samples: result.samples, sampleRate: result.sampleRate), to: path)
        } catch { return nil }
        return FileManager.default.contents(atPath: path).map { Array($0) }
    }
}
