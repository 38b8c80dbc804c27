import Foundation
import Synchronization
import Testing
@testable import SpeakerCore
@testable import SpeakerRuntime
import TestSupport

/// Speech that starts within moments of a stop, with the real speech engine (espeak-ng) on a speaker played at
/// twice real time: the stopped answer's end comes after the new speech has started, and must not end it. The
/// speaker stays speaking for as long as the new speech plays, and a press still stops that speech.
extension SpeakerLoopTests {
    static let announcement = "The laundry is done. The dishwasher has finished too, and the bread will be ready "
        + "in ten minutes, so please take the washing out and hang it up before the bread comes out of the oven."

    /// Starts "tell me a story" and, the moment its answer starts to be spoken, does `overIt` to the loop. Then,
    /// once `newSpeech` is being said and the stopped answer's end has been reported, checks that the speaker is
    /// still speaking and that a press stops it (and does not start listening over it). The speaker stops taking
    /// samples at the new speech's first one, so that speech cannot end by itself while the test looks.
    func expectTheNewSpeechHolds(newSpeech: String, _ overIt: @escaping @Sendable (SpeakerLoop) -> Void) async throws {
        let rig = try await Rig.start(question: "tell me a story", transcript: "tell me a story", pacedSpeaker: true,
                                      holdSecondSpeech: true)
        let loop = rig.loop
        let first = Mutex(true)
        rig.events.react.withLock {
            $0 = { line in
                if line.contains("\"to\":\"speaking\""), first.withLock({ f in defer { f = false }; return f }) { overIt(loop) }
            }
        }
        rig.loop.send(.talk)
        // The story's own speech first, then the new speech after it.
        #expect(await rig.events.wait(for: "\"text\":\"Once upon a time"))
        let story = rig.events.all.firstIndex { $0.contains("\"text\":\"Once upon a time") } ?? 0
        #expect(await rig.events.wait(for: "\"text\":\"\(newSpeech.prefix(20))", after: story + 1))
        // The stopped story's end, then a moment for the loop to take it in.
        #expect(await rig.events.wait(for: "speech 1 ended interrupted"))
        try await Task.sleep(for: .milliseconds(300))
        #expect(rig.events.states.last == "speaking", "\(rig.events.all)")
        let before = rig.events.all.count
        rig.loop.send(.talk)
        #expect(await rig.events.wait(for: "\"from\":\"speaking\",\"to\":\"ready\"", after: before))
        rig.sink?.release()
        try await Task.sleep(for: .milliseconds(300))
        await rig.stop()
        let after = Array(rig.events.all.dropFirst(before))
        #expect(!after.contains { $0.contains("\"to\":\"recording\"") }, "the press listened over the speech: \(rig.events.all.filter { !$0.contains("\"level\"") && !$0.contains("partial") })")
    }

    @Test func theStopCommandThenAnAnnouncementIsStoppable() async throws {
        try await expectTheNewSpeechHolds(newSpeech: Self.announcement) { loop in
            loop.send(.cancel)
            loop.send(.announce(Self.announcement))
        }
    }

    @Test func aTypedQuestionOverAnAnswerIsStoppable() async throws {
        try await expectTheNewSpeechHolds(newSpeech: "Once upon a time") { loop in
            loop.send(.textQuery("tell me a story"))
        }
    }

    @Test func anAnnouncementAfterAPressedAnswerIsStoppable() async throws {
        try await expectTheNewSpeechHolds(newSpeech: Self.announcement) { loop in
            loop.send(.announce(Self.announcement))
            loop.send(.talk)
        }
    }
}
