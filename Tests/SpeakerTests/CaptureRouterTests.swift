import TestSupport
import Foundation
import AudioCore
import Synchronization
import Testing
@testable import Audio
import HotPhrase
@testable import SpeakerCore
import SpeakerApp

/// The router with the real detector and the demo's "OK Hound" recording, fed in 20 ms frames.
@Suite struct CaptureRouterHotPhraseTests {
    func feed(_ router: CaptureRouter, _ samples: [Int16]) {
        MonoAudio(samples: samples, sampleRate: 16_000).forEachFrame(wholeOnly: true) { router.frame($0); return true }
    }

    func hotPhrases(listening: Bool) throws -> Int {
        let model = try HotPhraseModel.load(path: repositoryRoot + "/share/hotphrase/ok-hound.hpm")
        let seen = Mutex(0)
        let router = CaptureRouter(preRollMS: 300, detector: HotPhraseListener(model: model, settings: HotPhraseSettings())) { input in
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

/// The ring of the moments before a hot phrase, which the question's upload starts with.
@Suite struct PreRollRingTests {
    func contents(_ ring: PreRollRing) -> [Int16] {
        var out: [Int16] = []
        ring.read { out += $0 }
        return out
    }

    func append(_ ring: inout PreRollRing, _ samples: [Int16]) {
        samples.withUnsafeBufferPointer { ring.append($0) }
    }

    @Test func keepsTheLastSamplesOldestFirst() {
        var ring = PreRollRing(capacity: 5)
        #expect(contents(ring).isEmpty)
        append(&ring, [1, 2, 3])
        #expect(contents(ring) == [1, 2, 3])
        append(&ring, [4, 5, 6, 7])  // wraps: 1 and 2 are gone
        #expect(contents(ring) == [3, 4, 5, 6, 7])
        #expect(ring.count == 5)
        append(&ring, Array(10..<23))  // a frame longer than the ring: only its end is kept
        #expect(contents(ring) == [18, 19, 20, 21, 22])
    }

    @Test func readsInAtMostTwoPieces() {
        var ring = PreRollRing(capacity: 4)
        append(&ring, [1, 2, 3, 4, 5, 6])
        var pieces: [[Int16]] = []
        ring.read { pieces.append(Array($0)) }
        #expect(pieces == [[3, 4], [5, 6]])
    }
}

/// The microphone's level, told five times a second while a question is recorded (a screen's level meter).
@Suite struct CaptureRouterLevelTests {
    final class Sink: VoiceSearchSession {
        let events = AsyncStream<SearchEvent> { _ in }
        func write(_ samples: UnsafeBufferPointer<Int16>) -> Bool { true }
        func finish() {}
        func cancel() {}
        var firstAudioSent: ContinuousClock.Instant? { nil }
    }

    /// `realTime`: the clock moves with the audio, as from a microphone; else it stands still (audio arriving all
    /// at once).
    func levels(attached: Bool, samples: [Int16], realTime: Bool = true) -> [Double] {
        let told = Mutex<[Double]>([])
        let heard = Mutex(0)
        let start = ContinuousClock.now
        let now: @Sendable () -> ContinuousClock.Instant = {
            realTime ? start + .microseconds(Int64(heard.withLock { $0 }) * 1_000_000 / 16_000) : start
        }
        let router = CaptureRouter(preRollMS: 300, detector: nil, now: now) { input in
            if case .tell(.level(let dBFS)) = input { told.withLock { $0.append(dBFS) } }
        }
        let feed: (UnsafeBufferPointer<Int16>) -> Void = { frame in
            heard.withLock { $0 += frame.count }
            router.frame(frame)
        }
        if attached { router.attach(Sink(), id: 1, endpointer: Endpointer(), preRoll: false) }
        MonoAudio(samples: samples, sampleRate: 16_000).forEachFrame(wholeOnly: true) { feed($0); return true }
        return told.withLock { $0 }
    }

    /// A square wave of amplitude `a` has an RMS of `a`: its level is 20 log10(a / 32768).
    func square(amplitude: Int16, seconds: Double) -> [Int16] {
        (0..<Int(seconds * 16_000)).map { $0 % 40 < 20 ? amplitude : -amplitude }
    }

    @Test func fiveTimesASecondAtTheSignalsLevel() {
        let told = levels(attached: true, samples: square(amplitude: 3_277, seconds: 1))
        #expect(told.count == 5)
        for level in told { #expect(abs(level - -20.0) < 0.01) }
    }

    @Test func silenceIsTheFloorNotMinusInfinity() {
        let told = levels(attached: true, samples: [Int16](repeating: 0, count: 6_400))
        #expect(told == [CaptureRouter.silenceDBFS, CaptureRouter.silenceDBFS])
    }

    /// Ten seconds of audio arriving at once (a file read at full speed): one level, not fifty for the loop to wade
    /// through before the events that matter.
    @Test func audioFasterThanRealTimeIsNotAFlood() {
        #expect(levels(attached: true, samples: square(amplitude: 3_277, seconds: 10), realTime: false).count == 1)
    }

    /// Between questions nothing is told: no one needs a meter of the kitchen, and no socket carries it.
    @Test func nothingWhileNoQuestionIsRecorded() {
        #expect(levels(attached: false, samples: square(amplitude: 10_000, seconds: 1)).isEmpty)
    }
}
