@testable import Control
import ControlCore
import FoundationEssentials
import JSONKit
import Logging
import NIOCore
import NIOEmbedded
import NIOWebSocket
import SpeakerCore
import SpeakerRuntime
import SpeakerTestKit
import Testing

/// What a command waiting to be carried out costs, and what happens to one that has waited too long or is
/// cancelled (issue #38, "Lifecycle").
@Suite(.serialized) struct PendingCommandTests {
    /// The connection's task is busy (nobody takes commands here): 64 wait, the 65th is answered at once with
    /// the reason and not carried out.
    @Test func theSixtyFifthWaitingWebSocketCommandIsRefusedWithTheReason() async throws {
        let (requests, pending) = AsyncStream.makeStream(of: ControlRequest.self,
                                                         bufferingPolicy: .bufferingOldest(ControlServer.largestPendingCommands))
        var logger = Logger(label: "pending-test")
        logger.logLevel = .critical
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(WebSocketHandler(hub: ControlHub(), logger: logger, requests: pending))
        for n in 0...ControlServer.largestPendingCommands {
            let text = n == ControlServer.largestPendingCommands ? #"{"command":"volume","percent":40}"# : #"{"command":"status"}"#
            try channel.writeInbound(WebSocketFrame(fin: true, opcode: .text, data: channel.allocator.buffer(string: text)))
        }
        channel.embeddedEventLoop.run()
        var replies: [JSONValue] = []
        while let frame = try channel.readOutbound(as: WebSocketFrame.self) {
            var data = frame.unmaskedData
            let message = json(data.readString(length: data.readableBytes))
            if message["reply"] != nil { replies.append(message) }
        }
        #expect(replies.count == 1, "\(replies)")
        #expect(replies.first?["reply"] == "volume" && replies.first?["ok"] == false, "\(replies)")
        #expect(replies.first?["error"]?.stringValue?.contains("64 commands are waiting") == true, "\(replies)")
        pending.finish()
        var waiting: [String] = []
        for await request in requests {
            if case .webSocket(let command, _) = request { waiting.append(command.name.rawValue) }
        }
        #expect(waiting == Array(repeating: "status", count: ControlServer.largestPendingCommands))
        _ = try? channel.finish()
    }

    /// A typed question the speaker has not answered when the control API stops (SIGTERM cancels the server's
    /// task) ends with the command, not after the answer timeout; before, a detached timer held it.
    @Test(.timeLimit(.minutes(1))) func aWaitingTypedQuestionEndsWhenItsTaskIsCancelled() async throws {
        let c = try await ControlRig()
        let hub = c.hub
        let asking = Task { await hub.perform(.text("what time is it"), waitForAnswer: true, answerTimeout: .seconds(3600)) }
        #expect(await c.rig.eventually { c.rig.search.latest?.query == "what time is it" })
        asking.cancel()
        let reply = await asking.value
        #expect(reply["ok"] == false && reply["error"] == "the control API is stopping", "\(reply)")
        await c.stop()
    }

    /// One that times out says so, and its late answer goes to nobody's reply (the next question gets its own).
    @Test(.timeLimit(.minutes(1))) func aTypedQuestionThatTimesOutSaysSoAndTheNextGetsItsOwnAnswer() async throws {
        let c = try await ControlRig()
        let late = await c.hub.perform(.text("what time is it"), waitForAnswer: true, answerTimeout: .milliseconds(50))
        #expect(late["ok"] == false && late["error"]?.stringValue?.hasPrefix("no answer within") == true, "\(late)")
        let first = try #require(c.rig.search.latest)
        first.send(.answer(SpeakerAnswer(transcript: "what time is it", text: "It is noon.")))
        #expect(await c.rig.eventually { c.rig.loop.currentState == .speaking })
        await c.rig.endSpeech()
        #expect(await c.rig.eventually { c.rig.loop.currentState == .ready })
        let hub = c.hub
        let asking = Task { await hub.perform(.text("what day is it"), waitForAnswer: true, answerTimeout: .seconds(3600)) }
        #expect(await c.rig.eventually { c.rig.search.latest?.query == "what day is it" })
        c.rig.search.latest?.send(.answer(SpeakerAnswer(transcript: "what day is it", text: "It is Thursday.")))
        let reply = await asking.value
        #expect(reply["answer"] == "It is Thursday.", "\(reply)")
        await c.stop()
    }
}
