import FoundationEssentials
import JSONKit
import Platform
import Glibc
import Houndify
import NIOCore
import NIOPosix
import NIOHTTP1
import CompressNIO
public import Logging
import Synchronization

/// Settings of the local Houndify-compatible service.
public struct LocalServiceConfiguration: Sendable {
    public var clientID: String
    public var clientKey: String
    /// The transcript of voice queries that do not name one in RequestInfo `LocalServiceTranscript`.
    public var defaultTranscript: String
    public var voice = VoiceQueryStream.Settings()
    public var fault: Fault = .none

    /// Misbehaviours for tests of the client's error handling.
    public enum Fault: String, Sendable, CaseIterable {
        case none
        /// Voice: close the connection after the first partial transcript; text: after half the answer.
        case closeMidStream = "close-mid-stream"
        /// Read the request and never answer.
        case stall
        /// Close each connection right after its response without announcing it (`Connection: close`), as a
        /// server dropping idle keep-alive connections does: the client's next request may meet a dead socket.
        case closeAfterResponse = "close-after-response"
        /// Answer every query with an in-band `"Status": "Error"` HoundServer object.
        case statusError = "status-error"
    }

    public init(clientID: String, clientKey: String, defaultTranscript: String = "what time is it") {
        self.clientID = clientID
        self.clientKey = clientKey
        self.defaultTranscript = defaultTranscript
    }
}

/// The local service (`hound-speaker serve`): checks the signature as Houndify does, answers text queries from
/// `AnswerBook`, and answers voice queries while the upload runs (partials, SafeToStopAudio, final result), each
/// message one HTTP chunk of compact JSON, gzipped per chunk when the client asks (the Python SDK does).
public final class LocalHoundifyService: Sendable {
    public let configuration: LocalServiceConfiguration
    let authenticator: HoundAuthenticator
    let answers: AnswerBook
    let voice = ResponseVoice()
    let logger: Logger
    private let group: MultiThreadedEventLoopGroup
    private let channel = Mutex<(any Channel)?>(nil)

    public init(configuration: LocalServiceConfiguration, answers: AnswerBook = AnswerBook(),
                logger: Logger = Logger(label: "serve")) throws {
        self.configuration = configuration
        authenticator = try HoundAuthenticator(clientID: configuration.clientID, clientKey: configuration.clientKey)
        self.answers = answers
        self.logger = logger
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    }

    /// Binds `host:port` (port 0 picks a free one) and returns the port.
    public func start(host: String = "127.0.0.1", port: Int) async throws -> Int {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    // Pipelining assistance would hold back a response until its request has ended; this
                    // service must answer while the audio is still uploading.
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withPipeliningAssistance: false)
                    try channel.pipeline.syncOperations.addHandler(HoundHTTPHandler(service: self))
                }
            }
        let bound = try await bootstrap.bind(host: host, port: port).get()
        channel.withLock { $0 = bound }
        return bound.localAddress?.port ?? port
    }

    public func stop() async {
        if let channel = channel.withLock({ $0 }) { try? await channel.close() }
        try? await group.shutdownGracefully()
    }

    static func encode(_ json: JSONValue) -> [UInt8] { Array((json.asciiJSON() + "\n").utf8) }
}

final class HoundHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private enum Mode {
        case idle
        case discard(closeAtEnd: Bool)
        case text(query: String, infoLength: Int?, headerInfo: [String: JSONValue]?, body: [UInt8])
        case voice(VoiceQueryStream, info: [String: JSONValue])
        case done
    }

    private let service: LocalHoundifyService
    private var mode = Mode.idle
    private var gzip = false
    private var keepAlive = true
    private var partialsSent = 0
    private var safeToStopSentAt: NIODeadline?

    init(service: LocalHoundifyService) { self.service = service }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): begin(context: context, head: head)
        case .body(var buffer):
            let bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
            receive(context: context, bytes: bytes)
        case .end: end(context: context)
        }
    }

    private func begin(context: ChannelHandlerContext, head: HTTPRequestHead) {
        keepAlive = head.isKeepAlive
        gzip = head.headers.first(name: "Hound-Response-Accept-Encoding")?.lowercased() == "gzip"
        partialsSent = 0
        safeToStopSentAt = nil
        let parts = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let path = String(parts[0])
        guard path == "/v1/text" || path == "/v1/audio" else {
            respondPlain(context: context, status: .notFound, text: "No such endpoint: \(path)\n")
            mode = .discard(closeAtEnd: false)
            return
        }
        guard let requestAuth = head.headers.first(name: "Hound-Request-Authentication"),
              let clientAuth = head.headers.first(name: "Hound-Client-Authentication"),
              service.authenticator.verify(requestAuthentication: requestAuth, clientAuthentication: clientAuth)
        else {
            // As the JS SDK expects of the real service: 403 with a body that is not JSON.
            service.logger.notice("refused \(path): missing or wrong client authentication")
            respondPlain(context: context, status: .forbidden, text: "Authentication failed: invalid client ID or signature\n", close: true)
            // Read the rest of the body before closing, so the client sees the 403 and not a reset.
            mode = .discard(closeAtEnd: true)
            return
        }
        let infoLength = head.headers.first(name: "Hound-Request-Info-Length").flatMap { Int($0) }
        let headerInfo = head.headers.first(name: "Hound-Request-Info").flatMap { try? JSONValue(parsing: Data($0.utf8)).objectValue }
        if path == "/v1/text" {
            let query = parts.count > 1 ? Self.queryParameter("query", in: String(parts[1])) ?? "" : ""
            mode = .text(query: query, infoLength: infoLength, headerInfo: headerInfo, body: [])
            return
        }
        if service.configuration.fault == .stall { mode = .discard(closeAtEnd: false); return }
        var stream = VoiceQueryStream(requestInfoLength: infoLength, headerRequestInfo: headerInfo,
                                      defaultTranscript: service.configuration.defaultTranscript, settings: service.configuration.voice)
        _ = stream.feed([])
        mode = .voice(stream, info: headerInfo ?? [:])
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "Transfer-Encoding", value: "chunked")
        context.writeAndFlush(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
    }

    private func receive(context: ChannelHandlerContext, bytes: [UInt8]) {
        switch mode {
        case .text(let query, let infoLength, let headerInfo, var body):
            body += bytes
            mode = .text(query: query, infoLength: infoLength, headerInfo: headerInfo, body: body)
        case .voice(var stream, var info):
            for output in stream.feed(bytes) {
                switch output {
                case .requestInfo(let parsed): info = parsed
                case .partial(let partial):
                    sendMessage(context: context, partial.json)
                    if partial.safeToStopAudio { safeToStopSentAt = .now() }
                    partialsSent += 1
                    if service.configuration.fault == .closeMidStream {
                        mode = .done
                        context.close(promise: nil)
                        return
                    }
                case .error(let message):
                    sendMessage(context: context, AnswerBook.error(message))
                    context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                    mode = .discard(closeAtEnd: true)
                    return
                }
            }
            mode = .voice(stream, info: info)
        default:
            break
        }
    }

    private func end(context: ChannelHandlerContext) {
        switch mode {
        case .discard(let close):
            mode = .idle
            if close || !keepAlive { context.close(promise: nil) }
        case .text(let query, let infoLength, let headerInfo, let body):
            var info = headerInfo ?? [:]
            if let length = infoLength {
                guard body.count >= length, let parsed = try? JSONValue(parsing: Data(body.prefix(length))).objectValue else {
                    respondPlain(context: context, status: .badRequest, text: "RequestInfo is missing or is not a JSON object\n")
                    mode = .idle
                    return
                }
                info = parsed
            }
            if service.configuration.fault == .stall { mode = .done; return }
            let answer = service.configuration.fault == .statusError
                ? AnswerBook.error("Simulated failure of the local service")
                : service.answers.answer(transcript: query, requestInfo: info, voice: false)
            service.logger.info("text query \"\(query)\" -> \(answer["AllResults"]?[0]?["CommandKind"]?.stringValue ?? "?")")
            var bytes = LocalHoundifyService.encode(answer)
            var headers = HTTPHeaders()
            headers.add(name: "Content-Type", value: "application/json")
            if gzip {
                bytes = Self.gzip(bytes)
                headers.add(name: "Hound-Response-Content-Encoding", value: "gzip")
            }
            headers.add(name: "Content-Length", value: String(bytes.count))
            context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .ok, headers: headers))), promise: nil)
            if service.configuration.fault == .closeMidStream {
                context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: bytes.prefix(bytes.count / 2))))), promise: nil)
                context.close(promise: nil)
                mode = .done
                return
            }
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: bytes)))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            mode = .idle
            if !keepAlive || service.configuration.fault == .closeAfterResponse { context.close(promise: nil) }
        case .voice(let stream, let info):
            if stream.failed { mode = .idle; return }
            sendMessage(context: context, stream.finalPartial.json)
            if let said = safeToStopSentAt {
                // How quickly the client ended its upload once told it could (a client should take < 50 ms).
                let ms = Double((NIODeadline.now() - said).nanoseconds) / 1e6
                service.logger.info("body ended \(String(cFormat: "%.1f", ms)) ms after SafeToStopAudio")
            }
            let answer = service.configuration.fault == .statusError
                ? AnswerBook.error("Simulated failure of the local service")
                : service.answers.answer(transcript: stream.heardTranscript, requestInfo: info, voice: true,
                                         audioSeconds: Double(stream.audioMS) / 1000)
            service.logger.info("voice query \"\(stream.heardTranscript)\" (\(stream.audioMS) ms of audio) -> \(answer["AllResults"]?[0]?["CommandKind"]?.stringValue ?? "?")")
            if let voice = info["ResponseAudioVoice"]?.stringValue, answer["Status"] == "OK" {
                // Rendering takes a moment on the speech thread: the event loop goes on meanwhile, and the answer
                // is sent from it once the voice is ready.
                mode = .done
                let long = info["ResponseAudioShortOrLong"]?.stringValue != "Short"
                // The handler and its context belong to the event loop: the synthesis hands its result back there.
                let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
                let eventLoop = context.eventLoop, responseVoice = service.voice
                Task {
                    let voiced = await responseVoice.voiced(answer, voice: voice, long: long)
                    eventLoop.execute { bound.value.handler.finishVoiceAnswer(context: bound.value.context, voiced) }
                }
                return
            }
            finishVoiceAnswer(context: context, answer)
        case .idle, .done:
            break
        }
    }

    private func finishVoiceAnswer(context: ChannelHandlerContext, _ answer: JSONValue) {
        sendMessage(context: context, answer)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        mode = .idle
        if !keepAlive || service.configuration.fault == .closeAfterResponse { context.close(promise: nil) }
    }

    /// One message, one HTTP chunk: the Python SDK reads each chunk as one JSON message (docs/houndify-protocol.md,
    /// "Response framing").
    private func sendMessage(context: ChannelHandlerContext, _ json: JSONValue) {
        var bytes = LocalHoundifyService.encode(json)
        if gzip { bytes = Self.gzip(bytes) }
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: bytes)))), promise: nil)
    }

    private func respondPlain(context: ChannelHandlerContext, status: HTTPResponseStatus, text: String, close: Bool = false) {
        var headers = HTTPHeaders()
        // Say so when the connection will close, or a client may send its next request on it.
        if close { headers.add(name: "Connection", value: "close") }
        headers.add(name: "Content-Type", value: "text/plain")
        headers.add(name: "Content-Length", value: String(text.utf8.count))
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: text)))), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        service.logger.debug("connection error: \(error)")
        context.close(promise: nil)
    }

    static func gzip(_ bytes: [UInt8]) -> [UInt8] {
        var input = ByteBuffer(bytes: bytes)
        guard var out = try? input.compress(with: .gzip()) else { return bytes }
        return out.readBytes(length: out.readableBytes) ?? bytes
    }

    /// The value of `name` in a query string, percent-decoded. `+` stays `+`: the service does not read it as a
    /// space (docs/houndify-protocol.md, "Text queries").
    static func queryParameter(_ name: String, in query: String) -> String? {
        for pair in query.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard kv[0] == name else { continue }
            guard kv.count > 1 else { return "" }
            // URLComponents decodes %XX (and leaves `+` alone); a malformed escape keeps the raw text.
            let decoded = URLComponents(string: "http://localhost/?v=" + kv[1])?.queryItems?.first?.value
            return decoded ?? String(kv[1])
        }
        return nil
    }
}
