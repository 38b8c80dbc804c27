import ArgumentParser
import AudioCore
import SpeakerApp
import SpeakerConfig
import Audio
import FoundationEssentials
import Houndify
import HoundifyCore
import JSONKit
import Logging

struct Text: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Ask Houndify a text query and print the spoken answer.")

    @Argument(help: "The query, e.g. \"what time is it\".") var query: String
    @OptionGroup var options: ConfigOption
    @Flag(help: "Print Houndify's raw HoundServer JSON instead.") var json = false
    @Flag(help: "Start a new conversation (forget what the last queries said).") var newConversation = false

    func run() async throws {
        try await reporting {
            let context = try AppContext(configPath: options.config)
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
}

struct Voice: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stream a WAV file to Houndify as a voice query, printing partial transcripts and the answer.",
        discussion: "The WAV may have any rate and channel count; it is converted to 16 kHz mono. It is sent in real time unless --fast is given.")

    @Argument(help: "The recording.") var wav: String
    @OptionGroup var options: ConfigOption
    @Flag(help: "Print each message Houndify sends as one JSON line.") var json = false
    @Flag(help: "Send the audio as fast as possible instead of in real time.") var fast = false
    @Flag(help: "Start a new conversation (forget what the last queries said).") var newConversation = false

    func run() async throws {
        try await reporting {
            let context = try AppContext(configPath: options.config)
            let audio: MonoAudio
            do throws(AudioFileError) { audio = try AudioFile.readMono(path: wav, targetRate: 16_000) } catch {
                throw CommandFailure(reading: error)
            }
            let client = try context.houndifyClient(newConversation: newConversation)
            let search: VoiceSearch
            do throws(HoundifyError) { search = try client.startVoiceSearch(sampleRate: 16_000) } catch {
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
