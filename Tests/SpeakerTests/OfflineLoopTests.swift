import Foundation
import Testing
@testable import SpeakerCore
@testable import SpeakerRuntime
import TestSupport

/// The speaker with Houndify out of reach (a closed port) and its own recogniser behind it (issue #63): spoken
/// commands of its own grammar are carried out, anything else gets the offline sentence and changes nothing; with
/// Houndify back, Houndify answers. The real loop, libcurl, ALSA file devices, flite's voice and PocketSphinx.
extension SpeakerLoopTests {
    @Test func offlineASpokenTimerIsSetAndRings() async throws {
        let rig = try await Rig.start(question: "set a timer for three seconds", serviceUp: false, offlineCommands: true, fliteQuestion: true)
        rig.loop.send(.talk)
        #expect(await rig.events.wait(for: "\"source\":\"device\""), "\(rig.events.all)")
        #expect(await rig.events.wait(for: "\"event\":\"timer\""))
        #expect(await rig.events.wait(for: "\"to\":\"ringing\""), "the timer set offline never rang: \(rig.events.all)")
        rig.loop.send(.talk)
        await rig.stop()
        // The words as heard: how much silence follows the question changes PocketSphinx's cepstral mean, and with it
        // "second" or "seconds" (the capture here is faster than real time, so that varies); both set the same timer.
        let final = rig.events.all.first { $0.contains("\"event\":\"final\"") } ?? ""
        #expect(final.contains("\"transcript\":\"set a timer for three second") && final.contains("Timer set for 3 seconds."), "\(final)")
    }

    @Test func offlineTheTimeIsTold() async throws {
        let rig = try await Rig.start(question: "what time is it", serviceUp: false, offlineCommands: true, fliteQuestion: true)
        rig.loop.send(.talk)
        #expect(await rig.events.wait(for: "\"from\":\"speaking\",\"to\":\"ready\""))
        await rig.stop()
        #expect(rig.events.all.contains { $0.contains("\"source\":\"device\"") })
        // The time by the speaker's clock, or, on a machine whose clock was never synchronised (this one may not
        // be), that it cannot tell it (DeviceAnswerTests checks the sentence itself).
        let said = rig.events.all.first { $0.contains("\"event\":\"speech\"") } ?? ""
        #expect(said.contains("\"text\":\"It's ") || said.contains("My clock isn't set yet, so I can't tell the time."), "\(said)")
    }

    @Test func offlineAQuestionOutsideTheGrammarIsToldWhatTheSpeakerCanStillDo() async throws {
        let rig = try await Rig.start(question: "who wrote the odyssey", serviceUp: false, offlineCommands: true, fliteQuestion: true)
        rig.loop.send(.talk)
        #expect(await rig.events.wait(for: SearchFailure.stillCan), "\(rig.events.all)")
        #expect(await rig.events.wait(for: "\"from\":\"speaking\",\"to\":\"ready\""))
        await rig.stop()
        #expect(!rig.events.all.contains { $0.contains("\"event\":\"timer\"") || $0.contains("\"source\":\"device\"") })
    }

    @Test func withHoundifyBackHoundifyAnswers() async throws {
        let rig = try await Rig.start(question: "what time is it", offlineCommands: true, fliteQuestion: true)
        rig.loop.send(.talk)
        #expect(await rig.events.wait(for: "\"event\":\"final\""))
        #expect(await rig.events.wait(for: "\"from\":\"speaking\",\"to\":\"ready\""))
        await rig.stop()
        #expect(!rig.events.all.contains { $0.contains("\"source\":\"device\"") }, "\(rig.events.all)")
    }
}
