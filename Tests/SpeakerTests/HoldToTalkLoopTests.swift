import Testing
@testable import SpeakerCore
@testable import SpeakerRuntime

/// Hold-to-talk through the real Houndify client against the local service: the service says SafeToStopAudio
/// after the question's first pause, and the upload stays open for as long as the button is held.
extension SpeakerLoopTests {
    @Test func aHeldQuestionGoesOnPastTheServicesSafeToStopAudio() async throws {
        // The question (about 1.5 s) comes in real time, then silence: the service's end of speech (0.7 s of
        // silence after speech) falls at about 2.5 s.
        let rig = try await Rig.start(pacedMicrophone: true)
        rig.loop.send(.hold)
        try await Task.sleep(for: .seconds(4))
        #expect(rig.events.states.last == "recording", "\(rig.events.states)")
        #expect(!rig.events.all.contains { $0.contains("\"event\":\"final\"") }, "answered while the button was held")
        rig.loop.send(.endTalk)
        #expect(await rig.events.wait(for: "\"event\":\"final\""))
        #expect(await rig.events.wait(for: "\"from\":\"speaking\",\"to\":\"ready\""))
        await rig.stop()
        #expect(rig.events.all.contains { $0.contains("\"transcript\":\"what time is it\"") && $0.contains("\"answer\":\"It is ") })
    }
}
