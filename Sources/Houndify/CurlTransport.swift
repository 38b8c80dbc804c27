import FoundationEssentials
import Glibc
import Platform
import CCurl
import CShims
import Synchronization

/// One HTTP request as the Houndify client needs it: an upload that is either known in advance (text) or written
/// while it is captured (voice), and a response read as it arrives, concurrently with the upload.
struct HTTPRequestSpec: Sendable {
    var url: String
    var headers: [String]
    /// The body's length, for a fixed upload; nil means chunked (streamed).
    var contentLength: Int?
    var connectTimeoutMS: Int
    /// How long the answer may take once the upload has ended, and how long an upload may stall.
    var responseTimeoutMS: Int
}

/// What the transport reports to its owner. Called on the transport's thread; must not block.
protocol HTTPTransferDelegate: AnyObject, Sendable {
    /// Response body bytes with HTTP status 200 (de-chunked, in arbitrary pieces).
    func transferReceived(_ bytes: UnsafeRawBufferPointer)
    /// The transfer ended. `status` is 0 if no response header arrived; `body` is the body of a non-200 response.
    func transferCompleted(_ outcome: HTTPTransferOutcome)
}

enum HTTPTransferOutcome: Sendable {
    case finished(status: Int, errorBody: [UInt8])
    case failed(HoundifyError, status: Int, errorBody: [UInt8])
}

/// The upload side of a transfer, shared between the producer (any thread) and libcurl's read callback.
struct UploadQueue: ~Copyable {
    var chunks: [[UInt8]] = []
    var offsetInFirst = 0
    var ended = false
    var cancelled = false
    var bytesQueued = 0
    /// When the queue last went from empty to holding audio (a stalled upload is timed from the later of this and
    /// the last time libcurl took some).
    var queuedSince: ContinuousClock.Instant = .now
    /// Chunks already handed to libcurl, kept until the response starts so that a request sent on a cached
    /// connection the server had closed meanwhile can be replayed on a new one (libcurl rewinds through the
    /// seek callback). Dropped once the first response byte arrives, or past `replayLimit`.
    var sent: [[UInt8]] = []
    var sentBytes = 0
    var replayable = true
    static let replayLimit = 1 << 20
}

/// A transfer: thread-confined state lives in fields touched only by the worker thread; the upload queue is
/// behind a Mutex because producers write it from their own threads.
/// @unchecked: it owns a libcurl easy handle (a C handle) and its lists, touched only by CurlWorker's thread.
final class HTTPTransfer: @unchecked Sendable {
    let spec: HTTPRequestSpec
    let upload: Mutex<UploadQueue>
    weak var delegate: (any HTTPTransferDelegate)?
    private let strongDelegate: Mutex<(any HTTPTransferDelegate)?>

    // Worker-thread state (see CurlWorker).
    var easy: UnsafeMutableRawPointer?
    var headerList: UnsafeMutablePointer<curl_slist>?
    /// libcurl writes its message here while the handle lives, so it must not move: allocated, not an array.
    let errorBuffer: UnsafeMutablePointer<CChar> = {
        let p = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        p.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        return p
    }()
    deinit { errorBuffer.deallocate() }
    var status = 0
    var errorBody: [UInt8] = []
    var paused = false
    var uploadEndedAt: ContinuousClock.Instant?
    var lastReceivedAt: ContinuousClock.Instant?
    /// When libcurl last took upload bytes (or the transfer started).
    var lastSentAt: ContinuousClock.Instant = .now
    var done = false
    fileprivate weak var worker: CurlWorker?

    init(spec: HTTPRequestSpec, initialChunks: [[UInt8]], endsUpload: Bool, delegate: any HTTPTransferDelegate) {
        self.spec = spec
        var queue = UploadQueue()
        queue.chunks = initialChunks
        queue.bytesQueued = initialChunks.reduce(0) { $0 + $1.count }
        queue.ended = endsUpload
        upload = Mutex(queue)
        self.delegate = delegate
        // The transfer keeps its delegate alive until it completes.
        strongDelegate = Mutex(delegate)
    }

    /// Queues upload chunks (from any thread). Returns false if the upload has already ended.
    @discardableResult
    func append(_ chunks: [[UInt8]], end: Bool = false) -> Bool {
        let accepted = upload.withLock { q -> Bool in
            guard !q.ended && !q.cancelled else { return false }
            if q.chunks.isEmpty && chunks.contains(where: { !$0.isEmpty }) { q.queuedSince = .now }
            for chunk in chunks where !chunk.isEmpty {
                q.chunks.append(chunk)
                q.bytesQueued += chunk.count
            }
            if end { q.ended = true }
            return true
        }
        if accepted { worker?.wake() }
        return accepted
    }

    /// Ends the upload (the terminating zero-length chunk follows what is queued).
    func endUpload() {
        let changed = upload.withLock { q -> Bool in
            guard !q.ended else { return false }
            q.ended = true
            return true
        }
        if changed { worker?.wake() }
    }

    /// Aborts the transfer at once; the delegate hears `.cancelled`.
    func cancel() {
        upload.withLock { $0.cancelled = true }
        worker?.wake()
    }

    var isUploadEnded: Bool { upload.withLock { $0.ended } }

    func releaseDelegate() -> (any HTTPTransferDelegate)? {
        strongDelegate.withLock { d in
            defer { d = nil }
            return d
        }
    }
}

/// Runs libcurl's multi interface on one thread the app owns: every blocking network call happens there,
/// never on Swift's cooperative pool. Connections are cached by the multi handle, so a second query to the
/// same endpoint skips the TCP and TLS handshakes.
/// @unchecked: it owns libcurl's multi handle (a C handle), touched only by its own thread; the inbox is a Mutex.
final class CurlWorker: @unchecked Sendable {
    static let shared = CurlWorker()

    private let multi: UnsafeMutableRawPointer
    private let inbox = Mutex<[HTTPTransfer]>([])
    // Worker-thread state.
    private var active: [HTTPTransfer] = []

    private init() {
        CurlGlobal.ensure()
        guard let m = curl_multi_init() else { fatalError("curl_multi_init failed: libcurl is unusable") }
        multi = m
        OwnedThread.start(name: "hs-curl") { [unowned self] in self.run() }
    }

    func submit(_ transfer: HTTPTransfer) {
        transfer.worker = self
        inbox.withLock { $0.append(transfer) }
        wake()
    }

    func wake() { curl_multi_wakeup(multi) }

    private func run() {
        while true {
            for transfer in inbox.withLock({ box -> [HTTPTransfer] in defer { box.removeAll() }; return box }) {
                start(transfer)
            }
            let now = ContinuousClock.now
            var nextDeadline: ContinuousClock.Instant? = nil
            for transfer in active where !transfer.done {
                let (cancelled, hasData, ended, queuedSince) = transfer.upload.withLock { ($0.cancelled, !$0.chunks.isEmpty, $0.ended, $0.queuedSince) }
                if cancelled {
                    complete(transfer, .failed(.cancelled, status: transfer.status, errorBody: transfer.errorBody))
                    continue
                }
                if transfer.paused && (hasData || ended) {
                    transfer.paused = false
                    curl_easy_pause(transfer.easy, CURLPAUSE_CONT)
                }
                let limit = Duration.milliseconds(transfer.spec.responseTimeoutMS)
                let seconds = Double(transfer.spec.responseTimeoutMS) / 1000
                let url = transfer.spec.url.prefix(while: { $0 != "?" })
                if let ended = transfer.uploadEndedAt {
                    // A hard deadline from the end of the question: a server that trickles a byte, or a partial
                    // transcript, every few seconds must not keep the person waiting for ever.
                    let deadline = ended + limit
                    if now >= deadline {
                        complete(transfer, .failed(.connectionTimeout(detail: "no answer from \(url) within \(seconds) s"),
                                                   status: transfer.status, errorBody: transfer.errorBody))
                        continue
                    }
                    nextDeadline = min(nextDeadline ?? deadline, deadline)
                } else if hasData {
                    let stalled = max(transfer.lastSentAt, queuedSince)
                    // Audio is waiting and the server has taken none of it for the whole response timeout: it
                    // has stopped reading the upload.
                    let deadline = stalled + limit
                    if now >= deadline {
                        complete(transfer, .failed(.connectionTimeout(detail: "no answer from \(url): it stopped reading the audio for \(seconds) s"),
                                                   status: transfer.status, errorBody: transfer.errorBody))
                        continue
                    }
                    nextDeadline = min(nextDeadline ?? deadline, deadline)
                }
            }
            active.removeAll { $0.done }

            var running: Int32 = 0
            curl_multi_perform(multi, &running)
            var remaining: Int32 = 0
            while let message = curl_multi_info_read(multi, &remaining) {
                guard message.pointee.msg == CURLMSG_DONE,
                      let transfer = active.first(where: { $0.easy == message.pointee.easy_handle }) else { continue }
                finished(transfer, code: message.pointee.data.result)
            }
            active.removeAll { $0.done }

            var timeoutMS: Int32 = active.isEmpty ? 5_000 : 100
            if let deadline = nextDeadline {
                let left = ContinuousClock.now.duration(to: deadline)
                let ms = max(1, Int32(clamping: left.components.seconds * 1000 + Int64(left.components.attoseconds / 1_000_000_000_000_000)))
                timeoutMS = min(timeoutMS, ms)
            }
            curl_multi_poll(multi, nil, 0, timeoutMS, nil)
        }
    }

    private func start(_ transfer: HTTPTransfer) {
        guard let easy = curl_easy_init() else {
            transfer.done = true
            transfer.releaseDelegate()?.transferCompleted(.failed(.internalError(detail: "curl_easy_init failed"), status: 0, errorBody: []))
            return
        }
        transfer.easy = easy
        transfer.lastSentAt = .now
        let me = Unmanaged.passUnretained(transfer).toOpaque()
        let spec = transfer.spec
        hs_curl_setopt_string(easy, CURLOPT_URL, spec.url)
        hs_curl_setopt_long(easy, CURLOPT_POST, 1)
        hs_curl_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        // The SDKs speak HTTP/1.1; a streamed upload uses its chunked encoding.
        hs_curl_setopt_long(easy, CURLOPT_HTTP_VERSION, Int(CURL_HTTP_VERSION_1_1))
        hs_curl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, spec.connectTimeoutMS)
        hs_curl_setopt_long(easy, CURLOPT_TCP_KEEPALIVE, 1)
        hs_curl_setopt_string(easy, CURLOPT_USERAGENT, "\(HoundifySDK.name)/\(HoundifySDK.version)")
        hs_curl_setopt_pointer(easy, CURLOPT_ERRORBUFFER, transfer.errorBuffer)
        if let length = spec.contentLength {
            hs_curl_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(length))
        } else {
            hs_curl_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, -1)
        }
        var list: UnsafeMutablePointer<curl_slist>? = nil
        var headers = spec.headers
        // No Content-Type (the Python SDK sends none); an empty Expect: so curl does not wait up to a second
        // for "100 Continue" before sending any audio.
        headers += ["Content-Type:", "Expect:"]
        if spec.contentLength == nil { headers.append("Transfer-Encoding: chunked") }
        for header in headers { list = curl_slist_append(list, header) }
        transfer.headerList = list
        hs_curl_setopt_slist(easy, CURLOPT_HTTPHEADER, list)
        hs_curl_setopt_callback(easy, CURLOPT_READFUNCTION, curlRead)
        hs_curl_setopt_pointer(easy, CURLOPT_READDATA, me)
        hs_curl_setopt_callback(easy, CURLOPT_WRITEFUNCTION, curlWrite)
        hs_curl_setopt_pointer(easy, CURLOPT_WRITEDATA, me)
        hs_curl_setopt_pointer(easy, CURLOPT_PRIVATE, me)
        hs_curl_setopt_seek(easy, curlSeek)
        hs_curl_setopt_pointer(easy, CURLOPT_SEEKDATA, me)
        active.append(transfer)
        curl_multi_add_handle(multi, easy)
    }

    private func finished(_ transfer: HTTPTransfer, code: CURLcode) {
        if transfer.status == 0, let easy = transfer.easy {
            // An answer with no body (an empty 401, 503 or redirect) never reaches the write callback, where the
            // status is otherwise read: without this it was reported as "HTTP 0".
            var status = 0
            hs_curl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
            transfer.status = status
        }
        if code == CURLE_OK {
            complete(transfer, .finished(status: transfer.status, errorBody: transfer.errorBody))
            return
        }
        let message = String(cString: transfer.errorBuffer)
        let detail = message.isEmpty ? String(cString: curl_easy_strerror(code)) : message
        let error: HoundifyError
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_COULDNT_CONNECT, CURLE_SSL_CONNECT_ERROR,
             CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CIPHER,
             CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_CRL_BADFILE, CURLE_USE_SSL_FAILED,
             CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
            error = .connectionFailure(detail: detail)
        case CURLE_OPERATION_TIMEDOUT:
            error = .connectionTimeout(detail: detail)
        case CURLE_GOT_NOTHING:
            error = .noResponseReceived(detail: "the server closed the connection without answering")
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_PARTIAL_FILE, CURLE_WEIRD_SERVER_REPLY, CURLE_HTTP2, CURLE_HTTP2_STREAM:
            error = .noResponseReceived(detail: detail)
        default:
            error = .internalError(detail: "libcurl: \(detail)")
        }
        complete(transfer, .failed(error, status: transfer.status, errorBody: transfer.errorBody))
    }

    private func complete(_ transfer: HTTPTransfer, _ outcome: HTTPTransferOutcome) {
        guard !transfer.done else { return }
        transfer.done = true
        transfer.upload.withLock { $0.ended = true }
        if let easy = transfer.easy {
            curl_multi_remove_handle(multi, easy)
            curl_easy_cleanup(easy)
            transfer.easy = nil
        }
        curl_slist_free_all(transfer.headerList)
        transfer.headerList = nil
        transfer.releaseDelegate()?.transferCompleted(outcome)
    }

    /// libcurl's read callback: hands over one queued chunk (so each write becomes one HTTP chunk, as the
    /// SDK's fill() does), pauses the upload when the queue is empty, ends it when the producer said so.
    fileprivate static func read(_ transfer: HTTPTransfer, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        enum Step { case data(Int, last: Bool), pause, end, abort }
        let step = transfer.upload.withLock { q -> Step in
            if q.cancelled { return .abort }
            guard !q.chunks.isEmpty else { return q.ended ? .end : .pause }
            let chunk = q.chunks[0]
            if q.offsetInFirst == 0 && q.replayable {
                q.sent.append(chunk)
                q.sentBytes += chunk.count
                if q.sentBytes > UploadQueue.replayLimit {
                    q.replayable = false
                    q.sent = []
                }
            }
            let n = min(buffer.count, chunk.count - q.offsetInFirst)
            chunk.withUnsafeBytes { src in
                buffer.baseAddress!.copyMemory(from: src.baseAddress! + q.offsetInFirst, byteCount: n)
            }
            q.offsetInFirst += n
            if q.offsetInFirst == chunk.count {
                q.chunks.removeFirst()
                q.offsetInFirst = 0
            }
            return .data(n, last: q.ended && q.chunks.isEmpty)
        }
        switch step {
        case .data(let n, let last):
            transfer.lastSentAt = .now
            // A fixed-length body is never asked for more once its last byte is out: its end is now.
            if last && transfer.uploadEndedAt == nil { transfer.uploadEndedAt = .now }
            return n
        case .pause:
            transfer.paused = true
            return hs_curl_readfunc_pause()
        case .end:
            if transfer.uploadEndedAt == nil { transfer.uploadEndedAt = .now }
            return 0
        case .abort: return hs_curl_readfunc_abort()
        }
    }

    /// libcurl's seek callback: only a rewind to the start is ever asked for (a retry on a fresh connection).
    fileprivate static func seek(_ transfer: HTTPTransfer, offset: Int64, origin: Int32) -> Int32 {
        guard offset == 0, origin == SEEK_SET else { return CURL_SEEKFUNC_CANTSEEK }
        return transfer.upload.withLock { q -> Int32 in
            guard q.replayable else { return CURL_SEEKFUNC_CANTSEEK }
            if q.offsetInFirst > 0 { q.chunks.removeFirst(); q.offsetInFirst = 0 }
            q.chunks.insert(contentsOf: q.sent, at: 0)
            q.sent = []
            q.sentBytes = 0
            return CURL_SEEKFUNC_OK
        }
    }

    fileprivate static func write(_ transfer: HTTPTransfer, _ bytes: UnsafeRawBufferPointer) -> Int {
        if transfer.lastReceivedAt == nil {
            // The server has answered: no replay will be needed.
            transfer.upload.withLock { q in
                q.replayable = false
                q.sent = []
            }
        }
        transfer.lastReceivedAt = .now
        if transfer.status == 0, let easy = transfer.easy {
            var code = 0
            hs_curl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &code)
            transfer.status = code
            if code != 200 {
                // A refusal: there is no point in sending more audio.
                transfer.endUpload()
            }
        }
        if transfer.status == 200 {
            transfer.delegate?.transferReceived(bytes)
        } else if transfer.errorBody.count < 65_536 {
            transfer.errorBody.append(contentsOf: bytes.prefix(65_536 - transfer.errorBody.count))
        }
        return bytes.count
    }
}

private let curlRead: hs_curl_data_callback = { buffer, size, count, user in
    let transfer = Unmanaged<HTTPTransfer>.fromOpaque(user!).takeUnretainedValue()
    return CurlWorker.read(transfer, into: UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
}

private let curlSeek: hs_curl_seek_callback = { user, offset, origin in
    let transfer = Unmanaged<HTTPTransfer>.fromOpaque(user!).takeUnretainedValue()
    return CurlWorker.seek(transfer, offset: Int64(offset), origin: origin)
}

private let curlWrite: hs_curl_data_callback = { buffer, size, count, user in
    let transfer = Unmanaged<HTTPTransfer>.fromOpaque(user!).takeUnretainedValue()
    return CurlWorker.write(transfer, UnsafeRawBufferPointer(start: buffer, count: size * count))
}

extension CurlWorker {
    /// libcurl's version line, for `doctor`.
    static var versionDescription: String { String(cString: curl_version()) }
}
