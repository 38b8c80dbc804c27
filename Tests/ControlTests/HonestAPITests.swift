@testable import Control
import FoundationEssentials
import JSONKit
import SpeakerCore
import SpeakerRuntime
import SpeakerTestKit
import Testing
import Timers

/// The API says what happened to each request, and only that (issue #35, "An honest API").
@Suite(.serialized) struct HonestAPITests {
    @Test func twoOverlappingTypedQuestionsEachGetTheirOwnReply() async throws {
        let c = try await ControlRig()
        async let first = c.post(#"{"command":"text","query":"what time is it"}"#)
        #expect(await c.rig.eventually { c.rig.search.latest?.query == "what time is it" })
        let search = try #require(c.rig.search.latest)
        // The second arrives while the first is being answered: refused, with the reason, at once.
        let second = try await c.post(#"{"command":"text","query":"what day is it"}"#)
        #expect(second.status == 409)
        #expect(second.json["error"]?.stringValue?.contains("answering another question") == true, "\(second.json)")
        #expect(!search.isCancelled)
        search.send(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        let (status, body) = try await first
        #expect(status == 200)
        #expect(body["transcript"] == "what time is it" && body["answer"] == "It is noon.", "\(body)")
        #expect(c.rig.search.sessions.count == 1)
        await c.stop()
    }

    @Test func aTypedQuestionWhileSomeoneAsksByVoiceIsRefused() async throws {
        let c = try await ControlRig()
        let spoken = try #require(await c.rig.askQuestion())
        let reply = try await c.post(#"{"command":"text","query":"what time is it"}"#)
        #expect(reply.status == 409)
        #expect(reply.json["error"]?.stringValue?.contains("asking a question by voice") == true, "\(reply.json)")
        #expect(!spoken.isCancelled && c.rig.loop.currentState == .recording)
        await c.stop()
    }

    @Test func aTypedQuestionOverTheWebSocketIsRepliedWithItsNumberOrWhyNot() async throws {
        let c = try await ControlRig()
        let (ws, _) = try await c.subscriber()
        ws.sendMessage(#"{"command":"text","query":"what time is it"}"#)
        let asked = json(await ws.message { json($0)["reply"] == "text" })
        #expect(asked["ok"] == true, "\(asked)")
        let id = try #require(asked["id"]?.int64Value)
        ws.sendMessage(#"{"command":"text","query":"what day is it"}"#)
        let refused = json(await ws.message { json($0)["reply"] == "text" })
        #expect(refused["ok"] == false && refused["error"]?.stringValue?.contains("another question") == true, "\(refused)")
        // Its answer comes as its events: the final, and its question event by the number the reply gave.
        #expect(await c.rig.eventually { c.rig.search.latest?.query == "what time is it" })
        c.rig.search.latest?.send(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        let report = json(await ws.message { json($0)["event"] == "question" && json($0)["status"] == "answered" })
        #expect(report["id"]?.int64Value == id && report["answer"] == "It is noon.", "\(report)")
        await c.stop()
    }

    /// `ctl text "good night"` once waited 30 s for a final that never came, and failed.
    @Test func anOwnersPhraseIsAnsweredWithWhatWasSaidAndDone() async throws {
        let c = try await ControlRig()
        async let reply = c.post(#"{"command":"text","query":"good night"}"#)
        #expect(await c.rig.eventually { c.rig.search.latest?.query == "good night" })
        c.rig.search.latest?.send(.answer(SpeakerAnswer(transcript: "good night", text: "Good night.", action: .run(command: "lights off"))))
        let (status, body) = try await reply
        #expect(status == 200)
        #expect(body["answer"] == "Good night." && body["done"] == "ran \"lights off\"", "\(body)")
        await c.stop()
    }

    @Test func aLocalCommandIsAnsweredWithTheSpeakersOwnWords() async throws {
        let c = try await ControlRig()
        async let reply = c.post(#"{"command":"text","query":"volume down"}"#)
        #expect(await c.rig.eventually { c.rig.search.latest?.query == "volume down" })
        c.rig.search.latest?.send(.answer(SpeakerAnswer(transcript: "volume down", text: "Didn't get that!")))
        let (status, body) = try await reply
        #expect(status == 200)
        #expect(body["answer"] == "Volume 40." && body["done"] == "turned the volume down", "\(body)")
        await c.stop()
    }

    @Test func cancellingATimerOrAlarmThatIsNotThereIsAnError() async throws {
        let c = try await ControlRig()
        let none = try await c.post(#"{"command":"cancel_timer","id":7}"#)
        #expect(none.status == 409 && none.json["ok"] == false, "\(none.json)")
        c.rig.loop.send(.carryOut(.timer(.set(seconds: 300, name: "tea"))))
        #expect(await c.rig.eventually { c.rig.loop.snapshot.timers.count == 1 })
        let id = try #require(c.rig.loop.snapshot.timers.first?.id)
        let wrongID = try await c.post(#"{"command":"cancel_timer","id":\#(id + 1)}"#)
        #expect(wrongID.status == 409 && wrongID.json["error"]?.stringValue?.contains("\"status\" lists the timers") == true, "\(wrongID.json)")
        let wrongName = try await c.post(#"{"command":"cancel_timer","name":"pasta"}"#)
        #expect(wrongName.status == 409, "\(wrongName.json)")
        #expect(c.rig.loop.snapshot.timers.count == 1, "nothing was cancelled")
        let alarm = try await c.post(#"{"command":"cancel_alarm","id":1}"#)
        #expect(alarm.status == 409 && alarm.json["ok"] == false, "\(alarm.json)")
        // The one that is there is cancelled.
        #expect(try await c.post(#"{"command":"cancel_timer","name":"tea"}"#).status == 200)
        #expect(await c.rig.eventually { c.rig.loop.snapshot.timers.isEmpty })
        await c.stop()
    }

    @Test func wrongMethodsAreToldWhatIsAllowedAndHeadWorks() async throws {
        let c = try await ControlRig()
        for (method, path, allowed) in [("DELETE", "/api/status", "GET, HEAD"), ("GET", "/api/command", "POST"),
                                        ("POST", "/", "GET, HEAD"), ("HEAD", "/api/ws", "GET")] {
            let reply = try await c.client().request(method, path)
            #expect(reply.status == 405, "\(method) \(path)")
            #expect(reply.head.lowercased().contains("\r\nallow: \(allowed.lowercased())\r\n"), "\(method) \(path): \(reply.head)")
        }
        for path in ["/api/status", "/"] {
            let get = try await c.client().request("GET", path)
            let head = try await c.client().request("HEAD", path)
            #expect(head.status == 200, "\(path)")
            #expect(head.body.isEmpty, "HEAD \(path) sent a body")
            #expect(head.head.lowercased().contains("content-length: \(get.body.utf8.count)"), "\(path): \(head.head)")
        }
        await c.stop()
    }

    /// Issue 61: "I can't reach the internet." stayed in the snapshot for ever once the service was back (a page
    /// opened then showed it). It goes when the speaker's light check finds the service, with an `online` event for
    /// the screens that show it, not at the next answer.
    @Test func theOfflineProblemGoesFromTheSnapshotWhenTheServiceAnswersAgain() async throws {
        let c = try await ControlRig()
        c.rig.search.refuseNextStart(SearchError(.offline, detail: "[ConnectionFailure] could not resolve host"))
        let mark = c.rig.recorder.count
        c.rig.loop.send(.talk)
        #expect(await c.rig.saw(after: mark) { if case .searchFailed = $0 { true } else { false } })
        await c.rig.endSpeech()  // its sentence said
        let offline = json(try await c.client().request("GET", "/api/status").body)
        #expect(offline["offline"] == true && offline["problem"] == .string(SearchFailure.offline.sentence), "\(offline)")
        let (ws, snapshot) = try await c.subscriber()
        #expect(snapshot["problem"] == .string(SearchFailure.offline.sentence), "\(snapshot)")
        c.rig.search.setReachable(true)
        await c.rig.advance(by: Speaker.networkCheckFirst)
        let told = json(await ws.message { ["online", "leds"].contains(json($0)["event"]?.stringValue) })
        #expect(told["event"] == "online", "the offline LEDs went before the screens heard it was over: \(told)")
        let back = json(try await c.client().request("GET", "/api/status").body)
        #expect(back["offline"] == false && back["problem"] == "", "\(back)")
        await c.stop()
    }
}
