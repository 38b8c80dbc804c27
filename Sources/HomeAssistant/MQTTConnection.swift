import CMosquitto
import Glibc
public import BoardCore
import Platform
import Synchronization

/// An MQTT client connection through libmosquitto, on a thread of its own that waits in poll(2) on the broker's
/// socket and a wake-up pipe (libmosquitto's external-loop calls: no thread of libmosquitto's own, and no CPU while
/// nothing happens but the keep-alive). Every libmosquitto call is made on that thread; others only `wake` it.
/// A broker that cannot be reached, refuses the login or goes away is tried again with back-off, for ever.
public final class MQTTConnection: Sendable {
    public struct Settings: Sendable {
        public var host: String
        public var port: Int
        public var tls: Bool
        public var username: String
        /// Given to libmosquitto only; never in a log line or an event.
        public var password: String
        public var clientID: String
        /// The last will: published by the broker, retained, if the connection is lost without a goodbye.
        public var will: (topic: String, payload: String)?
        /// Seconds between keep-alive pings when nothing else is sent; the broker drops the client (and sends the
        /// will) after 1.5 times it without a word.
        public var keepAlive: Int = 30
        /// The back-off after a failed connection, doubling up to its maximum.
        public var backoff = DeviceOutage(first: .seconds(1), maximum: .seconds(60))

        public init(host: String, port: Int, tls: Bool, username: String, password: String, clientID: String,
                    will: (topic: String, payload: String)?) {
            self.host = host
            self.port = port
            self.tls = tls
            self.username = username
            self.password = password
            self.clientID = clientID
            self.will = will
        }

        /// Where, as the log says it (no user, no password).
        public var address: String { "\(tls ? "mqtts" : "mqtt")://\(host.contains(":") ? "[\(host)]" : host):\(port)" }
    }

    /// What happened, told on the connection's thread.
    public enum Event: Sendable, Equatable {
        /// The broker accepted the login: subscribe and publish everything now.
        case connected
        /// The broker answered the login with a refusal (its words); tried again after the back-off. `beginsOutage`:
        /// the first failure since the last success.
        case refused(String, beginsOutage: Bool, retryIn: Duration)
        /// The broker could not be reached, or the connection was lost (why); `beginsOutage` for the first failure
        /// since the last success (the one to log), and when the next try is.
        case unreachable(String, beginsOutage: Bool, retryIn: Duration)
        /// A message on a subscribed topic.
        case message(topic: String, payload: [UInt8])
        /// `wake()` was called: whoever called it has something to publish.
        case woken
    }

    /// The calls a handler may make while it handles an event: on the connection's thread, during that call only.
    public struct Session {
        fileprivate let mosq: OpaquePointer?
        /// Queues a message; false (and nothing sent) when the connection is not up.
        @discardableResult
        public func publish(_ topic: String, _ payload: String, retain: Bool, qos: Int32 = 1) -> Bool {
            guard let mosq else { return false }
            let bytes = Array(payload.utf8)
            return bytes.withUnsafeBytes { raw in
                mosquitto_publish(mosq, nil, topic, Int32(bytes.count), raw.baseAddress, qos, retain) == Int32(MOSQ_ERR_SUCCESS.rawValue)
            }
        }

        @discardableResult
        public func subscribe(_ topic: String, qos: Int32 = 1) -> Bool {
            guard let mosq else { return false }
            return mosquitto_subscribe(mosq, nil, topic, qos) == Int32(MOSQ_ERR_SUCCESS.rawValue)
        }
    }

    private struct Control {
        var stop = false
        var started = false
        var ended = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    public let settings: Settings
    private let handler: @Sendable (Event, Session) -> Void
    private let control = Mutex(Control())
    private let wakeRead: Int32
    private let wakeWrite: Int32

    /// `handler` is called on the connection's thread for every event, with the calls it may make.
    public init(settings: Settings, handler: @escaping @Sendable (Event, Session) -> Void) throws(MQTTError) {
        var fds: [Int32] = [0, 0]
        guard SpawnActions.pipeCloseOnExec(&fds) == 0 else { throw MQTTError("cannot make the MQTT thread's wake-up pipe: \(String(cString: strerror(errno)))") }
        for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        wakeRead = fds[0]
        wakeWrite = fds[1]
        self.settings = settings
        self.handler = handler
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    /// Starts the thread (once); it connects at once.
    public func start() throws(MQTTError) {
        let first = control.withLock { c in
            defer { c.started = true }
            return !c.started
        }
        guard first else { return }
        if let problem = OwnedThread.tryStart(name: "mqtt", { [self] in run() }) {
            control.withLock { $0.ended = true }
            throw MQTTError("cannot start the MQTT thread: \(problem)")
        }
    }

    /// Asks the thread to hand `woken` to the handler as soon as it can. From any thread; never waits.
    public func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    /// Says goodbye to the broker (after the handler's last messages) and ends the thread. Returns when it has
    /// ended, or after `timeout` (a connect under way to a host that does not answer can take longer: the thread
    /// then ends on its own, and nothing else waits for it).
    public func stop(timeout: Duration = .seconds(3)) async {
        let waitNeeded = control.withLock { c in
            c.stop = true
            return c.started && !c.ended
        }
        wake()
        guard waitNeeded else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await withCheckedContinuation { continuation in
                    let done = self.control.withLock { c in
                        if c.ended { return true }
                        c.waiting.append(continuation)
                        return false
                    }
                    if done { continuation.resume() }
                }
            }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
    }

    private var stopping: Bool { control.withLock { $0.stop } }

    // MARK: The thread

    fileprivate final class Context: @unchecked Sendable {
        // Only touched on the connection's thread (libmosquitto calls back from inside its calls there).
        let connection: MQTTConnection
        var mosq: OpaquePointer?
        var connected = false
        var refused: String?
        /// libmosquitto's last error line (OpenSSL's reason for a TLS failure), for the reason told.
        var libraryError: String?
        init(_ connection: MQTTConnection) { self.connection = connection }

        func connectAnswered(_ rc: Int32) {
            if rc == 0 {
                connected = true
                connection.handler(.connected, Session(mosq: mosq))
            } else {
                refused = String(cString: mosquitto_connack_string(rc))
            }
        }
    }

    private func run() {
        defer {
            let waiting = control.withLock { c in
                c.ended = true
                defer { c.waiting = [] }
                return c.waiting
            }
            for w in waiting { w.resume() }
        }
        MQTTLibrary.initialise()
        let context = Context(self)
        guard let mosq = mosquitto_new(settings.clientID, true, Unmanaged.passUnretained(context).toOpaque()) else {
            handler(.unreachable("libmosquitto could not make a client: \(String(cString: strerror(errno)))", beginsOutage: true, retryIn: .zero),
                    Session(mosq: nil))
            return
        }
        context.mosq = mosq
        defer { mosquitto_destroy(mosq) }
        _ = mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311)
        if !settings.username.isEmpty {
            _ = mosquitto_username_pw_set(mosq, settings.username, settings.password.isEmpty ? nil : settings.password)
        }
        if let will = settings.will {
            let bytes = Array(will.payload.utf8)
            _ = bytes.withUnsafeBytes { mosquitto_will_set(mosq, will.topic, Int32(bytes.count), $0.baseAddress, 1, true) }
        }
        if settings.tls {
            _ = mosquitto_tls_set(mosq, nil, "/etc/ssl/certs", nil, nil, nil)
        }
        mosquitto_connect_callback_set(mosq) { _, raw, rc in
            let context = Unmanaged<Context>.fromOpaque(raw!).takeUnretainedValue()
            context.connectAnswered(rc)
        }
        mosquitto_message_callback_set(mosq) { _, raw, message in
            guard let raw, let message, let topic = message.pointee.topic else { return }
            let context = Unmanaged<Context>.fromOpaque(raw).takeUnretainedValue()
            let count = Int(max(0, message.pointee.payloadlen))
            let payload = count == 0 || message.pointee.payload == nil ? [] : Array(UnsafeRawBufferPointer(start: message.pointee.payload, count: count))
            context.connection.handler(.message(topic: String(cString: topic), payload: payload), Session(mosq: context.mosq!))
        }
        mosquitto_log_callback_set(mosq) { _, raw, level, line in
            guard let raw, let line, level & Int32(MOSQ_LOG_ERR) != 0 else { return }
            Unmanaged<Context>.fromOpaque(raw).takeUnretainedValue().libraryError = String(cString: line)
        }
        var backoff = settings.backoff
        while !stopping {
            context.refused = nil
            context.libraryError = nil
            let rc = mosquitto_connect(mosq, settings.host, Int32(settings.port), Int32(settings.keepAlive))
            var why: String
            if rc == Int32(MOSQ_ERR_SUCCESS.rawValue) {
                // libmosquitto's socket is not close-on-exec: a library that forks (espeak-ng's audio, ALSA's
                // plugins) would hand the broker's connection to its child.
                let fd = mosquitto_socket(mosq)
                if fd >= 0 { _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC) }
                let began = ContinuousClock.now
                why = session(mosq, context)
                if context.connected {
                    // A connection that drops at once (another client with the same id taking it over, a broker
                    // that closes it) is one outage, told once and tried less often, not a new one each second.
                    if ContinuousClock.now - began >= Self.steady { backoff = settings.backoff }
                    context.connected = false
                }
            } else {
                why = Self.describe(rc)
            }
            if stopping { break }
            if let detail = context.libraryError, why.contains("TLS") {
                why += " (\(detail)): the broker's certificate must name this host and be signed by an authority in /etc/ssl/certs"
            }
            let (begins, wait) = backoff.failed()
            if let refused = context.refused {
                handler(.refused(refused, beginsOutage: begins, retryIn: wait), Session(mosq: nil))
            } else {
                handler(.unreachable(why, beginsOutage: begins, retryIn: wait), Session(mosq: nil))
            }
            sleepUnlessWoken(for: wait, mosq: mosq)
        }
    }

    /// One connection, until it fails or `stop`: the reason it ended.
    private func session(_ mosq: OpaquePointer, _ context: Context) -> String {
        var goodbye = false
        while true {
            if stopping && !goodbye {
                goodbye = true
                if context.connected {
                    // A clean goodbye sends no will: say "offline" first, as the will would have.
                    if let will = settings.will { Session(mosq: mosq).publish(will.topic, will.payload, retain: true) }
                }
                mosquitto_disconnect(mosq)
            }
            let fd = mosquitto_socket(mosq)
            guard fd >= 0 else { return goodbye ? "stopped" : "the connection was closed" }
            var fds = [pollfd(fd: fd, events: Int16(POLLIN) | (mosquitto_want_write(mosq) ? Int16(POLLOUT) : 0), revents: 0),
                       pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            // A quarter of the keep-alive at most: libmosquitto pings (loop_misc) once that much has passed without
            // a message out, well before the broker's 1.5 times; a goodbye waits only for its last bytes to go out.
            let ready = poll(&fds, 2, goodbye ? 100 : Int32(max(1, settings.keepAlive) * 250))
            if ready < 0 && errno != EINTR { return "poll: \(String(cString: strerror(errno)))" }
            var woken = false
            if fds[1].revents & Int16(POLLIN) != 0 {
                drainWakeups()
                woken = true
            }
            if fds[0].revents & (Int16(POLLIN) | Int16(POLLHUP) | Int16(POLLERR)) != 0 {
                let rc = mosquitto_loop_read(mosq, 1)
                if rc != Int32(MOSQ_ERR_SUCCESS.rawValue) { return goodbye ? "stopped" : Self.describe(rc) }
            }
            if woken && context.connected && !goodbye { handler(.woken, Session(mosq: mosq)) }
            if mosquitto_want_write(mosq) {
                let rc = mosquitto_loop_write(mosq, 1)
                if rc != Int32(MOSQ_ERR_SUCCESS.rawValue) { return goodbye ? "stopped" : Self.describe(rc) }
            }
            let rc = mosquitto_loop_misc(mosq)
            if rc != Int32(MOSQ_ERR_SUCCESS.rawValue) { return goodbye ? "stopped" : Self.describe(rc) }
            if goodbye && !mosquitto_want_write(mosq) { return "stopped" }
        }
    }

    private func drainWakeups() {
        var buffer = [UInt8](repeating: 0, count: 64)
        while read(wakeRead, &buffer, buffer.count) > 0 {}
    }

    private func sleepUnlessWoken(for wait: Duration, mosq: OpaquePointer) {
        let deadline = ContinuousClock.now + wait
        while !stopping {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return }
            var fds = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            _ = poll(&fds, 1, Int32(min(left / .milliseconds(1), 60_000).rounded(.up)))
            // Woken while down: nothing to publish (everything is published again on connecting).
            if fds[0].revents & Int16(POLLIN) != 0 { drainWakeups() }
        }
    }

    /// How long a connection must have lasted for its loss to begin a new outage.
    static let steady = Duration.seconds(10)

    static func describe(_ rc: Int32) -> String {
        if rc == Int32(MOSQ_ERR_ERRNO.rawValue) { return String(cString: strerror(errno)) }
        var words = String(cString: mosquitto_strerror(rc))
        if words.hasSuffix(".") { words.removeLast() }
        return words
    }
}

/// libmosquitto's process-wide set-up, once.
enum MQTTLibrary {
    private static let done = Mutex(false)
    static func initialise() {
        done.withLock { done in
            guard !done else { return }
            done = true
            _ = mosquitto_lib_init()
        }
    }
}

public struct MQTTError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
