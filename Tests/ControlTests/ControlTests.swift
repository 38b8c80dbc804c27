@testable import Control
import AudioCore
import ControlCore
import FoundationEssentials
import Glibc
import JSONKit
import Logging
import NIOHTTP1
import Platform
import SpeakerCore
import SpeakerRuntime
import SpeakerTestKit
import Synchronization
import Testing
import Timers

@Suite struct ControlCommandTests {
    func parse(_ json: String) throws -> ControlCommand {
        try ControlCommand.parse(try JSONValue(parsing: Data(json.utf8)))
    }

    func problem(_ json: String) -> String {
        do { _ = try parse(json); return "" } catch { return "\(error)" }
    }

    @Test func everyCommandIsRead() throws {
        #expect(try parse(#"{"command":"listen"}"#) == .listen)
        #expect(try parse(#"{"command":"stop"}"#) == .stop)
        #expect(try parse(#"{"command":"text","query":"what time is it"}"#) == .text("what time is it"))
        #expect(try parse(#"{"command":"say","text":"Dinner is ready."}"#) == .say("Dinner is ready."))
        #expect(try parse(#"{"command":"mute"}"#) == .mute(true))
        #expect(try parse(#"{"command":"unmute"}"#) == .mute(false))
        #expect(try parse(#"{"command":"volume","percent":30}"#) == .volume(.to(30)))
        #expect(try parse(#"{"command":"volume","step":"down"}"#) == .volume(.step(up: false)))
        #expect(try parse(#"{"command":"volume","sound_off":true}"#) == .volume(.mute(true)))
        #expect(try parse(#"{"command":"timers"}"#) == .status)
        #expect(try parse(#"{"command":"cancel_timer","id":3}"#) == .cancelTimer(.id(3)))
        #expect(try parse(#"{"command":"cancel_timer","name":"pasta"}"#) == .cancelTimer(.named("pasta")))
        #expect(try parse(#"{"command":"cancel_alarm","all":true}"#) == .cancelAlarm(.all))
        #expect(try parse(#"{"command":"clear"}"#) == .clearConversation)
        #expect(try parse(#"{"command":"wake"}"#) == .wake)
        #expect(ControlCommand.text("hi").event == .textQuery("hi"))
        #expect(ControlCommand.stop.event == .cancel)
        #expect(try parse(#"{"command":"voices"}"#) == .voices)
        #expect(try parse(#"{"command":"forget","phrase":"hey kitchen"}"#) == .forget(phrase: "hey kitchen"))
        #expect(try parse(#"{"command":"forget","negatives":true}"#) == .forget(phrase: nil))
        #expect(try parse(#"{"command":"reload_household"}"#) == .reloadHousehold)
        #expect(ControlCommand.voices.event == nil && ControlCommand.forget(phrase: nil).event == nil)
        #expect(try parse(#"{"command":"enroll"}"#) == .enroll(phrase: nil))
        #expect(try parse(#"{"command":"enroll","phrase":null}"#) == .enroll(phrase: nil))
        #expect(try parse(#"{"command":"enroll","phrase":"hey kitchen"}"#) == .enroll(phrase: "hey kitchen"))
        #expect(ControlCommand.enroll(phrase: nil).event == nil)
    }

    @Test func badRequestsSayWhatIsWrong() {
        #expect(problem(#"["stop"]"#).contains("a request is a JSON object"))
        #expect(problem(#"{"cmd":"stop"}"#).contains("\"command\" is missing"))
        #expect(problem(#"{"command":"dance"}"#).contains("unknown command \"dance\""))
        #expect(problem(#"{"command":"dance"}"#).contains("listen, stop, text"))
        #expect(problem(#"{"command":"text"}"#).contains("\"text\" needs \"query\""))
        #expect(problem(#"{"command":"say","text":"  "}"#).contains("\"say\" needs \"text\""))
        #expect(problem(#"{"command":"volume","percent":130}"#).contains("0 to 100, not 130"))
        #expect(problem(#"{"command":"volume","step":"sideways"}"#).contains("\"up\" or \"down\""))
        #expect(problem(#"{"command":"volume"}"#).contains("needs \"percent\""))
        #expect(problem(#"{"command":"cancel_timer"}"#).contains("needs \"id\""))
        #expect(problem(#"{"command":"forget"}"#).contains("\"forget\" needs \"phrase\""))
        #expect(problem(#"{"command":"forget","phrase":" "}"#).contains("\"forget\" needs \"phrase\""))
        #expect(problem(#"{"command":"enroll","phrase":" "}"#).contains("\"phrase\" is the words to teach"))
        #expect(problem(#"{"command":"enroll","phrase":3}"#).contains("\"phrase\" is the words to teach"))
        #expect(problem(#"{"command":"enroll","phrase":"\#(String(repeating: "a", count: 101))"}"#).contains("longer than 100 characters"))
        let long = String(repeating: "a", count: ControlCommand.longestText + 1)
        #expect(problem(#"{"command":"say","text":"\#(long)"}"#).contains("longer than"))
    }
}

@Suite struct ControlAccessTests {
    func head(_ uri: String = "/api/status", host: String = "127.0.0.1:8780", _ headers: [(String, String)] = []) -> HTTPRequestHead {
        var h = HTTPHeaders([("Host", host)])
        for (name, value) in headers { h.add(name: name, value: value) }
        return HTTPRequestHead(version: .http1_1, method: .GET, uri: uri, headers: h)
    }

    @Test func thisMachineNeedsNoTokenButMustNameItself() {
        let open = ControlAccess(token: "", port: 8780)
        #expect(open.check(head(), peerIsLoopback: true) == nil)
        #expect(open.check(head(host: "localhost"), peerIsLoopback: true) == nil)
        #expect(open.check(head(host: "[::1]:8780"), peerIsLoopback: true) == nil)
        // A page whose name was rebound to 127.0.0.1.
        #expect(open.check(head(host: "evil.example:8780"), peerIsLoopback: true)?.status == .forbidden)
    }

    /// DNS rebinding: a page on a name that its owner points at 127.0.0.1 is refused, however the name is spelled;
    /// only the exact loopback names, with this server's port or none, get in.
    @Test func onlyTheExactLoopbackNamesWithThisPort() {
        let open = ControlAccess(token: "", port: 8780, hostName: "speaker")
        for host in ["127.0.0.1", "127.0.0.1:8780", "localhost", "localhost:8780", "[::1]", "[::1]:8780",
                     // Host names are case-insensitive (RFC 3986), and no one can own LOCALHOST.
                     "LOCALHOST:8780", "LocalHost"] {
            #expect(open.allows(host: host, peerIsLoopback: true), "\(host)")
            #expect(open.check(head(host: host), peerIsLoopback: true) == nil, "\(host)")
        }
        for host in ["127.0.0.1.evil.com", "127.0.0.1.evil.com:8780", "127.1.2.3", "127.1.2.3:8780", "127.0.0.2:8780",
                     "127.0.0.1:8781", "127.0.0.1:wrongport", "127.0.0.1:", "127.0.0.1:8780:8780", "127.0.0.1:+8780",
                     "127.0.0.1: 8780", "localhost.evil", "localhost.evil:8780", "localhost.", "evil.localhost",
                     "localhost:80", "", ":8780", "[::1", "[::1]x", "[::1]:", "[::1]:8781", "::1", "::1:8780",
                     "[0:0:0:0:0:0:0:1]:8780", "[::ffff:127.0.0.1]:8780", "[::1].evil.com", "0.0.0.0:8780",
                     "2130706433:8780", "0x7f000001", "127.1:8780", "speaker:8780", "speaker.local",
                     "192.168.1.20:8780", "127.0.0.1 evil.com", "127.0.0.1\tevil"] {
            #expect(!open.allows(host: host, peerIsLoopback: true), "\(host)")
            #expect(open.check(head(host: host), peerIsLoopback: true)?.status == .forbidden, "\(host)")
        }
        // No Host, or two.
        let none = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/api/status", headers: HTTPHeaders())
        #expect(open.check(none, peerIsLoopback: true)?.status == .forbidden)
        let two = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/api/status",
                                  headers: HTTPHeaders([("Host", "evil.example"), ("Host", "127.0.0.1:8780")]))
        #expect(open.check(two, peerIsLoopback: true)?.status == .forbidden)
        // Loopback listened on at another address: that address too.
        let other = ControlAccess(token: "", listenHost: "127.0.0.2", port: 8780)
        #expect(other.allows(host: "127.0.0.2:8780", peerIsLoopback: true))
        #expect(!other.allows(host: "127.0.0.3:8780", peerIsLoopback: true))
        #expect(!other.allows(host: "speaker:8780", peerIsLoopback: true))
    }

    /// Reachable from the network (a token configured): the configured address, this machine's name and, from
    /// another machine, any IP address (which no one can rebind) also name it; other names still do not.
    @Test func fromTheNetworkTheConfiguredNames() {
        let lan = ControlAccess(token: "0123456789abcdef0123", listenHost: "192.168.1.20", port: 8780, hostName: "Speaker")
        for host in ["192.168.1.20:8780", "192.168.1.20", "speaker:8780", "speaker.local:8780", "SPEAKER.local", "127.0.0.1:8780"] {
            #expect(lan.allows(host: host, peerIsLoopback: true), "\(host)")
            #expect(lan.allows(host: host, peerIsLoopback: false), "\(host)")
        }
        for host in ["192.168.1.20.evil.com", "192.168.1.20:8781", "speaker.evil.com", "evil.speaker", "speaker.local.evil", "evil.example:8780"] {
            #expect(!lan.allows(host: host, peerIsLoopback: false), "\(host)")
            #expect(lan.check(head(host: host, [("Authorization", "Bearer 0123456789abcdef0123")]), peerIsLoopback: false)?.status == .forbidden, "\(host)")
        }
        // Every address: the network's clients come by any of this machine's addresses.
        let every = ControlAccess(token: "0123456789abcdef0123", listenHost: "0.0.0.0", port: 8780, hostName: "speaker")
        #expect(every.allows(host: "10.0.0.7:8780", peerIsLoopback: false))
        #expect(every.allows(host: "[fe80::1]:8780", peerIsLoopback: false))
        #expect(every.allows(host: "speaker.local:8780", peerIsLoopback: false))
        #expect(!every.allows(host: "0.0.0.0.evil.com:8780", peerIsLoopback: false))
        #expect(!every.allows(host: "10.0.0.7.nip.io:8780", peerIsLoopback: false))
        #expect(!every.allows(host: "256.0.0.1:8780", peerIsLoopback: false))
        // From this machine, still only the exact names.
        #expect(!every.allows(host: "127.1.2.3:8780", peerIsLoopback: true))
    }

    @Test func otherMachinesNeedTheToken() {
        #expect(ControlAccess(token: "", listenHost: "0.0.0.0", port: 8780).check(head(host: "192.168.1.20:8780"), peerIsLoopback: false)?.status == .forbidden)
        let guarded = ControlAccess(token: "0123456789abcdef0123", listenHost: "0.0.0.0", port: 8780)
        #expect(guarded.check(head(host: "192.168.1.20:8780"), peerIsLoopback: false)?.status == .unauthorized)
        #expect(guarded.check(head(host: "192.168.1.20:8780", [("Authorization", "Bearer wrong-token-0000000")]), peerIsLoopback: false)?.message == "the token is wrong")
        #expect(guarded.check(head(host: "192.168.1.20:8780", [("Authorization", "Bearer 0123456789abcdef0123")]), peerIsLoopback: false) == nil)
        #expect(guarded.check(head("/?token=0123456789abcdef0123", host: "192.168.1.20:8780"), peerIsLoopback: false) == nil)
        #expect(guarded.check(head("/?token=0123456789abcdef012", host: "192.168.1.20:8780"), peerIsLoopback: false)?.status == .unauthorized)
    }

    @Test func pagesFromElsewhereAreRefused() {
        let open = ControlAccess(token: "", port: 8780)
        #expect(open.check(head(host: "127.0.0.1:8780", [("Origin", "http://127.0.0.1:8780")]), peerIsLoopback: true) == nil)
        #expect(open.check(head(host: "127.0.0.1:8780", [("Origin", "http://evil.example")]), peerIsLoopback: true)?.status == .forbidden)
        // The answer's HTML runs in a sandboxed frame, whose origin is "null".
        #expect(open.check(head(host: "127.0.0.1:8780", [("Origin", "null")]), peerIsLoopback: true)?.status == .forbidden)
    }
}

/// The server with a real loop (on fakes) behind it, and clients on plain sockets.
final class ControlRig: Sendable {
    let hub: ControlHub
    let rig: LoopRig
    let server: ControlServer
    let port: Int
    /// The server's `run`, as the speaker's service group runs it (ended by cancellation in `stop`).
    let serving: Task<Void, any Error>

    init(token: String = "", host: String = "127.0.0.1", limits: ControlServer.Limits = .init(),
         largestSubscriberCount: Int = ControlHub.defaultLargestSubscriberCount) async throws {
        let hub = ControlHub(largestSubscriberCount: largestSubscriberCount)
        self.hub = hub
        rig = await LoopRig(observers: [{ hub.publish($0) }])
        hub.attach(rig.loop)
        var logger = Logger(label: "control-test")
        logger.logLevel = .critical
        server = ControlServer(hub: hub, token: token, page: Array("<!doctype html><title>kiosk</title>".utf8), logger: logger, limits: limits)
        port = try await server.start(host: host, port: 0)
        serving = Task { [server] in try await server.run() }
    }

    func client(receiveBuffer: Int32? = nil) throws -> RawClient { try RawClient(port: port, receiveBuffer: receiveBuffer) }

    /// A WebSocket client past its snapshot.
    func subscriber() async throws -> (RawClient, JSONValue) {
        let client = try client()
        let status = await client.upgrade()
        #expect(status.hasPrefix("HTTP/1.1 101"), "\(status)")
        let first = try #require(await client.nextMessage())
        return (client, try JSONValue(parsing: Data(first.utf8)))
    }

    func post(_ body: String, contentType: String = "application/json") async throws -> (status: Int, json: JSONValue) {
        let reply = try await client().request("POST", "/api/command", headers: ["Content-Type: \(contentType)"], body: body)
        return (reply.status, (try? JSONValue(parsing: Data(reply.body.utf8))) ?? .null)
    }

    func stop() async {
        serving.cancel()
        _ = await serving.result
        await rig.stop()
    }
}

func json(_ text: String?) -> JSONValue { text.flatMap { try? JSONValue(parsing: Data($0.utf8)) } ?? .null }

@Suite(.serialized) struct ControlServerTests {
    @Test func theSnapshotComesFirstThenEveryEvent() async throws {
        let c = try await ControlRig()
        c.rig.loop.send(.carryOut(.timer(.set(seconds: 600, name: "pasta"))))
        #expect(await c.rig.eventually { c.rig.loop.snapshot.timers.count == 1 })
        let (ws, snapshot) = try await c.subscriber()
        #expect(snapshot["event"] == "snapshot")
        #expect(snapshot["state"] == "ready")
        #expect(snapshot["muted"] == false)
        #expect(snapshot["volume"] == 50)
        #expect(snapshot["timers"]?[0]?["name"] == "pasta")
        #expect(snapshot["timers"]?[0]?["remaining_s"] == 600)
        #expect(snapshot["hot_phrase_frames_dropped"] == 0)
        // A question by the button: its events as they happen.
        let search = try #require(await c.rig.askQuestion())
        search.send(.partialTranscript("what time"))
        search.send(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        #expect(json(await ws.message { json($0)["event"] == "state" })["to"] == "recording")
        #expect(json(await ws.message { json($0)["event"] == "partial" })["text"] == "what time")
        let final = json(await ws.message { json($0)["event"] == "final" })
        #expect(final["transcript"] == "what time is it" && final["answer"] == "It is noon.")
        // A snapshot taken now has the last question and answer.
        let status = try await c.client().request("GET", "/api/status")
        #expect(status.status == 200)
        #expect(json(status.body)["transcript"] == "what time is it")
        #expect(json(status.body)["answer"] == "It is noon.")
        await c.stop()
    }

    /// Setup mode (issue #64): the address for everyone, the code only for a client on this machine (the kiosk's
    /// screen, `ctl status` there): it is what proves a person is at the speaker.
    @Test func setupModesCodeIsForThisMachineOnly() async throws {
        let c = try await ControlRig()
        let set = Mutex(false)
        c.hub.attach(setup: { set.withLock { $0 } ? nil : ("kitchen.local", "481527") })
        let here = c.hub.snapshotReply(onThisMachine: true)
        #expect(here["setup_mode"] == true && here["setup_address"] == "kitchen.local" && here["setup_code"] == "481527")
        let elsewhere = c.hub.snapshotReply(onThisMachine: false)
        #expect(elsewhere["setup_mode"] == true && elsewhere["setup_code"] == .null)
        // Over the API from loopback, and in the WebSocket's snapshot.
        #expect(json(try await c.client().request("GET", "/api/status").body)["setup_code"] == "481527")
        #expect(try await c.subscriber().1["setup_code"] == "481527")
        set.withLock { $0 = true }
        let after = c.hub.snapshotReply(onThisMachine: true)
        #expect(after["setup_mode"] == false && after["setup_code"] == .null && after["setup_address"] == .null)
        await c.stop()
    }

    /// Setup mode opened after the start (Houndify refused the key): every client is told where to go, and only
    /// those on this machine the code; nothing is told while it is not open.
    @Test func setupModeOpenedLaterIsToldToEveryClientTheCodeToThisMachineOnly() {
        final class Client: ControlSubscriber {
            let onThisMachine: Bool
            let lines = Mutex<[String]>([])
            init(onThisMachine: Bool) { self.onThisMachine = onThisMachine }
            func deliver(_ line: String) -> Bool { lines.withLock { $0.append(line) }; return true }
            func close(code: UInt16, reason: String) {}
        }
        let hub = ControlHub()
        let open = Mutex(false)
        hub.attach(setup: { open.withLock { $0 } ? ("kitchen.local", "481527") : nil })
        let here = Client(onThisMachine: true), elsewhere = Client(onThisMachine: false)
        let subscriptions = [hub.subscribe(here), hub.subscribe(elsewhere)]
        hub.setupStarted()
        #expect(here.lines.withLock { $0.count } == 1 && elsewhere.lines.withLock { $0.count } == 1)  // the snapshots alone
        open.withLock { $0 = true }
        hub.setupStarted()
        #expect(here.lines.withLock { $0.last } == #"{"event":"setup","setup_mode":true,"setup_address":"kitchen.local","setup_code":"481527"}"#)
        #expect(elsewhere.lines.withLock { $0.last } == #"{"event":"setup","setup_mode":true,"setup_address":"kitchen.local","setup_code":null}"#)
        _ = subscriptions
    }

    @Test func everyCommandOverHTTP() async throws {
        let c = try await ControlRig()
        #expect(try await c.post(#"{"command":"say","text":"Dinner is ready."}"#).json["ok"] == true)
        #expect(await c.rig.eventually { c.rig.speech.spoken == ["Dinner is ready."] })
        #expect(c.rig.speech.earcons.contains(.announce))
        #expect(try await c.post(#"{"command":"stop"}"#).json["ok"] == true)
        #expect(await c.rig.eventually { c.rig.loop.currentState == .ready })
        #expect(try await c.post(#"{"command":"volume","percent":30}"#).json["ok"] == true)
        #expect(await c.rig.eventually { c.rig.volume.percent == 30 })
        #expect(try await c.post(#"{"command":"mute"}"#).json["ok"] == true)
        #expect(await c.rig.eventually { c.rig.loop.snapshot.muted })
        #expect(try await c.post(#"{"command":"status"}"#).json["muted"] == true)
        #expect(try await c.post(#"{"command":"unmute"}"#).json["ok"] == true)
        #expect(await c.rig.eventually { !c.rig.loop.snapshot.muted })
        #expect(try await c.post(#"{"command":"clear"}"#).json["ok"] == true)
        #expect(await c.rig.eventually { c.rig.search.conversationsCleared == 1 })
        // A touch on a dimmed screen: full brightness again, in the snapshot too.
        c.rig.clock.advance(by: .seconds(120))
        #expect(await c.rig.eventually { c.rig.loop.snapshot.screen.dimmed })
        #expect(try await c.post(#"{"command":"status"}"#).json["screen"]?["dimmed"] == true)
        #expect(try await c.post(#"{"command":"wake"}"#).json["ok"] == true)
        #expect(await c.rig.eventually { !c.rig.loop.snapshot.screen.dimmed })
        #expect(try await c.post(#"{"command":"listen"}"#).json["ok"] == true)
        #expect(await c.rig.eventually { c.rig.loop.currentState == .recording })
        #expect(try await c.post(#"{"command":"stop"}"#).json["ok"] == true)
        #expect(await c.rig.eventually { c.rig.loop.currentState == .ready })
        // Timers: listed, then cancelled by the id the list gave.
        c.rig.loop.send(.carryOut(.timer(.set(seconds: 300, name: "tea"))))
        #expect(await c.rig.eventually { c.rig.loop.snapshot.timers.count == 1 })
        let listed = try await c.post(#"{"command":"timers"}"#).json
        let id = try #require(listed["timers"]?[0]?["id"]?.int64Value)
        #expect(try await c.post(#"{"command":"cancel_timer","id":\#(id)}"#).json["ok"] == true)
        #expect(await c.rig.eventually { c.rig.loop.snapshot.timers.isEmpty })
        await c.stop()
    }

    /// The household's voices through the API: in the snapshot, listed, forgotten (a phrase not enrolled is a 409
    /// naming the ones that are), and none at all without the hot phrase. The household here is a stand-in that
    /// keeps the summary; HouseholdListenerTests runs the real one (Assembly's HotPhraseListener).
    @Test func theHouseholdIsShownAndForgottenOverHTTP() async throws {
        final class Voices: ControlledHousehold {
            let summary = Mutex(HouseholdSummary(phrases: [.init(text: "OK Hound", takes: ["2026-11-26T06:00:00Z", "2026-11-26T06:01:00Z"]),
                                                           .init(text: "hey kitchen", takes: ["2026-11-26T06:02:00Z"])],
                                                 negatives: 5, personalActive: true))
            var householdSummary: HouseholdSummary { summary.withLock { $0 } }
            func apply(_ change: HouseholdChange) async -> Result<HouseholdSummary, ControlCommand.Problem> {
                summary.withLock { summary in
                    switch change {
                    case .forgetNegatives: summary.negatives = 0
                    case .forget(let text):
                        guard let i = summary.phrases.firstIndex(where: { $0.text.lowercased() == text.lowercased() }) else {
                            return .failure(ControlCommand.Problem("household has no phrase \"\(text)\""))
                        }
                        summary.phrases.remove(at: i)
                        summary.personalActive = !summary.phrases.isEmpty
                    case .reload: break
                    }
                    return .success(summary)
                }
            }
        }
        let c = try await ControlRig()
        let none = try await c.post(#"{"command":"voices"}"#)
        #expect(none.status == 409 && none.json["error"]?.stringValue?.contains("does not listen for the hot phrase") == true)
        #expect(try await c.post(#"{"command":"status"}"#).json["household"] == .null)
        c.hub.attach(household: Voices())
        let status = try await c.post(#"{"command":"status"}"#).json["household"]
        #expect(status?["negatives"] == 5 && status?["personal_active"] == true)
        #expect(status?["phrases"]?[0]?["text"] == "OK Hound" && status?["phrases"]?[0]?["takes"] == 2)
        #expect(status?["phrases"]?[0]?["learned"] == 0)
        let voices = try await c.post(#"{"command":"voices"}"#)
        #expect(voices.status == 200 && voices.json["household"]?["phrases"]?[1]?["added"]?[0] == "2026-11-26T06:02:00Z")
        let unknown = try await c.post(#"{"command":"forget","phrase":"hey toaster"}"#)
        #expect(unknown.status == 409 && unknown.json["error"] == "household has no phrase \"hey toaster\"")
        let forgot = try await c.post(#"{"command":"forget","phrase":"Hey Kitchen"}"#)
        #expect(forgot.status == 200 && forgot.json["household"]?["phrases"]?.arrayValue?.count == 1)
        #expect(try await c.post(#"{"command":"forget","negatives":true}"#).json["household"]?["negatives"] == 0)
        #expect(try await c.post(#"{"command":"status"}"#).json["household"]?["negatives"] == 0)
        await c.stop()
    }

    @Test func aTypedQuestionOverHTTPWaitsForItsAnswer() async throws {
        let c = try await ControlRig()
        async let reply = c.post(#"{"command":"text","query":"what time is it"}"#)
        #expect(await c.rig.eventually { c.rig.search.latest?.query == "what time is it" })
        c.rig.search.latest?.send(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        let (status, body) = try await reply
        #expect(status == 200)
        #expect(body["answer"] == "It is noon.")
        // A failed one says why, with the sentence the speaker said.
        async let failed = c.post(#"{"command":"text","query":"and tomorrow"}"#)
        #expect(await c.rig.eventually { c.rig.search.latest?.query == "and tomorrow" })
        c.rig.search.latest?.send(.failed(SearchError(.offline, detail: "could not resolve host")))
        let (failedStatus, failedBody) = try await failed
        #expect(failedStatus == 409)
        #expect(failedBody["error"]?.stringValue == SearchFailure.offline.sentence)
        await c.stop()
    }

    @Test func badInputGetsAClearJSONError() async throws {
        let c = try await ControlRig()
        let notJSON = try await c.post("stop please")
        #expect(notJSON.status == 400 && notJSON.json["error"] == "the body is not JSON")
        let unknown = try await c.post(#"{"command":"dance"}"#)
        #expect(unknown.status == 400 && unknown.json["error"]?.stringValue?.contains("unknown command \"dance\"") == true)
        let form = try await c.post(#"{"command":"stop"}"#, contentType: "text/plain")
        #expect(form.status == 415)
        let big = try await c.post(#"{"command":"say","text":""# + String(repeating: "a", count: 70_000) + #""}"#)
        #expect(big.status == 413)
        let missing = try await c.client().request("GET", "/api/nothing")
        #expect(missing.status == 404 && json(missing.body)["ok"] == false)
        let wrongMethod = try await c.client().request("DELETE", "/api/status")
        #expect(wrongMethod.status == 405)
        let page = try await c.client().request("GET", "/")
        #expect(page.status == 200 && page.body.contains("<title>kiosk</title>"))
        // Over the WebSocket: each bad message answered, the connection kept.
        let (ws, _) = try await c.subscriber()
        ws.sendMessage("{not json")
        #expect(json(await ws.message { json($0)["ok"] == false })["error"]?.stringValue?.contains("JSON object") == true)
        ws.sendMessage(#"{"command":"volume","percent":300}"#)
        #expect(json(await ws.message { json($0)["ok"] == false })["error"]?.stringValue?.contains("0 to 100") == true)
        ws.sendMessage(#"{"command":"volume","percent":40}"#)
        #expect(json(await ws.message { json($0)["reply"] == "volume" })["ok"] == true)
        #expect(await c.rig.eventually { c.rig.volume.percent == 40 })
        await c.stop()
    }

    @Test func aPageFromElsewhereCannotOpenTheWebSocket() async throws {
        let c = try await ControlRig()
        let client = try c.client()
        let status = await client.upgrade(headers: ["Origin: null"])
        #expect(status.hasPrefix("HTTP/1.1 403"), "\(status)")
        await c.stop()
    }

    @Test func twentyClientsAtOnceEachGetEverything() async throws {
        let c = try await ControlRig()
        var clients: [RawClient] = []
        for _ in 0..<20 {
            let (client, snapshot) = try await c.subscriber()
            #expect(snapshot["event"] == "snapshot")
            clients.append(client)
        }
        #expect(c.hub.subscriberCount == 20)
        c.rig.loop.send(.carryOut(.volume(.to(70))))
        for client in clients {
            #expect(json(await client.message { json($0)["event"] == "volume" })["percent"] == 70)
        }
        clients.removeAll()
        #expect(await c.rig.eventually { c.hub.subscriberCount == 0 }, "closed clients are forgotten")
        await c.stop()
    }

    @Test func aClientThatNeverReadsIsDroppedAndHoldsUpNobody() async throws {
        let c = try await ControlRig()
        // Connected, upgraded, and then never read again, with the smallest receive buffer the kernel allows.
        let stuck = try c.client(receiveBuffer: 1024)
        #expect(await stuck.upgrade().hasPrefix("HTTP/1.1 101"))
        let (reader, _) = try await c.subscriber()
        #expect(await c.rig.eventually { c.hub.subscriberCount == 2 })
        // Far more than the backlog a client may have, in rounds the reader keeps up with (each well under the
        // backlog): each publish only hands the line over and returns.
        let text = String(repeating: "x", count: 4000)
        var next = 0
        for round in 0..<25 {
            for i in (round * 40)..<(round * 40 + 40) { c.hub.publish(.partialTranscript("\(i) \(text)")) }
            // The one that reads gets everything, in order.
            while next < round * 40 + 40, let message = await reader.nextMessage() {
                guard let words = json(message)["text"]?.stringValue else { continue }
                #expect(words.hasPrefix("\(next) "))
                next += 1
            }
        }
        #expect(next == 1000)
        #expect(c.hub.droppedCount == 1)
        #expect(c.hub.subscriberCount == 1)
        // And the speaker still answers.
        #expect(try await c.post(#"{"command":"volume","percent":20}"#).json["ok"] == true)
        await c.stop()
    }
}

/// What a web page, or a flood of connections, can do to the control API.
@Suite(.serialized) struct ControlHardeningTests {
    /// A page on a name rebound to 127.0.0.1 reaches the server from the kiosk's browser as a loopback client; it
    /// is refused by its Host before its command is read or done, and learns nothing of the speaker.
    @Test func aRebindingPageIsRefusedBeforeAnyWork() async throws {
        let c = try await ControlRig()
        for host in ["127.0.0.1.evil.com:\(c.port)", "127.1.2.3:\(c.port)", "127.0.0.1:\(c.port + 1)", "localhost.evil:\(c.port)", "evil.example"] {
            let client = try c.client()
            let command = #"{"command":"volume","step":"up"}"#
            client.send("POST /api/command HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\nContent-Type: application/json\r\n"
                        + "Content-Length: \(command.utf8.count)\r\n\r\n" + command)
            let reply = await client.response()
            #expect(reply.status == 403, "\(host): \(reply.head)")
            #expect(!reply.body.contains("volume"), "\(host): \(reply.body)")
            let status = try c.client()
            status.send("GET /api/status HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n")
            let snapshot = await status.response()
            #expect(snapshot.status == 403 && !snapshot.body.contains("\"state\""), "\(host): \(snapshot.body)")
            let ws = try c.client()
            ws.send("GET /api/ws HTTP/1.1\r\nHost: \(host)\r\nUpgrade: websocket\r\nConnection: Upgrade, close\r\n"
                    + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
            #expect(await ws.response().status == 403, "\(host)")
        }
        // No Host at all (HTTP/1.0 allows it; this API does not).
        let bare = try c.client()
        bare.send("GET /api/status HTTP/1.0\r\n\r\n")
        #expect(await bare.response().status == 403)
        // The exact names with the right port still work, and nothing was done for the refused ones.
        for host in ["127.0.0.1:\(c.port)", "localhost:\(c.port)", "LOCALHOST", "127.0.0.1"] {
            let client = try c.client()
            client.send("GET /api/status HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n")
            #expect(await client.response().status == 200, "\(host)")
        }
        #expect(c.rig.volume.percent == 50)
        await c.stop()
    }

    /// No page elsewhere may show the kiosk or the API in a frame: every response forbids it, errors included.
    @Test func everyResponseForbidsFraming() async throws {
        let c = try await ControlRig()
        func expectNoFraming(_ head: String, _ what: String) {
            let lines = head.lowercased().split(separator: "\r\n")
            #expect(lines.contains("content-security-policy: frame-ancestors 'none'"), "\(what): \(head)")
            #expect(lines.contains("x-frame-options: deny"), "\(what): \(head)")
        }
        expectNoFraming(try await c.client().request("GET", "/").head, "the page")
        expectNoFraming(try await c.client().request("GET", "/api/status").head, "the snapshot")
        expectNoFraming(try await c.client().request("POST", "/api/command", headers: ["Content-Type: application/json"],
                                                     body: #"{"command":"stop"}"#).head, "a command")
        expectNoFraming(try await c.client().request("GET", "/api/nothing").head, "404")
        expectNoFraming(try await c.client().request("DELETE", "/api/status").head, "405")
        expectNoFraming(try await c.client().request("GET", "/", headers: ["Origin: null"]).head, "403")
        // NIO's own answer to a request it cannot parse.
        let garbage = try c.client()
        garbage.send("NOT HTTP AT ALL\r\n\r\n")
        let parse = await garbage.response()
        #expect(parse.status == 400, "\(parse.head)")
        expectNoFraming(parse.head, "400")
        // The WebSocket's handshake.
        let ws = try c.client()
        let handshake = await ws.upgrade()
        #expect(handshake.hasPrefix("HTTP/1.1 101"))
        await c.stop()
    }

    /// A body over the limit is refused as soon as that is known (its Content-Length, or its chunks as they come),
    /// without waiting for the rest, and the connection is closed.
    @Test func anOversizedBodyIsRefusedAtOnce() async throws {
        // No timeout will close anything here: what is closed is closed for its error.
        let c = try await ControlRig(limits: .init(requestTimeout: .seconds(600)))
        // 100 MB declared; only the head and a little is sent. The answer comes without the rest.
        let declared = try c.client()
        declared.send("POST /api/command HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      + "Content-Length: 100000000\r\n\r\n" + String(repeating: "a", count: 1000))
        let early = await declared.response()
        #expect(early.status == 413, "\(early.head)")
        #expect(json(early.body)["ok"] == false)
        #expect(early.head.lowercased().contains("connection: close"))
        // Chunked, with no length: refused once the chunks pass the limit, with more never sent.
        let chunked = try c.client()
        chunked.send("POST /api/command HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     + "Transfer-Encoding: chunked\r\n\r\n")
        for _ in 0..<20 { chunked.send("1000\r\n" + String(repeating: "a", count: 4096) + "\r\n") }
        #expect(await chunked.response().status == 413)
        // A keep-alive request that errs: answered, then closed.
        let kept = try c.client()
        kept.send("GET /api/nothing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(await kept.closedByServer())
        #expect(await kept.response().status == 404)
        // And one NIO cannot parse (NIO answers 400).
        let garbage = try c.client()
        garbage.send("NOT HTTP AT ALL\r\n\r\n")
        #expect(await garbage.closedByServer())
        #expect(await garbage.response().status == 400)
        // The speaker was not disturbed.
        #expect(try await c.post(#"{"command":"volume","percent":20}"#).json["ok"] == true)
        await c.stop()
    }

    /// Connections that send half a request and wait can take neither every descriptor nor the owner's way in: at
    /// the cap a newcomer closes the oldest of them (a connection that has not sent a request's head) and is
    /// answered. A connection with a whole request (a WebSocket here) is never closed for a newcomer: with the cap
    /// made of those, a newcomer is closed at once, unanswered, however complete its request.
    @Test func connectionsAreCappedAndHalfSentOnesMakeRoom() async throws {
        let c = try await ControlRig(limits: .init(connections: 8, requestTimeout: .seconds(600)))
        var held: [RawClient] = []
        for _ in 0..<8 {
            let client = try c.client()
            client.send("GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            held.append(client)
        }
        #expect(await c.rig.eventually { c.server.openConnections == 8 })
        for k in 0..<8 {
            #expect(try await c.client().request("GET", "/api/status").status == 200, "newcomer \(k)")
            #expect(await held[k].closedByServer(), "the oldest half-sent one, \(k), made room")
            #expect(await held[k].response().status == 0)
            // The cap is full again (the newcomer has gone): one more half-sent.
            let client = try c.client()
            client.send("GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            held.append(client)
            #expect(await c.rig.eventually { c.server.openConnections == 8 })
        }
        held.removeAll()
        #expect(await c.rig.eventually { c.server.openConnections == 0 })
        var sockets: [RawClient] = []
        for _ in 0..<8 { sockets.append(try await c.subscriber().0) }
        for _ in 0..<20 {
            let extra = try c.client()
            extra.send("GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            #expect(await extra.closedByServer())
            #expect(await extra.response().status == 0, "answered beyond the cap")
        }
        #expect(c.server.openConnections == 8)
        sockets.removeFirst()
        #expect(await c.rig.eventually { c.server.openConnections == 7 })
        #expect(try await c.client().request("GET", "/api/status").status == 200)
        await c.stop()
    }

    /// A connection that sends half a request, or nothing more, is closed after the request timeout, however
    /// slowly its bytes trickle in; a WebSocket is not timed.
    @Test func halfSentRequestsAreTimedOut() async throws {
        let c = try await ControlRig(limits: .init(connections: 8, requestTimeout: .milliseconds(300)))
        let (ws, _) = try await c.subscriber()
        var held: [RawClient] = []
        for _ in 0..<7 {
            let client = try c.client()
            client.send("GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            held.append(client)
        }
        for client in held {
            #expect(await client.closedByServer())
            #expect(await client.response().status == 0)
        }
        // A head that trickles in: each byte resets no timer (the decoder passes nothing on until it is whole).
        let trickle = try c.client()
        trickle.send("G")
        #expect(await trickle.closedByServer())
        // A body that never ends.
        let body = try c.client()
        body.send("POST /api/command HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        #expect(await body.closedByServer())
        // A keep-alive connection between requests.
        let kept = try c.client()
        kept.send("GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        #expect(await kept.closedByServer())
        #expect(await kept.response().status == 200)
        // Only the WebSocket is left, and it still gets every event.
        #expect(await c.rig.eventually { c.server.openConnections == 1 })
        c.rig.loop.send(.carryOut(.volume(.to(70))))
        #expect(json(await ws.message { json($0)["event"] == "volume" })["percent"] == 70)
        #expect(try await c.client().request("GET", "/api/status").status == 200)
        await c.stop()
    }

    /// Good requests keep their connection, pipelined ones too (each answered in turn), until one errs.
    @Test func keepAliveAndPipelinedRequestsAreAnswered() async throws {
        let c = try await ControlRig(limits: .init(requestTimeout: .seconds(600)))
        let client = try c.client()
        let status = "GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        client.send(status + status + status + "GET /api/nothing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" + status)
        #expect(await client.closedByServer())
        let all = await client.response()
        let statuses = (all.head + "\r\n\r\n" + all.body).components(separatedBy: "HTTP/1.1 ").dropFirst().map { $0.prefix(3) }
        #expect(statuses == ["200", "200", "200", "404"], "\(statuses)")
        await c.stop()
    }

    /// A request that is being answered (a typed question waits for Houndify) is not cut off by the timeout.
    @Test func aSlowAnswerIsNotTimedOut() async throws {
        let c = try await ControlRig(limits: .init(connections: 8, requestTimeout: .milliseconds(200)))
        async let reply = c.post(#"{"command":"text","query":"what time is it"}"#)
        #expect(await c.rig.eventually { c.rig.search.latest?.query == "what time is it" })
        // Twice the timeout, measured by the server's own timer closing two idle connections one after the other.
        #expect(try await c.client().closedByServer())
        #expect(try await c.client().closedByServer())
        c.rig.search.latest?.send(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        let (status, body) = try await reply
        #expect(status == 200 && body["answer"] == "It is noon.")
        await c.stop()
    }
}

/// Issue #34: 60 WebSocket clients that never read held 73 MB. Each client's queue is bounded in what it costs
/// (its frames, not only their text), and so is the number of clients.
@Suite(.serialized) struct ControlMemoryTests {
    /// Short events (as the level meter's, five a second) to a client that never reads: 10,000 of them are well
    /// under a megabyte of text but hold several in queued frames. The client is closed long before.
    @Test func aClientThatNeverReadsShortEventsIsClosed() async throws {
        let c = try await ControlRig()
        let stuck = try c.client(receiveBuffer: 1024)
        #expect(await stuck.upgrade().hasPrefix("HTTP/1.1 101"))
        #expect(await c.rig.eventually { c.hub.subscriberCount == 1 })
        for i in 0..<10_000 { c.hub.publish(.partialTranscript("\(i)")) }
        #expect(c.hub.droppedCount == 1)
        #expect(c.hub.subscriberCount == 0)
        // Closed by the server: what reached the client is followed by the end of the stream.
        #expect(await stuck.readsToTheEnd())
        await c.stop()
    }

    /// One more client than the limit takes the place of the one silent the longest, which is told why (close code
    /// 1013, try again later) and closed: a local process holding every place cannot keep a new screen out. A
    /// client that sent a command (a touched screen's `wake`) is kept over silent ones; the others keep everything.
    @Test func aNewClientTakesThePlaceOfTheOneSilentTheLongest() async throws {
        let c = try await ControlRig(largestSubscriberCount: 3)
        var clients: [RawClient] = []
        for _ in 0..<3 { clients.append(try await c.subscriber().0) }
        clients[0].sendMessage(#"{"command":"wake"}"#)
        #expect(await clients[0].message { json($0)["reply"] == "wake" } != nil)
        let (newcomer, snapshot) = try await c.subscriber()
        #expect(snapshot["event"] == "snapshot")
        #expect(await clients[1].closeCode() == 1013)  // the one silent the longest
        #expect(await c.rig.eventually { c.hub.subscriberCount == 3 })
        c.rig.loop.send(.carryOut(.volume(.to(70))))
        for client in [clients[0], clients[2], newcomer] {
            #expect(json(await client.message { json($0)["event"] == "volume" })["percent"] == 70)
        }
        // A whole place-holding burst: every newcomer gets in, and the hub never holds more than its limit.
        var burst: [RawClient] = []
        for _ in 0..<6 { burst.append(try await c.subscriber().0) }
        #expect(await c.rig.eventually { c.hub.subscriberCount == 3 })
        withExtendedLifetime((clients, newcomer, burst)) {}
        await c.stop()
    }
}

/// This machine's first up, non-loopback IPv4 address (nil when it has none).
func nonLoopbackAddress() -> String? {
    var list: UnsafeMutablePointer<ifaddrs>? = nil
    guard getifaddrs(&list) == 0 else { return nil }
    defer { freeifaddrs(list) }
    var entry = list
    while let e = entry {
        defer { entry = e.pointee.ifa_next }
        guard let address = e.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET),
              e.pointee.ifa_flags & UInt32(IFF_UP) != 0, e.pointee.ifa_flags & UInt32(IFF_LOOPBACK) == 0 else { continue }
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { a in
            var inAddr = a.pointee.sin_addr
            _ = inet_ntop(AF_INET, &inAddr, &text, socklen_t(INET_ADDRSTRLEN))
        }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
    return nil
}

/// Bound beyond loopback, as `[control] listen = "0.0.0.0:PORT"` with a token: a client reaching it through this
/// machine's network address (not loopback) needs the token; a wrong or missing one is refused.
@Suite(.serialized) struct ControlTokenTests {
    static let token = "0123456789abcdef0123"

    @Test(.enabled(if: nonLoopbackAddress() != nil, "this machine has no network address but loopback"))
    func aClientFromTheNetworkNeedsTheToken() async throws {
        let address = try #require(nonLoopbackAddress())
        let c = try await ControlRig(token: Self.token, host: "0.0.0.0")
        func status(_ path: String, _ headers: [String] = []) async throws -> Int {
            try await RawClient(port: c.port, host: address).request("GET", path, headers: headers).status
        }
        #expect(try await status("/api/status") == 401)
        #expect(try await status("/api/status", ["Authorization: Bearer wrong-token-00000000"]) == 401)
        #expect(try await status("/api/status", ["Authorization: Bearer \(Self.token)"]) == 200)
        #expect(try await status("/api/status?token=\(Self.token)") == 200)
        // A command with the token is carried out; the WebSocket asks for it too.
        let said = try await RawClient(port: c.port, host: address).request(
            "POST", "/api/command", headers: ["Content-Type: application/json", "Authorization: Bearer \(Self.token)"],
            body: #"{"command":"mute"}"#)
        #expect(said.status == 200)
        #expect(await c.rig.eventually { c.rig.loop.snapshot.muted })
        #expect(try await RawClient(port: c.port, host: address).upgrade().contains("401"))
        #expect(try await RawClient(port: c.port, host: address).upgrade(path: "/api/ws?token=\(Self.token)").contains("101"))
        // Loopback still needs none.
        #expect(try await RawClient(port: c.port).request("GET", "/api/status").status == 200)
        await c.stop()
    }

    /// Without a token, nothing but this machine gets in, even when bound to every address.
    @Test(.enabled(if: nonLoopbackAddress() != nil, "this machine has no network address but loopback"))
    func withoutATokenOnlyThisMachine() async throws {
        let address = try #require(nonLoopbackAddress())
        let c = try await ControlRig(host: "0.0.0.0")
        #expect(try await RawClient(port: c.port, host: address).request("GET", "/api/status").status == 403)
        #expect(try await RawClient(port: c.port).request("GET", "/api/status").status == 200)
        await c.stop()
    }
}
