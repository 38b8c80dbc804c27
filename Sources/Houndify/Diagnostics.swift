import FoundationEssentials
import Glibc
public import Platform

/// The doctor's network and account checks, in the order a failure is best explained: the clock (Houndify signs
/// each request with the time, and TLS certificates have validity dates), the endpoint step by step, then one
/// signed query.
public enum HoundifyDiagnostics {
    /// The kernel's NTP state (adjtimex(2), what timedatectl's NTPSynchronized reports), with or without systemd: a
    /// Pi has no battery clock, and one never set breaks signing and TLS alike.
    public static func clock() -> Diagnostic {
        let state = KernelClock.state
        let message = switch state {
        case .synchronized(let esterror): "clock synchronized (estimated error \(esterror / 1000) ms)"
        case .unsynchronized: "clock not synchronized (kernel NTP state: unsynchronized)"
        case .unknown(let why): "clock: adjtimex failed (\(why))"
        }
        let synchronized = if case .synchronized = state { true } else { false }
        return .check(synchronized, message,
                      advice: "enable NTP: sudo timedatectl set-ntp true (systemd-timesyncd), and check the network; `timedatectl` shows the state")
    }

    /// DNS, TCP, TLS, then any HTTP answer from the endpoint, each step named when it is the one that fails.
    /// `reached` is true when the endpoint answered.
    public static func endpoint(_ endpoint: String, timeoutMS: Int) async -> (reached: Bool, diagnostic: Diagnostic) {
        let host = URL(string: endpoint)?.host ?? endpoint
        let probe = await EndpointProbe.run(endpoint: endpoint, timeoutMS: timeoutMS)
        let steps = [("DNS", probe.dnsMS), ("connect", probe.connectMS), ("TLS", probe.tlsMS)]
            .compactMap { name, ms in ms.map { "\(name) \($0) ms" } }.joined(separator: ", ")
        let failure: (String, String)
        switch probe.outcome {
        case .reached:
            return (true, .check(true, "Houndify endpoint \(endpoint) reached: HTTP \(probe.httpStatus)\(steps.isEmpty ? "" : " (\(steps))")"))
        case .dnsFailed:
            failure = ("DNS cannot resolve \(host) (\(probe.detail))",
                       "check the network and the DNS server (/etc/resolv.conf); `getent hosts \(host)` must print an address")
        case .connectFailed:
            failure = ("TCP connection failed (\(probe.detail))",
                       "\(host) resolved but nothing accepted the connection: no route, a firewall, or a wrong port in [houndify] endpoint")
        case .tlsFailed:
            failure = ("TLS failed (\(probe.detail))",
                       "a clock far off makes certificates look invalid (see the clock check); apt install ca-certificates; a proxy may be intercepting")
        case .noHTTPAnswer:
            failure = ("connected but no HTTP answer (\(probe.detail))",
                       "something between the speaker and \(host) (a proxy or captive portal?) is in the way: try `curl -I \(endpoint)`")
        case .badURL:
            failure = ("not a URL libcurl can use (\(probe.detail))", "set [houndify] endpoint to an https:// URL")
        }
        return (false, .check(false, "Houndify endpoint \(endpoint): \(failure.0)", advice: failure.1))
    }

    /// One signed text query ("what time is it"): the only way to know that Houndify accepts the client ID and key
    /// (a wrong key passes every other check). The caller's client keeps no conversation.
    public static func credentials(_ client: HoundifyClient) async -> Diagnostic {
        let started = ContinuousClock.now
        do {
            let response = try await client.textSearch("what time is it")
            let ms = Int((ContinuousClock.now - started) / .milliseconds(1))
            let said = response.best?.textToSpeak ?? ""
            return .check(true, "Houndify accepted the client ID and key: a signed query was answered in \(ms) ms"
                                + (said.isEmpty ? "" : " (\"\(HoundifyError.clip(said))\")"))
        } catch {
            switch error {
            case .authenticationFailed:
                return .check(false, "Houndify refused the client ID or key: \(error) [\(error.code)]",
                              advice: "copy both from the Houndify dashboard (the client's page) again; the key is 88 characters ending in =="
                                  + "; a clock that is far off is refused too (see the clock check)")
            default:
                return .check(false, "a signed query to Houndify failed: \(error) [\(error.code)]",
                              advice: "the endpoint answers but a search does not: check [houndify] endpoint, and `hound-speaker text \"what time is it\"` for the same error")
            }
        }
    }

    public static var libraryVersion: Diagnostic { Diagnostic(.info, "libcurl \(HoundifyClient.transportVersion)") }
}
