import FoundationEssentials
public import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import JSONKit
import Synchronization

/// The control API and the kiosk page (docs/control-api.md) on one port: `GET /` the page, `GET /api/status` the
/// snapshot, `POST /api/command` a command, `GET /api/ws` a WebSocket with the snapshot, every event after it, and
/// commands. Served on a thread of its own (SwiftNIO); the speaker's loop never waits on it.
public final class ControlServer: Sendable {
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let hub: ControlHub
    private let token: String
    private let page: [UInt8]?
    private let logger: Logger
    private let channel = Mutex<(any Channel)?>(nil)
    /// Set once the port is known (before any client can know it when the port was 0).
    private let access = Mutex<ControlAccess?>(nil)

    /// A request body larger than this is refused (a command is a line of JSON).
    static let largestBody = 64 * 1024
    /// A WebSocket client this far behind (bytes written but not yet taken by it) is dropped.
    static let largestBacklog = 1 << 20

    /// `page`: the kiosk page's HTML (nil: not installed; `/` then says so).
    public init(hub: ControlHub, token: String, page: [UInt8]?, logger: Logger) {
        self.hub = hub
        self.token = token
        self.page = page
        self.logger = logger
    }

    /// Listens on `host:port` (port 0: any free one); returns the port.
    public func start(host: String, port: Int) async throws -> Int {
        let hub = hub, page = page, logger = logger
        if port != 0 { access.withLock { $0 = ControlAccess(token: token, listenHost: host, port: port) } }
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // A client that stops reading fills a small buffer, not the speaker's memory: the rest waits in the
            // backlog that drops it (largestBacklog).
            .childChannelOption(.socketOption(.so_sndbuf), value: 64 * 1024)
            .childChannelInitializer { [self] channel in
                guard let access = access.withLock({ $0 }) else { return channel.close() }
                return channel.eventLoop.makeCompletedFuture {
                    let http = HTTPHandler(hub: hub, access: access, page: page, logger: logger)
                    let boundHTTP = NIOLoopBound(http, eventLoop: channel.eventLoop)
                    let upgrader = NIOWebSocketServerUpgrader(
                        maxFrameSize: ControlServer.largestBody,
                        shouldUpgrade: { channel, head in
                            let allowed = ControlPath(head.uri).path == "/api/ws"
                                && access.check(head, peerIsLoopback: channel.remoteAddress.isLoopback) == nil
                            // Not upgraded: the HTTP handler answers with the reason.
                            return channel.eventLoop.makeSucceededFuture(allowed ? HTTPHeaders() : nil)
                        },
                        upgradePipelineHandler: { channel, _ in
                            channel.eventLoop.makeCompletedFuture {
                                try channel.pipeline.syncOperations.addHandler(
                                    NIOWebSocketFrameAggregator(minNonFinalFragmentSize: 0, maxAccumulatedFrameCount: 64,
                                                                maxAccumulatedFrameSize: ControlServer.largestBody))
                                try channel.pipeline.syncOperations.addHandler(WebSocketHandler(hub: hub, logger: logger))
                            }
                        })
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                        withServerUpgrade: (upgraders: [upgrader], completionHandler: { context in
                            context.pipeline.syncOperations.removeHandler(boundHTTP.value, promise: nil)
                        }))
                    try channel.pipeline.syncOperations.addHandler(http)
                }
            }
        let bound = try await bootstrap.bind(host: host, port: port).get()
        let actual = bound.localAddress?.port ?? port
        if port == 0 { access.withLock { $0 = ControlAccess(token: token, listenHost: host, port: actual) } }
        channel.withLock { $0 = bound }
        return actual
    }

    public func stop() async {
        let bound = channel.withLock { s in defer { s = nil }; return s }
        try? await bound?.close()
        try? await group.shutdownGracefully()
    }
}

extension Optional where Wrapped == SocketAddress {
    /// The peer is on this machine.
    var isLoopback: Bool {
        guard let ip = self?.ipAddress else { return false }
        return ip.hasPrefix("127.") || ip == "::1" || ip.hasPrefix("::ffff:127.")
    }
}

/// Plain HTTP: the page, the snapshot and commands.
final class HTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let hub: ControlHub
    private let access: ControlAccess
    private let page: [UInt8]?
    private let logger: Logger
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var bodyTooLarge = false

    init(hub: ControlHub, access: ControlAccess, page: [UInt8]?, logger: Logger) {
        self.hub = hub
        self.access = access
        self.page = page
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
            bodyTooLarge = false
        case .body(var buffer):
            if body.count + buffer.readableBytes > ControlServer.largestBody { bodyTooLarge = true } else {
                body += buffer.readBytes(length: buffer.readableBytes) ?? []
            }
        case .end:
            guard let head else { return }
            self.head = nil
            route(context: context, head: head)
        }
    }

    private func route(context: ChannelHandlerContext, head: HTTPRequestHead) {
        if let refusal = access.check(head, peerIsLoopback: context.channel.remoteAddress.isLoopback) {
            logger.info("control API: refused \(head.method) \(ControlPath(head.uri).path) from \(context.channel.remoteAddress?.ipAddress ?? "?"): \(refusal.message)")
            return respond(context: context, head: head, status: refusal.status, json: ControlHub.failure(refusal.message))
        }
        let path = ControlPath(head.uri).path
        switch (head.method, path) {
        case (.GET, "/"), (.GET, "/index.html"):
            guard let page else {
                return respond(context: context, head: head, status: .notFound,
                               json: ControlHub.failure("the kiosk page is not installed (share/kiosk/index.html)"))
            }
            respond(context: context, head: head, status: .ok, contentType: "text/html; charset=utf-8", body: page)
        case (.GET, "/api/status"):
            respond(context: context, head: head, status: .ok, json: hub.snapshotReply)
        case (.GET, "/api/ws"):
            respond(context: context, head: head, status: .badRequest,
                    json: ControlHub.failure("/api/ws is a WebSocket: connect with Upgrade: websocket"))
        case (.POST, "/api/command"):
            command(context: context, head: head)
        case (_, "/"), (_, "/index.html"), (_, "/api/status"), (_, "/api/ws"), (_, "/api/command"):
            respond(context: context, head: head, status: .methodNotAllowed,
                    json: ControlHub.failure("\(head.method) is not allowed on \(path)"))
        default:
            respond(context: context, head: head, status: .notFound,
                    json: ControlHub.failure("no such path: \(path) (the API is /api/status, /api/command and /api/ws)"))
        }
    }

    private func command(context: ChannelHandlerContext, head: HTTPRequestHead) {
        // JSON only: a browser must ask first (CORS preflight, never granted) before it can send it from another site.
        guard head.headers.first(name: "content-type")?.lowercased().hasPrefix("application/json") == true else {
            return respond(context: context, head: head, status: .unsupportedMediaType,
                           json: ControlHub.failure("send the command as Content-Type: application/json"))
        }
        guard !bodyTooLarge else {
            return respond(context: context, head: head, status: .payloadTooLarge,
                           json: ControlHub.failure("the request is larger than \(ControlServer.largestBody) bytes"))
        }
        let command: ControlCommand
        do {
            let json = try JSONValue(parsing: Data(body))
            command = try ControlCommand.parse(json)
        } catch let problem as ControlCommand.Problem {
            return respond(context: context, head: head, status: .badRequest, json: ControlHub.failure(problem.description))
        } catch {
            return respond(context: context, head: head, status: .badRequest, json: ControlHub.failure("the body is not JSON"))
        }
        logger.info("control API: \(command.name)")
        let hub = hub, eventLoop = context.eventLoop
        let bound = NIOLoopBound((self, context), eventLoop: eventLoop)
        Task {
            let reply = await hub.perform(command, waitForAnswer: true)
            eventLoop.execute {
                let (handler, context) = bound.value
                handler.respond(context: context, head: head, status: reply["ok"] == .bool(true) ? .ok : .conflict, json: reply)
            }
        }
    }

    private func respond(context: ChannelHandlerContext, head: HTTPRequestHead, status: HTTPResponseStatus, json: JSONValue) {
        respond(context: context, head: head, status: status, contentType: "application/json", body: Array((json.asciiJSON() + "\n").utf8))
    }

    private func respond(context: ChannelHandlerContext, head: HTTPRequestHead, status: HTTPResponseStatus, contentType: String, body: [UInt8]) {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "Content-Length", value: "\(body.count)")
        headers.add(name: "Cache-Control", value: "no-store")
        if !head.isKeepAlive { headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
        let keepAlive = head.isKeepAlive
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { [channel = context.channel] _ in
            if !keepAlive { channel.close(promise: nil) }
        }
    }
}

/// One WebSocket client: the snapshot and every event as text frames; commands in as text frames, each answered
/// by a `{"reply": ...}` frame.
final class WebSocketHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let hub: ControlHub
    private let logger: Logger
    private var subscriber: WebSocketSubscriber?

    init(hub: ControlHub, logger: Logger) {
        self.hub = hub
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let subscriber = WebSocketSubscriber(channel: context.channel, logger: logger)
        self.subscriber = subscriber
        logger.debug("control API: a WebSocket client connected from \(context.channel.remoteAddress?.ipAddress ?? "?")")
        hub.subscribe(subscriber)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let subscriber { hub.unsubscribe(subscriber) }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            var data = frame.unmaskedData
            let text = data.readString(length: data.readableBytes) ?? ""
            handle(text)
        case .binary:
            subscriber?.send(["reply": .null, "ok": false, "error": "commands are JSON in text frames"])
        case .ping:
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        case .connectionClose:
            var data = frame.unmaskedData
            let code = data.readSlice(length: 2) ?? ByteBuffer()
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: code))).whenComplete {
                [channel = context.channel] _ in channel.close(promise: nil)
            }
        default:
            break
        }
    }

    private func handle(_ text: String) {
        guard let subscriber else { return }
        let command: ControlCommand
        do {
            command = try ControlCommand.parse(try JSONValue(parsing: Data(text.utf8)))
        } catch let problem as ControlCommand.Problem {
            return subscriber.send(["reply": .null, "ok": false, "error": .string(problem.description)])
        } catch {
            return subscriber.send(["reply": .null, "ok": false, "error": "a command is a JSON object, e.g. {\"command\":\"stop\"}"])
        }
        logger.info("control API (WebSocket): \(command.name)")
        let hub = hub
        Task {
            // The answer to a question comes as its events (final, or error), like everyone else's.
            guard case .object(var reply) = await hub.perform(command, waitForAnswer: false) else { return }
            reply["reply"] = .string(command.name)
            subscriber.send(.object(reply))
        }
    }
}

/// Sends to one WebSocket client from any thread without waiting; a client too far behind is closed.
final class WebSocketSubscriber: ControlSubscriber {
    private let channel: any Channel
    private let logger: Logger
    private let backlog = Atomic<Int>(0)
    private let closed = Atomic<Bool>(false)

    init(channel: any Channel, logger: Logger) {
        self.channel = channel
        self.logger = logger
    }

    func send(_ json: JSONValue) { _ = deliver(json.asciiJSON()) }

    func deliver(_ line: String) -> Bool {
        guard !closed.load(ordering: .relaxed) else { return false }
        let size = line.utf8.count
        let behind = backlog.add(size, ordering: .relaxed).newValue
        if behind > ControlServer.largestBacklog {
            if !closed.exchange(true, ordering: .relaxed) {
                logger.warning("control API: dropped a client \(behind) bytes behind (it stopped reading)")
                channel.close(promise: nil)
            }
            return false
        }
        let frame = WebSocketFrame(fin: true, opcode: .text, data: channel.allocator.buffer(string: line))
        channel.writeAndFlush(frame).whenComplete { _ in self.backlog.subtract(size, ordering: .relaxed) }
        return true
    }
}

extension ControlCommand {
    /// The command's name, for the log and replies.
    var name: String {
        switch self {
        case .listen: "listen"
        case .stop: "stop"
        case .text: "text"
        case .say: "say"
        case .mute(let on): on ? "mute" : "unmute"
        case .volume: "volume"
        case .status: "status"
        case .cancelTimer: "cancel_timer"
        case .cancelAlarm: "cancel_alarm"
        case .clearConversation: "clear"
        case .wake: "wake"
        }
    }
}
