import Foundation
import AudioCore
import Synchronization
import Testing
@testable import Audio
import HotPhrase
import Speaker
@testable import SpeakerRuntime

/// The router with the real detector and the demo's "OK Hound" recording, fed in 20 ms frames.
@Suite struct CaptureRouterHotPhraseTests {
    func feed(_ router: CaptureRouter, _ samples: [Int16]) {
        samples.withUnsafeBufferPointer { all in
            var i = 0
            while i + 320 <= all.count {
                router.frame(UnsafeBufferPointer(rebasing: all[i..<(i + 320)]), level: -30)
                i += 320
            }
        }
    }

    func hotPhrases(listening: Bool) throws -> Int {
        let model = try HotPhraseModel.load(path: repositoryRoot + "/share/hotphrase/ok-hound.hpm")
        let seen = Mutex(0)
        let router = CaptureRouter(preRollMS: 300, detector: HotPhraseListener(model: model, sensitivity: 0.85)) { input in
            if case .event(.hotPhrase) = input { seen.withLock { $0 += 1 } }
        }
        router.setHotPhraseListening(listening)
        feed(router, try AudioFile.readMono(path: repositoryRoot + "/share/demo/ok-hound-what-time-is-it.wav").samples)
        return seen.withLock { $0 }
    }

    @Test func theHotPhraseWakesTheSpeaker() throws {
        #expect(try hotPhrases(listening: true) == 1)
    }

    /// While the speaker's own voice or an earcon plays, the phrase is not listened for (it would hear itself).
    @Test func notWhileTheSpeakerMakesSounds() throws {
        #expect(try hotPhrases(listening: false) == 0)
    }
}
