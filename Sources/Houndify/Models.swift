public import FoundationEssentials
public import JSONKit
import Glibc

/// `Format` values the service uses; clients must accept both spellings (docs/houndify-protocol.md, "Message formats").
public enum HoundFormat {
    public static let partialTranscriptLegacy = "SoundHoundVoiceSearchParialTranscript"  // sic: the backend's spelling
    public static let partialTranscript = "HoundVoiceQueryPartialTranscript"
    public static let resultLegacy = "SoundHoundVoiceSearchResult"
    public static let result = "HoundQueryResult"
    public static let queryUpdate = "HoundQueryUpdate"

    public static func isPartialTranscript(_ format: String) -> Bool {
        format == partialTranscriptLegacy || format == partialTranscript
    }
    public static func isResult(_ format: String) -> Bool { format == resultLegacy || format == result }
}

/// A partial transcript (HoundPartialTranscript).
public struct PartialTranscript: Sendable, Equatable, Decodable {
    public var format: String
    public var partialTranscript: String
    public var durationMS: Double
    public var done: Bool
    public var safeToStopAudio: Bool

    public init(partialTranscript: String, durationMS: Double, done: Bool, safeToStopAudio: Bool = false,
                format: String = HoundFormat.partialTranscriptLegacy) {
        self.format = format
        self.partialTranscript = partialTranscript
        self.durationMS = durationMS
        self.done = done
        self.safeToStopAudio = safeToStopAudio
    }

    enum CodingKeys: String, CodingKey {
        case format = "Format", partialTranscript = "PartialTranscript", durationMS = "DurationMS", done = "Done"
        case safeToStopAudio = "SafeToStopAudio"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        format = try c.decode(String.self, forKey: .format)
        partialTranscript = try c.decode(String.self, forKey: .partialTranscript)
        durationMS = try c.decodeIfPresent(Double.self, forKey: .durationMS) ?? 0
        done = try c.decodeIfPresent(Bool.self, forKey: .done) ?? false
        safeToStopAudio = try c.decodeIfPresent(Bool.self, forKey: .safeToStopAudio) ?? false
    }

    public var json: JSONValue {
        ["Format": .string(format), "FormatVersion": "1.0", "PartialTranscript": .string(partialTranscript),
         "DurationMS": .double(durationMS), "Done": .bool(done), "SafeToStopAudio": .bool(safeToStopAudio)]
    }
}

/// One element of `AllResults` (docs/houndify-protocol.md, "AllResults"). The typed fields are those the speaker
/// uses; `json` holds all.
public struct CommandResult: Sendable, Equatable {
    public var commandKind: String
    /// The result's own words, AutoListen and conversation state: the same fields each of its dynamic responses
    /// carries for one outcome of a client action.
    public var response: DynamicResponse
    public var viewType: [String]
    public var errorType: String?
    /// The whole result as received.
    public var json: JSONValue

    public init(json: JSONValue) throws {
        guard let response = DynamicResponse(json: json) else {
            throw HoundifyError.invalidResponse(detail: "a result in AllResults is not an object")
        }
        guard let kind = json["CommandKind"]?.stringValue else {
            throw HoundifyError.invalidResponse(detail: "a result has no CommandKind")
        }
        commandKind = kind
        self.response = response
        viewType = json["ViewType"]?.arrayValue?.compactMap(\.stringValue) ?? []
        errorType = json["ErrorType"]?.stringValue
        self.json = json
    }

    public var autoListen: Bool { response.autoListen }
    public var conversationState: JSONValue? { response.conversationState }

    /// What a speaker should say: the long spoken response, falling back to the short one and to the written
    /// one (NoResultCommand has an empty SpokenResponse).
    public var textToSpeak: String { text(long: true) }

    /// The long or the short spoken response, falling back to the other and to the written ones.
    public func text(long: Bool) -> String { response.text(long: long) }

    /// A dynamic response of this result by its key (`ClientActionSucceededResult`, `DeleteSingleDynamicResponse`).
    public func dynamicResponse(_ key: String) -> DynamicResponse? {
        json[key].flatMap { DynamicResponse(json: $0) }
    }

    /// The first dynamic response whose key ends with `suffix` (a command's `...SingleDynamicResponse`, whatever
    /// its verb).
    public func dynamicResponse(endingWith suffix: String) -> DynamicResponse? {
        guard let object = json.objectValue else { return nil }
        for key in object.keys.sorted() where key.hasSuffix(suffix) {
            if let found = dynamicResponse(key) { return found }
        }
        return nil
    }

    /// The result leaves something to the client: it has dynamic responses for the outcomes of a client action.
    public var isClientAction: Bool {
        guard let object = json.objectValue else { return false }
        return object.keys.contains { key in
            key == "ClientActionSucceededResult" || key == "ClientActionFailedResult" || key == "RequiredFeaturesSupportedResult"
                || key.hasSuffix("DynamicResponse")
        }
    }

    /// `RequiredFeatures`: what the client must support for `RequiredFeaturesSupportedResult` to apply.
    public var requiredFeatures: [String] { json["RequiredFeatures"]?.arrayValue?.compactMap(\.stringValue) ?? [] }
}

/// An alternative answer a result carries for one outcome of a client action (DynamicResponse:
/// docs/houndify-protocol.md, "Client commands"): its own texts, AutoListen and conversation state.
public struct DynamicResponse: Sendable, Equatable {
    public var spokenResponse: String
    public var spokenResponseLong: String
    public var writtenResponse: String
    public var writtenResponseLong: String
    public var autoListen: Bool
    public var conversationState: JSONValue?

    public init?(json: JSONValue) {
        guard case .object = json else { return nil }
        spokenResponse = json["SpokenResponse"]?.stringValue ?? ""
        spokenResponseLong = json["SpokenResponseLong"]?.stringValue ?? ""
        writtenResponse = json["WrittenResponse"]?.stringValue ?? ""
        writtenResponseLong = json["WrittenResponseLong"]?.stringValue ?? ""
        autoListen = json["AutoListen"]?.boolValue ?? false
        conversationState = json["ConversationState"].flatMap { $0 == .null ? nil : $0 }
    }

    /// The long or the short spoken response, falling back to the other and to the written ones.
    public func text(long: Bool) -> String {
        let order = long ? [spokenResponseLong, spokenResponse, writtenResponseLong, writtenResponse]
                         : [spokenResponse, spokenResponseLong, writtenResponse, writtenResponseLong]
        return order.first { !$0.allSatisfy(\.isWhitespace) } ?? ""
    }
}

/// The final HoundServer object (docs/houndify-protocol.md, "The final result").
public struct HoundServerResponse: Sendable, Equatable {
    public var format: String
    public var status: String
    public var errorMessage: String?
    public var results: [CommandResult]
    /// `Disambiguation.ChoiceData[*].Transcription`, best first.
    public var transcriptions: [String]
    public var resultsAreFinal: [Bool]
    public var queryID: String?
    /// The exact bytes of the message.
    public var raw: Data
    public var json: JSONValue

    public init(raw: Data) throws {
        let json: JSONValue
        do { json = try JSONValue(parsing: raw) } catch {
            throw HoundifyError.parseFailed(detail: "result is not valid JSON")
        }
        try self.init(json: json, raw: raw)
    }

    public init(json: JSONValue, raw: Data) throws {
        guard let format = json["Format"]?.stringValue, HoundFormat.isResult(format) else {
            throw HoundifyError.invalidResponse(detail: "expected a HoundServer result, got Format \(json["Format"]?.stringValue ?? "none")")
        }
        guard let status = json["Status"]?.stringValue else {
            throw HoundifyError.invalidResponse(detail: "result has no Status")
        }
        self.format = format
        self.status = status
        errorMessage = json["ErrorMessage"]?.stringValue
        results = try (json["AllResults"]?.arrayValue ?? []).map(CommandResult.init(json:))
        transcriptions = json["Disambiguation"]?["ChoiceData"]?.arrayValue?.compactMap { $0["Transcription"]?.stringValue } ?? []
        resultsAreFinal = json["ResultsAreFinal"]?.arrayValue?.compactMap(\.boolValue) ?? []
        queryID = json["QueryID"]?.stringValue
        self.raw = raw
        self.json = json
    }

    public var isError: Bool { status == "Error" }
    /// The result the speaker acts on: the first (results are ordered best first).
    public var best: CommandResult? { results.first }
    public var transcript: String? { transcriptions.first }
}

/// One message of a voice response stream.
public enum HoundMessage: Sendable, Equatable {
    case partialTranscript(PartialTranscript)
    case result(HoundServerResponse)
    /// A message this client does not act on (e.g. HoundQueryUpdate), kept for logs.
    case other(format: String, json: JSONValue)

    /// Classifies one complete JSON message.
    public static func parse(_ raw: Data) throws -> HoundMessage {
        let json: JSONValue
        do { json = try JSONValue(parsing: raw) } catch {
            throw HoundifyError.parseFailed(detail: "a message is not valid JSON: \(HoundifyError.clip(String(decoding: raw.prefix(120), as: UTF8.self)))")
        }
        guard let format = json["Format"]?.stringValue else {
            throw HoundifyError.invalidResponse(detail: "a message has no Format")
        }
        if HoundFormat.isPartialTranscript(format) {
            do { return .partialTranscript(try JSONDecoder().decode(PartialTranscript.self, from: raw)) } catch {
                throw HoundifyError.invalidResponse(detail: "malformed partial transcript")
            }
        }
        if HoundFormat.isResult(format) { return .result(try HoundServerResponse(json: json, raw: raw)) }
        return .other(format: format, json: json)
    }
}
