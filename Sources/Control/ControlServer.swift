import FoundationEssentials
import Glibc
public import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import ControlCore
import JSONKit
import ServiceLifecycle
import Synchronization

/// The control API and the kiosk page (docs/control-api.md) on one port: `GET /` the page, `GET /api/status` the
/// snapshot, `POST /api/command` a command, `GET /api/ws` a WebSocket with the snapshot, every event after it, and
/// commands. Served on a thread of its own (SwiftNIO); the speaker's loop never waits on it.
///
/// The protocol (HTTP, the WebSocket upgrade, refusals, time limits) is done by the channel handlers below; what
/// must wait (a command carried out by the speaker) is done by `run`'s tasks: the listening socket is a
/// `NIOAsyncChannel` whose connections `run` serves, each in a child task, which the handlers hand their commands
/// to (`ControlConnection.requests`) and which writes an HTTP command's reply back down the pipeline.
public final class ControlServer: Sendable {
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let hub: ControlHub
    private let token: String
    private let limits: Limits
    private let page: [UInt8]?
    private let logger: Logger
    /// Bound by `start`, served by `run` (nil once `run` has taken it, or after `stop`).
    private let listener = Mutex<NIOAsyncChannel<Accepted, Never>?>(nil)
    /// The listening socket, for `stop` (without `run`, as the tests use the server).
    private let channel = Mutex<(any Channel)?>(nil)
    /// Set once the port is known (before any client can know it when the port was 0).
    private let access = Mutex<ControlAccess?>(nil)
    private let connections = Atomic<Int>(0)
    private let warnedFull = Atomic<Bool>(false)
    /// The connections admitted that have not sent a request's head yet, oldest first (`admit`).
    private let waitingForHead = Mutex<[(id: ObjectIdentifier, channel: any Channel)]>([])

    /// A request body larger than this is refused (a command is a line of JSON).
    static let largestBody = 64 * 1024
    /// WebSocket commands one client may have waiting to be carried out; one more is refused (with a reply saying so).
    static let largestPendingCommands = 64
    /// A WebSocket client whose queue (frames handed to its connection, not yet taken by its socket) costs more
    /// than this is closed, not its messages dropped: a screen that silently missed an event would go on showing
    /// what is no longer so (a timer cancelled meanwhile); closed, it reconnects and starts from a fresh snapshot,
    /// as the kiosk page does. The queue is counted in what it costs, not in its text alone (frameCost): most
    /// events are short lines (the level meter five times a second), and a megabyte of them once held several
    /// times that in SwiftNIO's bookkeeping (issue #34: 60 clients that never read, 73 MB).
    static let largestBacklog = 256 * 1024
    /// What one queued frame costs beyond its text: SwiftNIO's pending write and its buffer, the frame's header,
    /// the completion callback and the allocator's rounding (an estimate on the generous side).
    static let frameOverhead = 512

    /// What one client may hold, so that no number of clients can take the speaker's file descriptors, memory or
    /// time (the microphone, the sound card and Houndify need descriptors of their own).
    public struct Limits: Sendable {
        /// Connections open at once, WebSockets included; one more is closed as soon as it is accepted. The kiosk
        /// and a few scripts need a handful.
        public var connections = 64
        /// A request must arrive whole (its head and body) within this; a connection that sends nothing for this
        /// long between requests is closed too. WebSockets are not timed: they are the kiosk's, and send nothing.
        public var requestTimeout = Duration.seconds(10)

        /// Each value not given keeps its default (written once, above).
        public init(connections: Int? = nil, requestTimeout: Duration? = nil) {
            if let connections { self.connections = connections }
            if let requestTimeout { self.requestTimeout = requestTimeout }
        }

        var requestTimeAmount: TimeAmount { requestTimeout.timeAmount }
    }

    /// `page`: the kiosk page's HTML (nil: not installed; `/` then says so).
    public init(hub: ControlHub, token: String, page: [UInt8]?, logger: Logger, limits: Limits = Limits()) {
        self.hub = hub
        self.token = token
        self.limits = limits
        self.page = page
        self.logger = logger
    }

    public struct ListenFailure: Error, CustomStringConvertible {
        public var host: String
        public var port: Int
        public var reason: String
        public var description: String {
            "cannot listen on \(host.contains(":") ? "[\(host)]" : host):\(port): \(reason)"
        }
    }

    /// Listens on `host:port` (port 0: any free one); returns the port. Throws `ListenFailure` when the address
    /// cannot be had (a port already taken, an address this machine does not have).
    public func start(host: String, port: Int) async throws -> Int {
        if port != 0 { access.withLock { $0 = ControlAccess(token: token, listenHost: host, port: port) } }
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // A client that stops reading fills a small buffer, not the speaker's memory: the rest waits in the
            // backlog that drops it (largestBacklog).
            .childChannelOption(.socketOption(.so_sndbuf), value: 64 * 1024)
        let bound: NIOAsyncChannel<Accepted, Never>
        do {
            bound = try await bootstrap.bind(host: host, port: port) { [self] channel in
                // Never a failed future: a connection that is not served is closed here and skipped by `run`.
                guard let access = access.withLock({ $0 }), admit(channel) else {
                    channel.close(promise: nil)
                    return channel.eventLoop.makeSucceededFuture(.refused)
                }
                return channel.eventLoop.makeCompletedFuture {
                    do {
                        return .served(try self.configure(channel, access: access))
                    } catch {
                        logger.warning("control API: could not set up a connection: \(error)")
                        channel.close(promise: nil)
                        return .refused
                    }
                }
            }
        } catch {
            // "Address already in use", not NIO's "bind(descriptor:ptr:bytes:): ... (errno: 98)".
            throw ListenFailure(host: host, port: port, reason: (error as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(error)")
        }
        let actual = bound.channel.localAddress?.port ?? port
        if port == 0 { access.withLock { $0 = ControlAccess(token: token, listenHost: host, port: actual) } }
        channel.withLock { $0 = bound.channel }
        listener.withLock { $0 = bound }
        return actual
    }

    /// After `start`: serves every connection, each in a child task, until the calling task's graceful shutdown
    /// (swift-service-lifecycle) or cancellation; then takes no more, closes the open ones (WebSockets included:
    /// they would stay forever), waits for their tasks (a command being carried out finishes; its reply goes
    /// nowhere) and shuts the event loop down. Throws when accepting fails.
    public func run() async throws {
        guard let listener = listener.withLock({ s in defer { s = nil }; return s }) else { return }
        let hub = hub
        var failure: (any Error)?
        await withDiscardingTaskGroup { connections in
            do {
                try await listener.executeThenClose { accepted in
                    for try await next in accepted.cancelOnGracefulShutdown() {
                        guard case .served(let connection) = next else { continue }
                        connections.addTask { await Self.serve(connection, hub: hub) }
                    }
                }
            } catch {
                failure = error
            }
            connections.cancelAll()
        }
        channel.withLock { $0 = nil }
        try? await group.shutdownGracefully()
        if let failure { throw failure }
    }

    /// One connection until it closes (or the server stops: cancelled, it is closed): its HTTP commands one at a
    /// time (HTTPServerPipelineHandler holds the next request back until the answer is sent), its WebSocket
    /// commands each in a child task, as they may overlap.
    private static func serve(_ connection: ControlConnection, hub: ControlHub) async {
        let channel = connection.channel
        await withTaskCancellationHandler {
            await withDiscardingTaskGroup { commands in
                // Ends when the connection closes (ControlConnection.requests).
                for await request in connection.requests {
                    switch request {
                    case .http(let command, let onThisMachine):
                        let reply = await hub.perform(command, waitForAnswer: true, onThisMachine: onThisMachine)
                        // To HTTPHandler, the pipeline's last handler, which answers the request with it.
                        channel.writeAndFlush(reply, promise: nil)
                    case .webSocket(let command, let subscriber):
                        commands.addTask {
                            // The answer to a question comes as its events (final, or error), like everyone else's.
                            guard case .object(var reply) = await hub.perform(command, waitForAnswer: false, onThisMachine: subscriber.onThisMachine) else { return }
                            reply["reply"] = .string(command.name.rawValue)
                            subscriber.send(.object(reply))
                        }
                    }
                }
            }
        } onCancel: {
            channel.close(promise: nil)
        }
    }

    /// Connections open now (for the tests).
    var openConnections: Int { connections.load(ordering: .relaxed) }

    /// Counts a new connection in; false (and a warning, once until there is room again) when `limits.connections`
    /// are open already.
    ///
    /// At the limit, the oldest connection that has not sent a request's head yet is closed to make room: a local
    /// process that holds connections open half-sent cannot keep `ctl` and the screen out (a whole request, a
    /// WebSocket, is never closed for a newcomer).
    private func admit(_ channel: any Channel) -> Bool {
        let open = connections.add(1, ordering: .relaxed).newValue
        if open > limits.connections {
            guard let oldest = waitingForHead.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else {
                connections.subtract(1, ordering: .relaxed)
                if !warnedFull.exchange(true, ordering: .relaxed) {
                    logger.warning("control API: \(limits.connections) connections are open, each with a request; closing new ones until one ends")
                }
                return false
            }
            oldest.channel.close(promise: nil)
        }
        let id = ObjectIdentifier(channel)
        waitingForHead.withLock { $0.append((id, channel)) }
        channel.closeFuture.whenComplete { [self] _ in
            headArrived(id)
            if connections.subtract(1, ordering: .relaxed).newValue < limits.connections {
                warnedFull.store(false, ordering: .relaxed)
            }
        }
        return true
    }

    /// Connection `id` sent a request's head (or closed): it is no longer the first to go when the server is full.
    private func headArrived(_ id: ObjectIdentifier) {
        waitingForHead.withLock { waiting in waiting.removeAll { $0.id == id } }
    }

    /// The connection's pipeline, and the connection as `run` serves it.
    private func configure(_ channel: any Channel, access: ControlAccess) throws -> ControlConnection {
        let hub = hub, page = page, logger = logger, limits = limits
        // HTTP commands come one at a time (HTTPServerPipelineHandler); WebSocket ones may pile up, up to this.
        let (requests, pending) = AsyncStream.makeStream(of: ControlRequest.self, bufferingPolicy: .bufferingOldest(ControlServer.largestPendingCommands))
        channel.closeFuture.whenComplete { _ in pending.finish() }
        let http = HTTPHandler(hub: hub, access: access, page: page, logger: logger, requestTimeout: limits.requestTimeAmount, requests: pending)
        let idle = IdleStateHandler(readTimeout: limits.requestTimeAmount)
        let headers = FramingHeaders()
        let id = ObjectIdentifier(channel)
        let first = FirstHead { [weak self] in self?.headArrived(id) }
        let bound = NIOLoopBound((http, idle, headers, first), eventLoop: channel.eventLoop)
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
                    try channel.pipeline.syncOperations.addHandler(WebSocketHandler(hub: hub, logger: logger, requests: pending))
                }
            })
        let sync = channel.pipeline.syncOperations
        try sync.configureHTTPServerPipeline(
            withServerUpgrade: (upgraders: [upgrader], completionHandler: { [weak self] context in
                // The HTTP handlers go before the first frame is written: what is left speaks WebSocket.
                // The upgrade's request never reaches FirstHead (the upgrader takes it): a WebSocket has sent its head.
                self?.headArrived(id)
                let (http, idle, headers, first) = bound.value
                context.pipeline.syncOperations.removeHandler(http, promise: nil)
                context.pipeline.syncOperations.removeHandler(idle, promise: nil)
                context.pipeline.syncOperations.removeHandler(headers, promise: nil)
                context.pipeline.syncOperations.removeHandler(first, promise: nil)
            }))
        // Next to the encoder, so that every response has them: ours, NIO's 400 for a request it cannot parse, and
        // the 101 of a WebSocket.
        try sync.addHandler(headers, position: .after(try sync.handler(type: HTTPResponseEncoder.self)))
        // After the decoder, which passes nothing on until a request's head is whole: a head sent slowly, or a
        // connection left open with nothing more, is timed out from the last whole part.
        try sync.addHandler(idle)
        try sync.addHandler(first)
        try sync.addHandler(http)
        return ControlConnection(channel: channel, requests: requests)
    }

    /// Closes the listening socket and every connection, without `run` (the tests), or before it.
    public func stop() async {
        listener.withLock { $0 = nil }
        let bound = channel.withLock { s in defer { s = nil }; return s }
        try? await bound?.close()
        try? await group.shutdownGracefully()
    }
}

/// What a connection's handlers hand to its task in `ControlServer.run`: a command to carry out. An HTTP command's
/// reply is written back down the pipeline to HTTPHandler, which answers the request with it; a WebSocket
/// command's goes to its subscriber.
enum ControlRequest: Sendable {
    case http(ControlCommand, onThisMachine: Bool)
    case webSocket(ControlCommand, WebSocketSubscriber)
}

/// Tells once that the connection's first request head is whole, and passes everything on.
final class FirstHead: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    private var arrived: (@Sendable () -> Void)?

    init(_ arrived: @escaping @Sendable () -> Void) { self.arrived = arrived }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data), let arrived {
            self.arrived = nil
            arrived()
        }
        context.fireChannelRead(data)
    }
}

/// One connection as `ControlServer.run` serves it: its commands, until it closes. (Not an NIOAsyncChannel of its
/// own: the WebSocket upgrade adds its handlers after the last one, where NIOAsyncChannel's must stay.)
struct ControlConnection: Sendable {
    let channel: any Channel
    let requests: AsyncStream<ControlRequest>
}

/// How a connection left the server's accept: served (its pipeline set up) or refused (closed).
enum Accepted: Sendable {
    case served(ControlConnection)
    case refused
}

extension Optional where Wrapped == SocketAddress {
    /// The peer is on this machine.
    var isLoopback: Bool {
        guard let ip = self?.ipAddress else { return false }
        return ip.hasPrefix("127.") || ip == "::1" || ip.hasPrefix("::ffff:127.")
    }
}

/// Adds to every response the headers that forbid showing it in a frame of another page (clickjacking: a page
/// that frames the kiosk could trick a click on it): CSP's `frame-ancestors`, and `X-Frame-Options` for browsers
/// that predate it.
final class FramingHeaders: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    static let headers = [("Content-Security-Policy", "frame-ancestors 'none'"), ("X-Frame-Options", "DENY")]

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .head(var head) = unwrapOutboundIn(data) else { return context.write(data, promise: promise) }
        for (name, value) in Self.headers { head.headers.replaceOrAdd(name: name, value: value) }
        context.write(wrapOutboundOut(.head(head)), promise: promise)
    }
}

/// Plain HTTP: the page, the snapshot and commands. A request is refused as soon as its head shows it must be (the
/// Host, the token, a body declared too large) or its body grows past `largestBody`, without reading the rest; a
/// refused connection is closed.
final class HTTPHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    /// A command's reply, from `ControlServer.run`.
    typealias OutboundIn = JSONValue
    typealias OutboundOut = HTTPServerResponsePart

    private enum State {
        /// Between requests.
        case idle
        /// A request's body is coming.
        case reading(HTTPRequestHead)
        /// The request is whole; its answer is being made (a command's comes from `ControlServer.run`, and a `text`
        /// waits for Houndify).
        case answering(HTTPRequestHead)
        /// Refused and answered; the rest of the request is read and dropped until it ends, then the connection is
        /// closed (closing with unread bytes would reset it, and the client could lose the answer).
        case closing
    }

    private let hub: ControlHub
    private let access: ControlAccess
    private let page: [UInt8]?
    private let logger: Logger
    private let requestTimeout: TimeAmount
    /// Commands, to the connection's task in ControlServer.run.
    private let requests: AsyncStream<ControlRequest>.Continuation
    private var state = State.idle
    private var body: [UInt8] = []
    /// Closes a connection whose request has not arrived whole in time (a body sent a byte at a time).
    private var deadline: Scheduled<Void>?
    /// While closing: the refused request has been read to its end; the refusal has been sent and the output closed.
    private var requestEnded = false
    private var outputClosed = false

    init(hub: ControlHub, access: ControlAccess, page: [UInt8]?, logger: Logger, requestTimeout: TimeAmount,
         requests: AsyncStream<ControlRequest>.Continuation) {
        self.hub = hub
        self.requests = requests
        self.access = access
        self.page = page
        self.logger = logger
        self.requestTimeout = requestTimeout
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch (unwrapInboundIn(data), state) {
        case (.head(let head), .idle):
            body = []
            if let refusal = refusal(of: head, context: context) {
                return refuse(context: context, head: head, status: refusal.status, message: refusal.message)
            }
            state = .reading(head)
            deadline = context.eventLoop.assumeIsolated().scheduleTask(in: requestTimeout) { [self] in
                guard case .reading = state else { return }
                context.close(promise: nil)
            }
        case (.body(let buffer), .reading(let head)):
            guard body.count + buffer.readableBytes <= ControlServer.largestBody else {
                return refuse(context: context, head: head, status: .payloadTooLarge,
                              message: "the request is larger than \(ControlServer.largestBody) bytes")
            }
            body += buffer.readableBytesView
        case (.end, .reading(let head)):
            deadline?.cancel()
            state = .answering(head)
            route(context: context, head: head)
        case (.end, .closing):
            requestEnded = true
            if outputClosed { context.close(promise: nil) }
        case (_, .closing):
            break
        case (.head, _), (.body, _), (.end, _):
            // HTTPServerPipelineHandler holds a pipelined request back until the answer to the one before is sent.
            context.close(promise: nil)
        }
    }

    /// A request NIO could not parse (it has answered 400), or a broken connection: closed, not left to time out.
    /// (A WebSocket handshake that is not allowed also comes here as an error; the request goes on to be refused.)
    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is HTTPParserError || error is IOError { context.close(promise: nil) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Nothing for requestTimeout: a connection between requests, in the middle of one (its head still coming
        // counts: the decoder passes nothing on until it is whole), or not taking the rest of its refusal. Not while
        // an answer is being made: the client is waiting for it, not idle.
        if event is IdleStateHandler.IdleStateEvent {
            if case .answering = state { return }
            return context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// Why the request must be refused from its head alone, before anything is read or done for it.
    private func refusal(of head: HTTPRequestHead, context: ChannelHandlerContext) -> ControlAccess.Refusal? {
        if let refusal = access.check(head, peerIsLoopback: context.channel.remoteAddress.isLoopback) {
            logger.info("control API: refused \(head.method) \(ControlPath(head.uri).path) from \(context.channel.remoteAddress?.ipAddress ?? "?"): \(refusal.message)")
            return refusal
        }
        let lengths = head.headers["content-length"]
        if let length = lengths.first.flatMap({ Int($0) }), length > ControlServer.largestBody || lengths.count > 1 {
            return .init(status: .payloadTooLarge, message: "the request is larger than \(ControlServer.largestBody) bytes")
        }
        return nil
    }

    /// The methods each path answers (`Allow` in a 405). HEAD is GET without the body, as HTTP has it.
    static func allowedMethods(_ path: String) -> [HTTPMethod]? {
        switch path {
        case "/", "/index.html", "/api/status": [.GET, .HEAD]
        case "/api/ws": [.GET]
        case "/api/command": [.POST]
        default: nil
        }
    }

    private func route(context: ChannelHandlerContext, head: HTTPRequestHead) {
        let path = ControlPath(head.uri).path
        if let allowed = Self.allowedMethods(path), !allowed.contains(head.method) {
            let list = allowed.map(\.rawValue).joined(separator: ", ")
            return respond(context: context, head: head, status: .methodNotAllowed,
                           json: ControlHub.failure("\(head.method.rawValue) is not allowed on \(path) (only \(list))"), headers: [("Allow", list)])
        }
        switch (head.method == .HEAD ? .GET : head.method, path) {
        case (.GET, "/"), (.GET, "/index.html"):
            guard let page else {
                return respond(context: context, head: head, status: .notFound,
                               json: ControlHub.failure("the kiosk page is not installed (share/kiosk/index.html)"))
            }
            respond(context: context, head: head, status: .ok, contentType: "text/html; charset=utf-8", body: page)
        case (.GET, "/api/status"):
            respond(context: context, head: head, status: .ok, json: hub.snapshotReply(onThisMachine: context.channel.remoteAddress.isLoopback))
        case (.GET, "/api/ws"):
            respond(context: context, head: head, status: .badRequest,
                    json: ControlHub.failure("/api/ws is a WebSocket: connect with Upgrade: websocket"))
        case (.POST, "/api/command"):
            command(context: context, head: head)
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
        let command: ControlCommand
        do {
            let json = try JSONValue(parsing: Data(body))
            command = try ControlCommand.parse(json)
        } catch let problem as ControlCommand.Problem {
            return respond(context: context, head: head, status: .badRequest, json: ControlHub.failure(problem.description))
        } catch {
            return respond(context: context, head: head, status: .badRequest, json: ControlHub.failure("the body is not JSON"))
        }
        body = []
        logger.info("control API: \(command.name.rawValue)")
        // Carried out by the connection's task in ControlServer.run; its reply comes back through `write`. (Never
        // dropped: the next request is held back until this one is answered.)
        requests.yield(.http(command, onThisMachine: context.channel.remoteAddress.isLoopback))
    }

    /// The reply to the command being answered.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let reply = unwrapOutboundIn(data)
        guard case .answering(let head) = state else {
            promise?.fail(ChannelError.inappropriateOperationForState)
            return
        }
        respond(context: context, head: head, status: reply["ok"] == .bool(true) ? .ok : .conflict, json: reply)
        promise?.succeed()
    }

    /// Answers a request refused before its end, and closes: the output at once, the rest once the client has
    /// sent what it had started (or requestTimeout has passed, by the idle handler or the deadline).
    private func refuse(context: ChannelHandlerContext, head: HTTPRequestHead, status: HTTPResponseStatus, message: String) {
        state = .closing
        requestEnded = false
        outputClosed = false
        body = []
        respond(context: context, head: head, status: status, json: ControlHub.failure(message))
        // However fast the rest keeps coming, it is not read for longer than a request may take.
        deadline?.cancel()
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: requestTimeout) { context.close(promise: nil) }
    }

    private func respond(context: ChannelHandlerContext, head: HTTPRequestHead, status: HTTPResponseStatus, json: JSONValue,
                         headers: [(String, String)] = []) {
        respond(context: context, head: head, status: status, contentType: "application/json", body: Array((json.asciiJSON() + "\n").utf8),
                headers: headers)
    }

    /// A response; after an error (4xx, 5xx) or when the client asked, the connection is closed. To a HEAD, the
    /// head alone, with the length the body would have.
    private func respond(context: ChannelHandlerContext, head: HTTPRequestHead, status: HTTPResponseStatus, contentType: String, body: [UInt8],
                         headers extra: [(String, String)] = []) {
        let keepAlive = head.isKeepAlive && status.code < 400
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        headers.add(name: "Content-Length", value: "\(body.count)")
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(contentsOf: extra)
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        if head.method != .HEAD { context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil) }
        let closing: Bool
        if case .closing = state { closing = true } else { closing = false }
        // Idle before the end is written: HTTPServerPipelineHandler hands on a pipelined request as soon as it is.
        if keepAlive && !closing { state = .idle }
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { [self] _ in
            if closing {
                // Unless the request has ended, the rest is still coming: stop answering, keep reading until it
                // ends (channelRead closes then).
                outputClosed = true
                context.close(mode: requestEnded ? .all : .output, promise: nil)
            } else if !keepAlive {
                context.close(promise: nil)
            }
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
    /// Commands, to the connection's task in ControlServer.run.
    private let requests: AsyncStream<ControlRequest>.Continuation
    private var subscriber: WebSocketSubscriber?

    init(hub: ControlHub, logger: Logger, requests: AsyncStream<ControlRequest>.Continuation) {
        self.hub = hub
        self.logger = logger
        self.requests = requests
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let subscriber = WebSocketSubscriber(channel: context.channel, logger: logger)
        let peer = context.channel.remoteAddress?.ipAddress ?? "?"
        switch hub.subscribe(subscriber) {
        case .subscribed:
            self.subscriber = subscriber
            logger.debug("control API: a WebSocket client connected from \(peer)")
        case .replacedSilentClient:
            self.subscriber = subscriber
            logger.warning("control API: \(hub.largestSubscriberCount) WebSocket clients were connected: the one silent the longest was closed for a new one from \(peer)")
        case .dropped:
            break  // closed already
        }
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
        hub.heard(from: subscriber)
        let command: ControlCommand
        do {
            command = try ControlCommand.parse(try JSONValue(parsing: Data(text.utf8)))
        } catch let problem as ControlCommand.Problem {
            return subscriber.send(["reply": .null, "ok": false, "error": .string(problem.description)])
        } catch {
            return subscriber.send(["reply": .null, "ok": false, "error": "a command is a JSON object, e.g. {\"command\":\"stop\"}"])
        }
        logger.info("control API (WebSocket): \(command.name.rawValue)")
        // Carried out by the connection's task in ControlServer.run, which sends the reply to `subscriber`.
        if case .dropped = requests.yield(.webSocket(command, subscriber)) {
            subscriber.send(["reply": .string(command.name.rawValue), "ok": false,
                             "error": .string("\(ControlServer.largestPendingCommands) commands are waiting already: send this one again once they are answered")])
        }
    }
}

/// Sends to one WebSocket client from any thread without waiting; a client too far behind is closed.
final class WebSocketSubscriber: ControlSubscriber {
    private let channel: any Channel
    private let logger: Logger
    private let backlog = Atomic<Int>(0)
    private let closed = Atomic<Bool>(false)

    let onThisMachine: Bool

    init(channel: any Channel, logger: Logger) {
        self.channel = channel
        self.logger = logger
        onThisMachine = channel.remoteAddress.isLoopback
    }

    func send(_ json: JSONValue) { _ = deliver(json.asciiJSON()) }

    func close(code: UInt16, reason: String) {
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        var data = channel.allocator.buffer(capacity: 2 + reason.utf8.count)
        data.writeInteger(code)
        data.writeString(reason)
        // Told why (1013, "try again later": a page that reconnects gets back in), then closed.
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)).whenComplete { [channel] _ in
            channel.close(promise: nil)
        }
    }

    func deliver(_ line: String) -> Bool {
        guard !closed.load(ordering: .relaxed) else { return false }
        let size = line.utf8.count + ControlServer.frameOverhead
        let (before, behind) = backlog.add(size, ordering: .relaxed)
        // A client with nothing queued takes any one message, however large (a big display): only one that is
        // behind is closed.
        if before > 0 && behind > ControlServer.largestBacklog {
            if !closed.exchange(true, ordering: .relaxed) {
                logger.warning("control API: closed a WebSocket client that stopped reading (its queue passed \(ControlServer.largestBacklog / 1024) kB)")
                channel.close(promise: nil)
            }
            return false
        }
        let frame = WebSocketFrame(fin: true, opcode: .text, data: channel.allocator.buffer(string: line))
        channel.writeAndFlush(frame).whenComplete { _ in self.backlog.subtract(size, ordering: .relaxed) }
        return true
    }
}

extension Duration {
    /// As NIO's timers take it, at most a day (NIO counts nanoseconds in an Int64).
    var timeAmount: TimeAmount { .milliseconds(Int64(max(0, min(self / .milliseconds(1), 86_400_000)))) }
}
