import DeviceCommands
import Audio
import AudioCore
import CommandSupport
import HoundifyAnswers
import SpeakerConfig
import FoundationEssentials
import Houndify
import HoundifyCore
import JSONKit
import Logging

/// `hound-speaker text`: one text query, its spoken answer printed (or Houndify's JSON).
public struct TextQuery: Sendable {
    public var query: String
    public var json: Bool
    public var newConversation: Bool
    public var configPath: String?

    public init(query: String, json: Bool = false, newConversation: Bool = false, configPath: String? = nil) {
        self.query = query
        self.json = json
        self.newConversation = newConversation
        self.configPath = configPath
    }

    public func run() async throws {
        let context = try AppContext(configPath: configPath)
        let client = try context.houndifyClient(newConversation: newConversation)
        let response: HoundServerResponse
        do throws(HoundifyError) { response = try await client.textSearch(query) } catch {
            throw CommandFailure(message: "\(error) [\(error.code)]")
        }
        if json {
            printLine(String(decoding: response.raw, as: UTF8.self))
        } else {
            printLine(try spokenAnswer(response, query: query, config: context.config))
        }
    }
}

/// `hound-speaker voice`: a recording streamed as a voice query, the transcripts and the answer printed.
public struct VoiceQuery: Sendable {
    public var wav: String
    public var json: Bool
    public var fast: Bool
    public var newConversation: Bool
    public var configPath: String?

    public init(wav: String, json: Bool = false, fast: Bool = false, newConversation: Bool = false,
                configPath: String? = nil) {
        self.wav = wav
        self.json = json
        self.fast = fast
        self.newConversation = newConversation
        self.configPath = configPath
    }

    public func run() async throws {
        let context = try AppContext(configPath: configPath)
        let audio: MonoAudio
        do throws(AudioFileError) { audio = try AudioFile.readMono(path: wav, targetRate: SpeakerAudio.sampleRate) } catch {
            throw CommandFailure(reading: error)
        }
        let client = try context.houndifyClient(newConversation: newConversation)
        let search: VoiceSearch
        do throws(HoundifyError) { search = try client.startVoiceSearch(sampleRate: SpeakerAudio.sampleRate) } catch {
            throw CommandFailure(message: "\(error) [\(error.code)]")
        }
        // The recording is fed while the answers are read: two children of one group, so neither outlives the
        // command.
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask {
                if await audio.feed(realTime: !fast, { search.write($0) }) { search.finish() }
            }
            var lastPartial = ""
            for await event in search.events {
                switch event {
                case .partialTranscript(let partial):
                    if json {
                        printLine(partial.json.asciiJSON())
                    } else if partial.partialTranscript != lastPartial {
                        lastPartial = partial.partialTranscript
                        printError("… \(partial.partialTranscript)")
                    }
                case .audioEnded(let reason):
                    context.logger.debug("audio ended: \(reason.rawValue)")
                case .result(let response):
                    if json {
                        printLine(String(decoding: response.raw, as: UTF8.self))
                    } else {
                        if let transcript = response.transcript { printError("heard: \(transcript)") }
                        printLine(try spokenAnswer(response, query: response.transcript ?? "", config: context.config))
                    }
                case .failed:
                    break
                }
            }
            group.cancelAll()
        }
        do throws(HoundifyError) { _ = try await search.response() } catch {
            throw CommandFailure(message: "\(error) [\(error.code)]")
        }
    }
}

/// The answer to print. One with nothing to say (no results, or responses that are not text) is a failure a script
/// can see, not an empty line and success; so is a command only the speaker carries out (a timer), which is not
/// answered by printing Houndify's fallback for clients that cannot.
func spokenAnswer(_ response: HoundServerResponse, query: String, config: SpeakerConfiguration) throws -> String {
    let reader = ClientCommandReader(supportedFeatures: Set(config.houndify.supportedFeatures), clientMatches: config.houndify.clientMatches)
    if let reason = reader.notCarriedOutHere(response, query: query) { throw CommandFailure(message: reason) }
    let text = response.best?.textToSpeak ?? ""
    guard text.contains(where: { !$0.isWhitespace }) else {
        throw CommandFailure(message: "Houndify's answer has nothing to say (\(response.results.isEmpty ? "no results" : "no spoken response in the first result")) [InvalidResponse]")
    }
    return text
}
