import FoundationEssentials
public import JSONKit
import Glibc
import Synchronization
public import Logging
public import HoundifyCore

/// Settings of the Houndify client (the `[houndify]` and `[location]` config sections, resolved).
public struct HoundifyClientConfiguration: Sendable {
    /// Base URL; `/v1/text` and `/v1/audio` are appended.
    public var endpoint: String
    public var clientKey: String
    public var profile: ClientProfile
    public var connectTimeoutMS: Int
    /// How long after the question has been sent (the text, or the last audio) the final answer may take, and how
    /// long the server may stop taking audio during an upload.
    public var responseTimeoutMS: Int
    public var audioFormat: AudioUploadFormat
    /// End the upload when the server says `SafeToStopAudio` (the SDK's enableVAD).
    public var stopAudioOnSafeToStop: Bool
    /// Take the conversation state from each successful result.
    public var keepsConversation: Bool
    /// For a result that leaves an action to the client (`CommandResult.isClientAction`), leave the state to the
    /// caller, which keeps that of the branch it took (`conversation.set`); otherwise the result's own is kept.
    public var callerKeepsActionState: Bool

    /// The timeouts' and the format's defaults are `[houndify]`'s own (HoundifySettings), so they are said once.
    public init(endpoint: String, clientKey: String, profile: ClientProfile, connectTimeoutMS: Int = HoundifySettings().connectTimeoutMS,
                responseTimeoutMS: Int = HoundifySettings().responseTimeoutMS, audioFormat: AudioUploadFormat = HoundifySettings().audioFormat,
                stopAudioOnSafeToStop: Bool = true, keepsConversation: Bool = true, callerKeepsActionState: Bool = false) {
        self.callerKeepsActionState = callerKeepsActionState
        self.endpoint = endpoint
        self.clientKey = clientKey
        self.profile = profile
        self.connectTimeoutMS = connectTimeoutMS
        self.responseTimeoutMS = responseTimeoutMS
        self.audioFormat = audioFormat
        self.stopAudioOnSafeToStop = stopAudioOnSafeToStop
        self.keepsConversation = keepsConversation
    }
}

/// Text and voice search against Houndify, as the official SDKs do it (docs/houndify-protocol.md), over libcurl.
public final class HoundifyClient: Sendable {
    public let configuration: HoundifyClientConfiguration
    public let conversation: ConversationStore
    /// One per client, i.e. per run of the program, in every request (as HoundConverser does): Houndify groups a
    /// session's requests by it.
    public let sessionID = UUID().uuidString.lowercased()
    private let authenticator: HoundAuthenticator
    private let logger: Logger

    public init(configuration: HoundifyClientConfiguration, conversation: ConversationStore = ConversationStore(),
                logger: Logger = Logger(label: "houndify")) throws(HoundAuthenticator.KeyError) {
        self.configuration = configuration
        self.conversation = conversation
        self.logger = logger
        do {
            authenticator = try HoundAuthenticator(clientID: configuration.profile.clientID, clientKey: configuration.clientKey)
        } catch let error as HoundAuthenticator.KeyError {
            throw error
        } catch {
            throw .notBase64URL
        }
    }

    /// Python's `urllib.parse.quote`: everything but unreserved characters and `/` is percent-encoded, so spaces
    /// become `%20` (the service does not read `+` as a space: docs/houndify-protocol.md, "Text queries").
    public static func percentEncodeQuery(_ query: String) -> String {
        var out = ""
        for byte in query.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                 UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return out
    }

    var baseURL: String {
        var base = configuration.endpoint
        while base.hasSuffix("/") { base.removeLast() }
        return base
    }

    /// The request's headers and RequestInfo JSON (exposed for tests).
    func prepare(kind: RequestKind, extra: [String: JSONValue], requestID: String = UUID().uuidString.lowercased(),
                 timeStamp: Int64 = Int64(Date().timeIntervalSince1970)) -> (headers: [String], requestInfo: [UInt8]) {
        let info = RequestInfoBuilder.build(profile: configuration.profile, kind: kind, requestID: requestID,
                                            timeStamp: timeStamp, conversationState: conversation.current,
                                            sessionID: sessionID, extra: extra)
        let json = Array(JSONValue.object(info).asciiJSON().utf8)
        let auth = authenticator.headers(userID: configuration.profile.userID, requestID: requestID, timeStamp: timeStamp)
        var headers = [
            "Hound-Request-Authentication: \(auth.requestAuthentication)",
            "Hound-Client-Authentication: \(auth.clientAuthentication)",
            "Hound-Request-Info-Length: \(json.count)",
        ]
        for (key, header) in [("InputLanguageEnglishName", "Hound-Input-Language-English-Name"),
                              ("InputLanguageIETFTag", "Hound-Input-Language-IETF-Tag")] {
            if let value = info[key]?.stringValue { headers.append("\(header): \(value)") }
        }
        return (headers, json)
    }

    /// Text search: `POST /v1/text?query=` with RequestInfo as the body.
    public func textSearch(_ query: String, extra: [String: JSONValue] = [:]) async throws(HoundifyError) -> HoundServerResponse {
        let (headers, info) = prepare(kind: .text, extra: extra)
        let spec = HTTPRequestSpec(url: "\(baseURL)/v1/text?query=\(Self.percentEncodeQuery(query))", headers: headers,
                                   contentLength: info.count, connectTimeoutMS: configuration.connectTimeoutMS,
                                   responseTimeoutMS: configuration.responseTimeoutMS)
        let search = SearchSession(kind: .text, stopAudioOnSafeToStop: false, client: self)
        let transfer = HTTPTransfer(spec: spec, initialChunks: [info], endsUpload: true, delegate: search)
        search.attach(transfer)
        CurlWorker.shared.submit(transfer)
        let outcome: Result<HoundServerResponse, HoundifyError> = await withTaskCancellationHandler {
            await search.response()
        } onCancel: {
            search.cancel()
        }
        return try outcome.get()
    }

    /// Starts a streaming voice search. Write 16-bit mono PCM at `sampleRate` (16000 or 8000) to it as it is
    /// captured; end it with `finish()` (stopSearch) or let `SafeToStopAudio` end it. `stopAudioOnSafeToStop`
    /// overrides the configuration's for this search (hold-to-talk: only the release ends the question).
    public func startVoiceSearch(sampleRate: Int = VoiceSearchRate.wideband, extra: [String: JSONValue] = [:],
                                 stopAudioOnSafeToStop: Bool? = nil) throws(HoundifyError) -> VoiceSearch {
        guard VoiceSearchRate.isAccepted(sampleRate) else {
            throw .internalError(detail: "voice search audio must be \(VoiceSearchRate.accepted), not \(sampleRate)")
        }
        let encoder: any AudioUploadEncoder
        switch configuration.audioFormat {
        case .pcm: encoder = PCMUploadEncoder(sampleRate: sampleRate)
        case .speex:
            do { encoder = try SpeexUploadEncoder(sampleRate: sampleRate) } catch {
                throw .internalError(detail: "\(error)")
            }
        }
        let (headers, info) = prepare(kind: .voice, extra: extra)
        let spec = HTTPRequestSpec(url: "\(baseURL)/v1/audio", headers: headers, contentLength: nil,
                                   connectTimeoutMS: configuration.connectTimeoutMS,
                                   responseTimeoutMS: configuration.responseTimeoutMS)
        let stops = stopAudioOnSafeToStop ?? configuration.stopAudioOnSafeToStop
        let search = SearchSession(kind: .voice, stopAudioOnSafeToStop: stops, client: self)
        let transfer = HTTPTransfer(spec: spec, initialChunks: [info, encoder.header], endsUpload: false, delegate: search)
        search.attach(transfer)
        CurlWorker.shared.submit(transfer)
        return VoiceSearch(session: search, transfer: transfer, encoder: encoder)
    }

    fileprivate func accept(_ response: HoundServerResponse) {
        guard configuration.keepsConversation, !response.isError, let best = response.best else { return }
        if configuration.callerKeepsActionState && best.isClientAction { return }
        do { try conversation.update(from: best) } catch {
            logger.warning("could not save the conversation state: \(error)")
        }
    }

    /// Keeps `state` for the next query: that of the branch of a dynamic response the caller took.
    public func keepConversation(_ state: JSONValue) {
        guard configuration.keepsConversation else { return }
        do { try conversation.set(state) } catch {
            logger.warning("could not save the conversation state: \(error)")
        }
    }

    /// clearConversationState: the next query starts a new conversation.
    public func clearConversation() {
        do { try conversation.clear() } catch {
            logger.warning("could not clear the conversation state: \(error)")
        }
    }

    /// libcurl's version, for `doctor`.
    public static var transportVersion: String { CurlWorker.versionDescription }
}

/// What a voice search reports while it runs.
public enum VoiceSearchEvent: Sendable, Equatable {
    case partialTranscript(PartialTranscript)
    /// The upload has ended: the caller finished, the server said SafeToStopAudio, or the result came.
    case audioEnded(AudioEndReason)
    case result(HoundServerResponse)
    case failed(HoundifyError)
}

public enum AudioEndReason: String, Sendable {
    case caller, safeToStopAudio, resultArrived, refused
}

/// Stage times of one search, for the per-interaction timing log line.
public struct SearchTimings: Sendable {
    public var started: ContinuousClock.Instant
    /// When the first audio was handed to the upload.
    public var firstAudio: ContinuousClock.Instant?
    public var audioEnded: ContinuousClock.Instant?
    public var firstPartial: ContinuousClock.Instant?
    public var result: ContinuousClock.Instant?
}

/// A running voice search. Writing is safe from any thread (the capture thread writes).
public final class VoiceSearch: Sendable {
    private let session: SearchSession
    private let transfer: HTTPTransfer
    private let encoder: Mutex<any AudioUploadEncoder>

    fileprivate init(session: SearchSession, transfer: HTTPTransfer, encoder: any AudioUploadEncoder) {
        self.session = session
        self.transfer = transfer
        self.encoder = Mutex(encoder)
    }

    /// Partial transcripts, the end of the upload, then the result or the failure; the stream ends after that.
    public var events: AsyncStream<VoiceSearchEvent> { session.events }

    /// Sends captured audio. Returns false once the audio is no longer wanted (SafeToStopAudio, result,
    /// refusal, finish or cancel), as the SDK's fill() returns true then.
    @discardableResult
    public func write(_ samples: UnsafeBufferPointer<Int16>) -> Bool {
        guard !transfer.isUploadEnded else { return false }
        session.markFirstAudio()
        let chunks = encoder.withLock { $0.encode(samples) }
        return chunks.isEmpty ? !transfer.isUploadEnded : transfer.append(chunks)
    }

    @discardableResult
    public func write(_ samples: [Int16]) -> Bool { samples.withUnsafeBufferPointer { write($0) } }

    /// stopSearch: the audio ends here; the search goes on to the result.
    public func finish() {
        let tail = encoder.withLock { $0.finish() }
        if transfer.append(tail, end: true) { session.audioEnded(.caller) }
    }

    /// cancelSearch: aborts at once; the result is `.cancelled`.
    public func cancel() { session.cancel() }

    /// The final result (or the failure).
    public func response() async throws(HoundifyError) -> HoundServerResponse { try await session.response() }

    public var timings: SearchTimings { session.timings }
}

/// Receives a transfer's bytes on the curl thread, parses the message stream and resolves the search.
final class SearchSession: HTTPTransferDelegate, Sendable {
    let kind: RequestKind
    let stopAudioOnSafeToStop: Bool
    let events: AsyncStream<VoiceSearchEvent>
    private let continuation: AsyncStream<VoiceSearchEvent>.Continuation
    private weak let client: HoundifyClient?
    private let transferRef = Mutex<HTTPTransfer?>(nil)

    private struct State {
        var scanner = JSONStreamScanner()
        var outcome: Result<HoundServerResponse, HoundifyError>?
        var waiters: [CheckedContinuation<Result<HoundServerResponse, HoundifyError>, Never>] = []
        var audioEnded = false
        var timings = SearchTimings(started: .now)
    }
    private let state = Mutex(State())

    init(kind: RequestKind, stopAudioOnSafeToStop: Bool, client: HoundifyClient) {
        self.kind = kind
        self.stopAudioOnSafeToStop = stopAudioOnSafeToStop
        self.client = client
        (events, continuation) = AsyncStream.makeStream(of: VoiceSearchEvent.self, bufferingPolicy: .unbounded)
    }

    func attach(_ transfer: HTTPTransfer) { transferRef.withLock { $0 = transfer } }

    var timings: SearchTimings { state.withLock { $0.timings } }

    func markFirstAudio() {
        state.withLock { if $0.timings.firstAudio == nil { $0.timings.firstAudio = .now } }
    }

    func response() async -> Result<HoundServerResponse, HoundifyError> {
        await withCheckedContinuation { waiter in
            let ready = state.withLock { s -> Result<HoundServerResponse, HoundifyError>? in
                if let outcome = s.outcome { return outcome }
                s.waiters.append(waiter)
                return nil
            }
            if let ready { waiter.resume(returning: ready) }
        }
    }

    func response() async throws(HoundifyError) -> HoundServerResponse {
        let outcome: Result<HoundServerResponse, HoundifyError> = await response()
        return try outcome.get()
    }

    func cancel() {
        resolve(.failure(.cancelled))
        transferRef.withLock { $0 }?.cancel()
    }

    func audioEnded(_ reason: AudioEndReason) {
        let first = state.withLock { s -> Bool in
            guard !s.audioEnded else { return false }
            s.audioEnded = true
            s.timings.audioEnded = .now
            return true
        }
        if first && kind == .voice { continuation.yield(.audioEnded(reason)) }
    }

    private func endAudio(_ reason: AudioEndReason) {
        transferRef.withLock { $0 }?.endUpload()
        audioEnded(reason)
    }

    private func resolve(_ outcome: Result<HoundServerResponse, HoundifyError>) {
        let waiters = state.withLock { s -> [CheckedContinuation<Result<HoundServerResponse, HoundifyError>, Never>]? in
            guard s.outcome == nil else { return nil }
            s.outcome = outcome
            if s.timings.result == nil { s.timings.result = .now }
            defer { s.waiters.removeAll() }
            return s.waiters
        }
        guard let waiters else { return }
        switch outcome {
        case .success(let response):
            client?.accept(response)
            continuation.yield(.result(response))
        case .failure(let error):
            continuation.yield(.failed(error))
        }
        continuation.finish()
        for waiter in waiters { waiter.resume(returning: outcome) }
    }

    // MARK: HTTPTransferDelegate (curl thread)

    func transferReceived(_ bytes: UnsafeRawBufferPointer) {
        let parsed = state.withLock { s -> Result<[Data], JSONStreamScanner.ScanError> in
            do throws(JSONStreamScanner.ScanError) { return .success(try s.scanner.feed(bytes)) } catch { return .failure(error) }
        }
        switch parsed {
        case .failure(let error):
            let houndError: HoundifyError
            if case .messageTooLarge = error { houndError = .invalidResponse(detail: error.description) } else {
                houndError = .parseFailed(detail: error.description)
            }
            resolve(.failure(houndError))
            transferRef.withLock { $0 }?.cancel()
        case .success(let messages):
            for raw in messages { handle(raw) }
        }
    }

    private func handle(_ raw: Data) {
        let message: HoundMessage
        do { message = try HoundMessage.parse(raw) } catch {
            resolve(.failure(error as? HoundifyError ?? .parseFailed(detail: "\(error)")))
            transferRef.withLock { $0 }?.cancel()
            return
        }
        switch message {
        case .partialTranscript(let partial):
            state.withLock { if $0.timings.firstPartial == nil { $0.timings.firstPartial = .now } }
            continuation.yield(.partialTranscript(partial))
            if partial.safeToStopAudio && stopAudioOnSafeToStop { endAudio(.safeToStopAudio) }
        case .result(let response):
            // As the SDK: no more audio once the result (or an error) is in.
            endAudio(.resultArrived)
            if response.isError {
                resolve(.failure(.serverStatusError(message: response.errorMessage ?? "no ErrorMessage")))
            } else {
                resolve(.success(response))
            }
        case .other:
            break
        }
    }

    func transferCompleted(_ outcome: HTTPTransferOutcome) {
        let cutShort = state.withLock { $0.scanner.hasPartialMessage }
        switch outcome {
        case .finished(let status, let body):
            if status == 200 {
                resolve(.failure(.noResponseReceived(detail: cutShort
                    ? "the connection closed in the middle of a message"
                    : "the connection closed before the final result")))
            } else {
                resolve(.failure(Self.error(status: status, body: body)))
            }
        case .failed(let error, let status, let body):
            if status != 0 && status != 200 && error != .cancelled {
                resolve(.failure(Self.error(status: status, body: body)))
            } else {
                resolve(.failure(error))
            }
        }
        audioEnded(.refused)
    }

    /// Maps a non-200 answer: 401/403 are authentication failures (the JS SDK's mapping); a JSON error body gives
    /// the server's message; anything else is an HTTP error with the body's first line.
    static func error(status: Int, body: [UInt8]) -> HoundifyError {
        let text = String(decoding: body, as: UTF8.self)
        if status == 401 || status == 403 { return .authenticationFailed(httpStatus: status, body: text) }
        if let json = try? JSONValue(parsing: Data(body)), json["Status"]?.stringValue == "Error" {
            return .serverStatusError(message: "HTTP \(status): " + (json["ErrorMessage"]?.stringValue ?? "no ErrorMessage"))
        }
        return .httpError(status: status, body: text)
    }
}
