import CCurl
import CShims
import FoundationEssentials
import Glibc
import Platform

/// Can the speaker reach the Houndify endpoint? One HEAD request over libcurl, told apart by where it stopped: the
/// name did not resolve (DNS), nothing accepted the TCP connection, the TLS handshake failed (often a clock far
/// off, or no CA certificates), or an HTTP answer came back (any status: the service is there). For `doctor`.
public struct EndpointProbe: Sendable, Equatable {
    public enum Outcome: String, Sendable, Equatable {
        case reached, dnsFailed, connectFailed, tlsFailed, noHTTPAnswer, badURL
    }

    public var outcome: Outcome
    public var url: String
    /// The HTTP status when reached.
    public var httpStatus = 0
    /// libcurl's own words for a failure.
    public var detail = ""
    /// Milliseconds from the start to: the name resolved, TCP connected, TLS done (nil: that step did not finish).
    public var dnsMS: Int?
    public var connectMS: Int?
    public var tlsMS: Int?

    /// Probes on a thread of its own: the blocking transfer must not hold a thread of Swift's cooperative pool.
    public static func run(endpoint: String, timeoutMS: Int) async -> EndpointProbe {
        await withCheckedContinuation { continuation in
            OwnedThread.start(name: "hs-probe") { continuation.resume(returning: runBlocking(endpoint: endpoint, timeoutMS: timeoutMS)) }
        }
    }

    static func runBlocking(endpoint: String, timeoutMS: Int) -> EndpointProbe {
        CurlGlobal.ensure()
        var probe = EndpointProbe(outcome: .noHTTPAnswer, url: endpoint)
        guard let easy = curl_easy_init() else {
            probe.detail = "curl_easy_init failed"
            return probe
        }
        defer { curl_easy_cleanup(easy) }
        let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        defer { errorBuffer.deallocate() }
        hs_curl_setopt_string(easy, CURLOPT_URL, endpoint)
        hs_curl_setopt_long(easy, CURLOPT_NOBODY, 1)  // HEAD: the answer's existence is the point, not its body
        hs_curl_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
        hs_curl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, timeoutMS)
        hs_curl_setopt_long(easy, CURLOPT_TIMEOUT_MS, timeoutMS)
        hs_curl_setopt_string(easy, CURLOPT_USERAGENT, "\(HoundifySDK.name)/\(HoundifySDK.version) doctor")
        hs_curl_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer)
        let code = curl_easy_perform(easy)

        func milliseconds(_ info: CURLINFO) -> Int? {
            var usec: curl_off_t = 0
            guard hs_curl_getinfo_off(easy, info, &usec) == CURLE_OK, usec > 0 else { return nil }
            return Int((usec + 999) / 1000)
        }
        probe.dnsMS = milliseconds(CURLINFO_NAMELOOKUP_TIME_T)
        probe.connectMS = milliseconds(CURLINFO_CONNECT_TIME_T)
        probe.tlsMS = endpoint.lowercased().hasPrefix("https://") ? milliseconds(CURLINFO_APPCONNECT_TIME_T) : nil
        var status = 0
        hs_curl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
        probe.httpStatus = status
        let message = String(cString: errorBuffer)
        probe.detail = message.isEmpty ? String(cString: curl_easy_strerror(code)) : message

        switch code {
        case CURLE_OK:
            probe.outcome = .reached
            probe.detail = ""
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            probe.outcome = .dnsFailed
        case CURLE_COULDNT_CONNECT:
            probe.outcome = .connectFailed
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CACERT_BADFILE,
             CURLE_SSL_CIPHER, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_CRL_BADFILE,
             CURLE_USE_SSL_FAILED, CURLE_SSL_INVALIDCERTSTATUS:
            probe.outcome = .tlsFailed
        case CURLE_URL_MALFORMAT, CURLE_UNSUPPORTED_PROTOCOL:
            probe.outcome = .badURL
        case CURLE_OPERATION_TIMEDOUT:
            // Where the time ran out says which step failed.
            if probe.dnsMS == nil { probe.outcome = .dnsFailed }
            else if probe.connectMS == nil { probe.outcome = .connectFailed }
            else if endpoint.lowercased().hasPrefix("https://") && probe.tlsMS == nil { probe.outcome = .tlsFailed }
            else { probe.outcome = .noHTTPAnswer }
        default:
            probe.outcome = status > 0 ? .reached : .noHTTPAnswer
        }
        return probe
    }
}
