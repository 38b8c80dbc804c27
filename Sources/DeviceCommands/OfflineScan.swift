import AudioCore
import CommandSupport
import Audio
import JSONKit
import OfflineRecognition
import OwnCommands

/// `hound-speaker offline WAV`: what the on-device recogniser makes of a recording (issue #63), the words heard
/// in the speaker's own grammar and the command they say.
public struct OfflineScan: Sendable {
    public var wav: String
    public var json: Bool

    public init(wav: String, json: Bool) {
        self.wav = wav
        self.json = json
    }

    public func run() async throws {
        let audio: MonoAudio
        do throws(AudioFileError) { audio = try AudioFile.readMono(path: wav) } catch { throw CommandFailure(reading: error) }
        let recogniser: OfflineRecogniser
        do throws(OfflineRecogniserError) { recogniser = try OfflineRecogniser() } catch {
            throw CommandFailure(message: error.description, exitCode: 69)
        }
        let heard = recogniser.recognise(audio.samples)
        if json {
            let object = JSONValue.asciiJSON(orderedMembers: [
                ("heard", heard.words.isEmpty ? .null : .string(heard.words)),
                ("command", heard.action?.json ?? .null),
                ("unconfirmed", heard.unconfirmed.isEmpty ? .null : .string(heard.unconfirmed)),
            ])
            print(object)
        } else if let action = heard.action {
            print("heard \"\(heard.words)\": \(action.json.asciiJSON())")
        } else if !heard.unconfirmed.isEmpty {
            print("heard nothing of the speaker's own commands (the closest, \"\(heard.unconfirmed)\", was not confirmed)")
        } else {
            print(heard.words.isEmpty ? "heard nothing of the speaker's own commands" : "heard \"\(heard.words)\": no command")
        }
    }
}
