public import ControlCore
import FoundationEssentials
import Glibc
import JSONKit
public import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Setup mode's page on the local network (issue #64): `GET /` the page, `POST /api/setup` the credentials and
/// location, guarded by the code the speaker says (SetupDesk). Nothing else is served here: the control API stays
/// on loopback. One request per connection; `stop` closes the listener once the speaker is set up.
public final class SetupServer: Sendable {
    /// What the speaker makes of a form whose code was right: nil when saved, else the problem for the page.
    public typealias Submit = @Sendable (SetupForm) async -> SetupProblem?

    /// The event loop's life. Made by the first `start` (a speaker that never needs its page runs no thread for
    /// it), and shut down by whichever of `run` and a `start` still binding finishes last: NIO drops work handed to
    /// a loop already shut down, so a bind or a wait on it would never end.
    private struct Life {
        var group: MultiThreadedEventLoopGroup?
        var binding = 0
        var runEnded = false
        var stopped = false

        /// The group, once nothing can use it any more, taken so that it is shut down once.
        mutating func takeIfDone() -> MultiThreadedEventLoopGroup? {
            guard runEnded, binding == 0 else { return nil }
            defer { group = nil }
            return group
        }
    }
    private let life = Mutex(Life())
    /// `start` bound the listener (a value), or `stop` came first (the end): what `run` waits for.
    private let opened = AsyncStream<Void>.makeStream()
    private let page: [UInt8]?
    private let logger: Logger
    private let submit: Submit
    /// The code said aloud when too many wrong ones retired the last.
    private let newCode: @Sendable (String) -> Void
    private let desk: Mutex<SetupDesk>
    /// One form checked at a time: a second while the first is with Houndify is told to wait.
    private let busy = Atomic<Bool>(false)
    private let connections = Atomic<Int>(0)
    private let listener = Mutex<NIOAsyncChannel<Connection?, Never>?>(nil)
    private let channel = Mutex<(any Channel)?>(nil)

    /// One accepted connection: its request, read whole on the event loop (SetupRequestReader), for `run` to answer.
    /// Not an NIOAsyncChannel: the listener's stream drops a connection accepted as the listener closes, unserved,
    /// and SwiftNIO traps when an NIOAsyncChannel's writer is released unfinished (apple/swift-nio#2813); a plain
    /// channel is simply closed with the event loop.
    struct Connection: Sendable {
        let channel: any Channel
        let request: AsyncStream<Request>
    }

    enum Request: Sendable {
        case whole(HTTPRequestHead, body: [UInt8])
        /// The body went past `largestBody`; the rest is not read.
        case tooLarge
    }

    /// Connections at once; one more is closed when accepted.
    static let largestConnections = 16
    /// A form is a few hundred bytes.
    static let largestBody = 16 * 1024
    /// A request must arrive whole within this; the answer (a signed query to Houndify) is waited for however long.
    private let readTimeout: TimeAmount

    /// `readTimeout`: how long a connection may send nothing before its request is whole (tests shorten it).
    public init(desk: SetupDesk, page: [UInt8]?, logger: Logger, readTimeout: Duration = .seconds(30),
                newCode: @escaping @Sendable (String) -> Void, submit: @escaping Submit) {
        self.readTimeout = readTimeout.timeAmount
        self.desk = Mutex(desk)
        self.page = page
        self.logger = logger
        self.newCode = newCode
        self.submit = submit
    }

    /// The code now (for the screen and `ctl status`).
    public var code: String { desk.withLock { $0.code } }

    /// Listens on `host:port` (0: any free port); returns the port. It may come after `run` has started (setup
    /// mode opened when Houndify refuses the key), and may be tried again after a failure; not after `stop`.
    public func start(host: String, port: Int) async throws -> Int {
        let loops = try life.withLock { l throws(ControlServer.ListenFailure) -> MultiThreadedEventLoopGroup in
            guard !l.stopped, !l.runEnded else {
                throw ControlServer.ListenFailure(host: host, port: port, reason: "the setup page has been closed")
            }
            l.binding += 1
            if let g = l.group { return g }
            let made = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            l.group = made
            return made
        }
        // Once bound (or not), a `run` that ended meanwhile leaves the loop's shutdown to this start.
        func doneBinding() -> MultiThreadedEventLoopGroup? {
            life.withLock { l in
                l.binding -= 1
                return l.takeIfDone()
            }
        }
        // The listener's async wrapper is released when `bind` returns, before the loop is shut down: released
        // after, it hands its last word to a loop that is gone (NIO's "Cannot schedule tasks" in the journal).
        let bound: Int
        do {
            bound = try await bind(loops, host: host, port: port)
        } catch {
            if let last = doneBinding() { try? await last.shutdownGracefully() }
            throw error
        }
        if let last = doneBinding() { try? await last.shutdownGracefully() }
        return bound
    }

    private func bind(_ loops: MultiThreadedEventLoopGroup, host: String, port: Int) async throws -> Int {
        let bootstrap = ServerBootstrap(group: loops)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        let bound: NIOAsyncChannel<Connection?, Never>
        do {
            bound = try await bootstrap.bind(host: host, port: port) { [self] channel in
                guard connections.add(1, ordering: .relaxed).newValue <= Self.largestConnections else {
                    connections.subtract(1, ordering: .relaxed)
                    channel.close(promise: nil)
                    return channel.eventLoop.makeSucceededFuture(nil)
                }
                channel.closeFuture.whenComplete { [self] _ in connections.subtract(1, ordering: .relaxed) }
                return channel.eventLoop.makeCompletedFuture {
                    let (request, arrived) = AsyncStream.makeStream(of: Request.self)
                    channel.closeFuture.whenComplete { _ in arrived.finish() }
                    let sync = channel.pipeline.syncOperations
                    try sync.configureHTTPServerPipeline(withPipeliningAssistance: false, withErrorHandling: true)
                    try sync.addHandler(IdleStateHandler(readTimeout: readTimeout))
                    try sync.addHandler(SetupRequestReader(arrived: arrived))
                    return Connection(channel: channel, request: request)
                }
            }
        } catch {
            throw ControlServer.ListenFailure(host: host, port: port, reason: (error as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(error)")
        }
        channel.withLock { $0 = bound.channel }
        listener.withLock { $0 = bound }
        opened.continuation.yield()
        opened.continuation.finish()
        if life.withLock({ $0.stopped }) {
            // A stop while it was binding, which may have found no channel to close, and a `run` that may have
            // ended already. Whichever takes the listener closes it; the loop lives until `start`'s `doneBinding`.
            if let mine = listener.withLock({ s in defer { s = nil }; return s }) {
                try? await mine.executeThenClose { _ in }
            } else {
                bound.channel.close(promise: nil)
            }
        }
        return bound.channel.localAddress?.port ?? port
    }

    /// Once `start` has bound the listener, serves connections until `stop` (or cancellation), each in a child
    /// task; returns at once if `stop` comes first.
    public func run() async {
        for await _ in opened.stream { break }
        if let listener = listener.withLock({ s in defer { s = nil }; return s }) {
            await withDiscardingTaskGroup { connections in
                try? await listener.executeThenClose { accepted in
                    for try await next in accepted {
                        guard let connection = next else { continue }
                        connections.addTask { [self] in await serve(connection) }
                    }
                }
                connections.cancelAll()
            }
        }
        let last = life.withLock { l in
            l.runEnded = true
            return l.takeIfDone()
        }
        try? await last?.shutdownGracefully()
    }

    /// Closes the listener: no new connection; `run` then closes the ones open and returns (await it to know the
    /// port is free). The close is not awaited here: `run` may end and shut the loop down before a wait on it could
    /// be registered, and that wait would never end.
    public func stop() async {
        life.withLock { $0.stopped = true }
        opened.continuation.finish()
        let bound = channel.withLock { s in defer { s = nil }; return s }
        bound?.close(promise: nil)
    }

    private func serve(_ connection: Connection) async {
        let channel = connection.channel
        await withTaskCancellationHandler {
            // Ends without a request when the connection closes first (the client went, or the read timeout).
            for await request in connection.request {
                let reply: Reply
                switch request {
                case .whole(let head, let body): reply = await answer(head, body: body)
                case .tooLarge: reply = .json(.payloadTooLarge, ["ok": .bool(false), "error": .string("The request is too large.")])
                }
                // To SetupRequestReader, which writes it and closes the connection.
                channel.writeAndFlush(reply, promise: nil)
                return
            }
        } onCancel: {
            channel.close(promise: nil)
        }
    }

    struct Reply: Sendable {
        var status: HTTPResponseStatus
        var type: String
        var body: [UInt8]
        var headers: [(String, String)] = []

        static func json(_ status: HTTPResponseStatus, _ members: [String: JSONValue], headers: [(String, String)] = []) -> Reply {
            Reply(status: status, type: "application/json", body: Array((JSONValue.object(members).asciiJSON() + "\n").utf8), headers: headers)
        }

        static func problem(_ problem: SetupProblem) -> Reply {
            json(HTTPResponseStatus(statusCode: problem.status), ["ok": .bool(false), "error": .string(problem.message)],
                 headers: problem.retryAfter.map { [("Retry-After", String($0))] } ?? [])
        }
    }

    func answer(_ head: HTTPRequestHead, body: [UInt8]) async -> Reply {
        let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
        switch (head.method, path) {
        case (.GET, "/"), (.HEAD, "/"), (.GET, "/index.html"):
            guard let page else { return Reply(status: .notFound, type: "text/plain; charset=utf-8", body: Array("The setup page is not installed (share/kiosk/setup.html).\n".utf8)) }
            return Reply(status: .ok, type: "text/html; charset=utf-8", body: head.method == .HEAD ? [] : page)
        case (.GET, "/api/setup"):
            return .json(.ok, ["set_up": .bool(desk.withLock { $0.done })])
        case (.POST, "/api/setup"):
            return await post(body)
        case (_, "/"), (_, "/api/setup"):
            return Reply(status: .methodNotAllowed, type: "text/plain; charset=utf-8", body: Array("Not allowed.\n".utf8))
        default:
            return Reply(status: .notFound, type: "text/plain; charset=utf-8", body: Array("Nothing here: the setup page is at /.\n".utf8))
        }
    }

    func post(_ body: [UInt8]) async -> Reply {
        guard let json = try? JSONValue(parsing: Data(body)) else { return .problem(SetupProblem("The request is not JSON.")) }
        let form: SetupForm
        switch SetupForm.parse(json) {
        case .success(let f): form = f
        case .failure(let problem):
            // A missing or malformed code counts as a wrong one: the desk decides.
            guard problem.status == 403 else { return .problem(problem) }
            form = SetupForm(code: "", clientID: "", clientKey: "")
        }
        let admission = desk.withLock { $0.admit(form.code, now: Self.now()) }
        if case .tooMany(_, let code?) = admission {
            logger.warning("setup: \(SetupDesk.triesPerCode) wrong codes in a row; a new code is said and shown")
            newCode(code)
        }
        if let refusal = SetupProblem.refused(admission) { return .problem(refusal) }
        guard !form.clientID.isEmpty else {
            if case .failure(let problem) = SetupForm.parse(json) { return .problem(problem) }
            return .problem(SetupProblem("The form is incomplete."))
        }
        guard !busy.exchange(true, ordering: .acquiring) else {
            return .problem(SetupProblem("The speaker is checking another form; try again in a moment.", status: 409))
        }
        defer { busy.store(false, ordering: .releasing) }
        if let problem = await submit(form) { return .problem(problem) }
        desk.withLock { $0.finish() }
        return .json(.ok, ["ok": .bool(true), "message": .string("The speaker is set up. Press its button, or say \"OK Hound\", and ask it something.")])
    }

    static func now() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

}

/// Reads a connection's one request whole and hands it to `SetupServer.run`; writes the reply that comes back down
/// the pipeline with the page's headers, then closes the connection.
final class SetupRequestReader: ChannelDuplexHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = SetupServer.Reply
    typealias OutboundOut = HTTPServerResponsePart

    private let arrived: AsyncStream<SetupServer.Request>.Continuation
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    /// One request per connection: what comes after it (or after a body too large) is not read.
    private var handedOver = false

    init(arrived: AsyncStream<SetupServer.Request>.Continuation) {
        self.arrived = arrived
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !handedOver else { return }
        switch unwrapInboundIn(data) {
        case .head(let h):
            head = h
        case .body(let chunk):
            guard body.count + chunk.readableBytes <= SetupServer.largestBody else { return handOver(.tooLarge) }
            body += chunk.readableBytesView
        case .end:
            guard let head else { return }
            handOver(.whole(head, body: body))
        }
    }

    /// A connection that sends nothing for the read timeout before its request is whole is closed; not once it is:
    /// the phone is waiting for the answer (the credentials' check with Houndify may outlast the timeout).
    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent {
            if !handedOver { context.close(promise: nil) }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    private func handOver(_ request: SetupServer.Request) {
        handedOver = true
        arrived.yield(request)
        arrived.finish()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let reply = unwrapOutboundIn(data)
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: reply.type)
        headers.add(name: "Content-Length", value: String(reply.body.count))
        headers.add(name: "Connection", value: "close")
        headers.add(name: "Cache-Control", value: "no-store")
        // The page is its own: no frames of other pages, no scripts or requests elsewhere.
        headers.add(name: "X-Frame-Options", value: "DENY")
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: "Referrer-Policy", value: "no-referrer")
        headers.add(name: "Content-Security-Policy",
                    value: "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'")
        for (name, value) in reply.headers { headers.add(name: name, value: value) }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: reply.status, headers: headers))), promise: nil)
        if !reply.body.isEmpty { context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: reply.body)))), promise: nil) }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
        promise?.succeed()
    }
}
