import CCurl
import CShims

/// libcurl's process-wide set-up, done once for every user in this module (the Houndify client's worker, the
/// endpoint probe, the local POST below): libcurl counts the calls, but one place means one set of options.
enum CurlGlobal {
    private static let initialised: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()
    static func ensure() { _ = initialised }
}

/// One blocking POST to a service on this machine (the speaker's own control API, for `hound-speaker ctl`) or on
/// the LAN (Home Assistant's conversation API), so that neither side needs a C module of its own. Run it on a
/// thread the caller owns.
public enum LocalHTTP {
    public struct Problem: Error, Sendable, CustomStringConvertible {
        public var description: String
        /// What went wrong, for a caller that tells "can't reach it" from "it took too long".
        public var kind: Kind = .other

        public enum Kind: Sendable, Equatable {
            /// The host's name did not resolve.
            case unresolved
            /// No connection: refused, unreachable, or not made within the connect timeout.
            case unconnected
            /// Connected, but the answer did not come within the whole timeout.
            case timedOut
            /// TLS failed: the certificate was not trusted, or the handshake failed.
            case tls
            case other
        }
    }

    /// POSTs `body` to `url` with `headers` ("Name: value"); the HTTP status and the body, or libcurl's reason.
    /// Without `useProxy`, never through a proxy: a service on this machine is its own, and `http_proxy`,
    /// `HTTP_PROXY` or `all_proxy` would otherwise get the request and its token (libcurl sends even 127.0.0.1
    /// through one: checked with 7.88, Debian 12). With it, the environment's proxy and `no_proxy` are libcurl's to
    /// apply, as for the Houndify client. `timeoutMS` bounds the whole exchange, `connectTimeoutMS` the connection.
    public static func post(url: String, body: [UInt8], headers: [String], connectTimeoutMS: Int,
                            timeoutMS: Int, useProxy: Bool = false) -> Result<(status: Int, body: [UInt8]), Problem> {
        CurlGlobal.ensure()
        guard let easy = curl_easy_init() else { return .failure(Problem(description: "curl_easy_init failed")) }
        defer { curl_easy_cleanup(easy) }
        var list: UnsafeMutablePointer<curl_slist>? = nil
        for header in headers { list = curl_slist_append(list, header) }
        defer { curl_slist_free_all(list) }
        let response = ResponseBody()
        let unmanaged = Unmanaged.passRetained(response)
        defer { unmanaged.release() }
        hs_curl_setopt_string(easy, CURLOPT_URL, url)
        if !useProxy { hs_curl_setopt_string(easy, CURLOPT_PROXY, "") }  // "" turns the environment's proxy off
        hs_curl_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        hs_curl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, connectTimeoutMS)
        hs_curl_setopt_long(easy, CURLOPT_TIMEOUT_MS, timeoutMS)
        hs_curl_setopt_slist(easy, CURLOPT_HTTPHEADER, list)
        hs_curl_setopt_long(easy, CURLOPT_POSTFIELDSIZE, body.count)
        hs_curl_setopt_callback(easy, CURLOPT_WRITEFUNCTION) { buffer, size, count, user in
            guard let buffer, let user else { return 0 }
            Unmanaged<ResponseBody>.fromOpaque(user).takeUnretainedValue().bytes += UnsafeRawBufferPointer(start: buffer, count: size * count)
            return size * count
        }
        hs_curl_setopt_pointer(easy, CURLOPT_WRITEDATA, unmanaged.toOpaque())
        let code = body.withUnsafeBufferPointer { bytes in
            // COPYPOSTFIELDS: libcurl keeps its own copy, so the buffer need only outlive this call.
            hs_curl_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            return curl_easy_perform(easy)
        }
        guard code == CURLE_OK else {
            return .failure(Problem(description: String(cString: curl_easy_strerror(code)), kind: kind(of: code, easy)))
        }
        var status = 0
        hs_curl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        return .success((status, response.bytes))
    }

    private final class ResponseBody { var bytes: [UInt8] = [] }

    private static func kind(of code: CURLcode, _ easy: UnsafeMutableRawPointer) -> Problem.Kind {
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: return .unresolved
        case CURLE_COULDNT_CONNECT: return .unconnected
        case CURLE_OPERATION_TIMEDOUT:
            // One code for both timeouts: a connection that was made (its time is known) timed out waiting.
            var connected: curl_off_t = 0
            hs_curl_getinfo_off(easy, CURLINFO_CONNECT_TIME_T, &connected)
            return connected > 0 ? .timedOut : .unconnected
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM:
            return .tls
        default: return .other
        }
    }
}
