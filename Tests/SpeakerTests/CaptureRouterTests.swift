import TestSupport
import Foundation
import AudioCore
import Logging
import Synchronization
import Testing
@testable import Audio
import HotPhrase
@testable import SpeakerCore
@testable import SpeakerRuntime
import Assembly
import SpeakerTestKit

/// The router with the real detector and the demo's "OK Hound" recording, fed in 20 ms frames.
@Suite struct CaptureRouterHotPhraseTests {
    /// Fed half a second at a time, each heard before the next comes: as fast as the detector goes, no faster
    /// (fed all at once, the detector's queue would drop what it cannot hold).
    func feed(_ router: CaptureRouter, _ samples: [Int16]) async {
        var start = 0
        while start + 320 <= samples.count {
            let end = min(samples.count, start + 8_000)
            MonoAudio(samples: Array(samples[start..<end]), sampleRate: 16_000).forEachFrame(wholeOnly: true) { router.frame($0); return true }
            start = end
            await router.detectorIdle()
        }
    }

    func hotPhrases(listening: Bool) async throws -> Int {
        let model = try HotPhraseModel.load(path: repositoryRoot + "/share/hotphrase/ok-hound.hpm")
        let seen = Mutex(0)
        let router = CaptureRouter(preRollMS: 300, detector: HotPhraseListener(model: model, settings: HotPhraseSettings())) { input in
            if case .event(.hotPhrase) = input { seen.withLock { $0 += 1 } }
        }
        router.startDetector()
        router.setOwnSound(listening ? .none : .answer)
        await feed(router, try AudioFile.readMono(path: repositoryRoot + "/share/demo/ok-hound-what-time-is-it.wav").samples)
        await router.stopDetector()
        #expect(router.hotPhraseFramesDropped == 0)
        return seen.withLock { $0 }
    }

    @Test func theHotPhraseWakesTheSpeaker() async throws {
        #expect(try await hotPhrases(listening: true) == 1)
    }

    /// While the speaker's own voice or an earcon plays, the phrase is not listened for (it would hear itself).
    @Test func notWhileTheSpeakerMakesSounds() async throws {
        #expect(try await hotPhrases(listening: false) == 0)
    }
}

/// The detector on a thread of its own (issue #38): the capture thread queues each frame for it and goes on, so a
/// detector slower than real time loses wakes, counted and logged, and never the question's audio.
@Suite(.timeLimit(.minutes(1))) struct CaptureRouterDetectorThreadTests {
    /// What the router told the loop.
    final class Posted: Sendable {
        let inputs = Mutex<[String]>([])
        func add(_ input: LoopInput) {
            let name: String? = switch input {
            case .event(.hotPhrase): "wake"
            case .event(.stopPhrase): "stop"
            case .endpoint(_, let decision): "endpoint \(decision)"
            default: nil
            }
            if let name { inputs.withLock { $0.append(name) } }
        }
        var all: [String] { inputs.withLock { $0 } }
        var wakes: Int { all.filter { $0 == "wake" }.count }
    }

    /// A search that keeps what it is sent.
    final class Upload: VoiceSearchSession {
        let events = AsyncStream<SearchEvent> { _ in }
        let samples = Mutex<[Int16]>([])
        func write(_ frame: UnsafeBufferPointer<Int16>) -> Bool {
            samples.withLock { $0.append(contentsOf: frame) }
            return true
        }
        func finish() {}
        func cancel() {}
        var firstAudioSent: ContinuousClock.Instant? { nil }
    }

    /// The log lines written, at warning and above.
    struct Lines: LogHandler {
        let lines: Shared<[String]>
        var logLevel: Logger.Level = .warning
        var metadata: Logger.Metadata = [:]
        var metadataProvider: Logger.MetadataProvider?
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) { lines.value.withLock { $0.append("\(event.message)") } }
    }

    /// The loop's clock, moved by the test.
    final class Clock: Sendable {
        let start = ContinuousClock.now
        let passed = Mutex(Duration.zero)
        var now: ContinuousClock.Instant { start + passed.withLock { $0 } }
        func advance(by duration: Duration) { passed.withLock { $0 += duration } }
    }

    let detector = FakeHotPhrase()
    let posted = Posted()
    let logged = Shared<[String]>([])
    let clock = Clock()
    let router: CaptureRouter

    init() {
        let (posted, logged, clock) = (posted, logged, clock)
        router = CaptureRouter(preRollMS: 300, detector: detector,
                               logger: Logger(label: "test") { _ in Lines(lines: logged) },
                               now: { clock.now }, post: { posted.add($0) })
        router.startDetector()
    }

    /// One 20 ms frame of `value`, or the frames of `samples`.
    func feed(_ value: Int16, frames: Int = 1) {
        let frame = [Int16](repeating: value, count: 320)
        for _ in 0..<frames { frame.withUnsafeBufferPointer { router.frame($0) } }
    }

    /// How many 20 ms frames the detector's queue holds.
    static let queueFrames = HotPhraseWorker.queueSamples / 320

    /// The detector stuck on a frame: every frame after it waits in the queue, and the oldest go when it is full.
    func stall() {
        detector.hold()
        feed(1)
        detector.waitUntilAFrameWaits()
    }

    @Test func whileTheDetectorLagsEveryFrameStillGoesToTheSearchAndTheEndpointer() async {
        stall()
        feed(2, frames: Self.queueFrames + 10)
        #expect(router.hotPhraseFramesDropped == 10)

        // A question (the button): a quiet room, half a second of voice, then silence until the endpointer ends it.
        let upload = Upload()
        router.attach(upload, id: 7, endpointer: Endpointer(), preRoll: false)
        let tone = (0..<320).map { Int16(8000 * sin(Double($0) * 2 * .pi * 440 / 16_000)) }
        feed(0, frames: 5)
        for _ in 0..<25 { tone.withUnsafeBufferPointer { router.frame($0) } }
        feed(0, frames: 30)
        #expect(upload.samples.withLock { $0.count } == 60 * 320)
        #expect(posted.all == ["endpoint speechStarted", "endpoint endOfSpeech"])
        router.detach()

        // Nothing of the question went to the detector; of what came before, the newest frames it could hold.
        detector.release()
        await router.detectorIdle()
        #expect(detector.firstSamples == [1] + [Int16](repeating: 2, count: Self.queueFrames))
        #expect(router.hotPhraseFramesDropped == 10)
        await router.stopDetector()
    }

    @Test func theOldestFramesAreDroppedCountedAndLoggedAtMostOnceAMinute() async {
        stall()
        for value in 100..<Int16(100 + Self.queueFrames + 3) { feed(value) }
        detector.release()
        await router.detectorIdle()
        // The three oldest of those queued were dropped, not the newest.
        #expect(detector.firstSamples == [1] + (103..<Int16(103 + Self.queueFrames)))
        #expect(router.hotPhraseFramesDropped == 3)
        var lines = logged.value.withLock { $0 }
        #expect(lines.count == 1)
        #expect(lines.first?.contains("3 frames (60 ms of audio) not listened to since the last such line, 3 since the start") == true, "\(lines)")

        // Within the minute: counted, not logged.
        stall()
        feed(2, frames: Self.queueFrames + 2)
        detector.release()
        await router.detectorIdle()
        #expect(router.hotPhraseFramesDropped == 5)
        #expect(logged.value.withLock { $0.count } == 1)

        // A minute on, the next drop is logged with those not logged yet.
        stall()
        clock.advance(by: .seconds(60))
        feed(2, frames: Self.queueFrames + 1)
        detector.release()
        await router.detectorIdle()
        lines = logged.value.withLock { $0 }
        #expect(lines.count == 2)
        #expect(lines.last?.contains("3 frames (60 ms of audio) not listened to since the last such line, 6 since the start") == true, "\(lines)")
        await router.stopDetector()
    }

    /// Heard in the order captured, each hit posted: fed no faster than the detector hears, it misses nothing.
    @Test func noWakeIsLostWhenTheDetectorKeepsUp() async {
        for _ in 0..<20 {
            feed(0, frames: 9)
            feed(FakeHotPhrase.marker)
            await router.detectorIdle()
        }
        #expect(posted.wakes == 20)
        #expect(detector.framesSeen == 200)
        #expect(router.hotPhraseFramesDropped == 0)
        await router.stopDetector()
    }

    /// As at capture: a frame captured while listening over the speaker's own sound (barge-in) is heard so; one
    /// captured during a question is not heard at all.
    @Test func whatAFrameIsHeardAsIsDecidedAtItsCapture() async {
        await self.router.stopDetector()
        let router = CaptureRouter(preRollMS: 300, detector: detector, bargeIn: true) { [posted] in posted.add($0) }
        router.startDetector()
        detector.hold()
        router.setOwnSound(.answer)  // the speaker talks
        feed(router, 0, frames: 3)
        router.setOwnSound(.none)
        feed(router, 0, frames: 2)
        router.attach(Upload(), id: 1, endpointer: Endpointer(), preRoll: false)
        feed(router, FakeHotPhrase.marker, frames: 2)
        router.detach()
        detector.release()
        await router.detectorIdle()
        #expect(detector.framesSeen == 5)
        #expect(detector.framesOverOwnSound == 3)
        #expect(posted.wakes == 0)
        await router.stopDetector()
    }

    func feed(_ router: CaptureRouter, _ value: Int16, frames: Int) {
        let frame = [Int16](repeating: value, count: 320)
        for _ in 0..<frames { frame.withUnsafeBufferPointer { router.frame($0) } }
    }

    /// A wake the detector finds late, in a frame captured before a question started (the button), is not posted:
    /// it would end that question. One found with nothing started since is.
    @Test func aWakeFoundAfterAQuestionStartedIsNotPosted() async {
        detector.hold()
        feed(FakeHotPhrase.marker)
        detector.waitUntilAFrameWaits()
        router.attach(Upload(), id: 1, endpointer: Endpointer(), preRoll: false)
        detector.release()
        await router.detectorIdle()
        #expect(detector.framesSeen == 1)
        #expect(posted.wakes == 0)

        router.detach()
        detector.hold()
        feed(FakeHotPhrase.marker)
        detector.waitUntilAFrameWaits()
        detector.release()
        await router.detectorIdle()
        #expect(posted.wakes == 1)
        await router.stopDetector()
    }

    /// The same for a spoken enrollment started meanwhile: the person is about to say the phrase for it.
    @Test func aWakeFoundAfterAnEnrollmentStartedIsNotPosted() async {
        detector.hold()
        feed(FakeHotPhrase.marker)
        detector.waitUntilAFrameWaits()
        router.startEnrolling(1)
        detector.release()
        await router.detectorIdle()
        #expect(posted.wakes == 0)
        await router.stopDetector()
    }

    /// A reset asked for comes after the frames queued before it and before those after it; with nothing queued,
    /// at once.
    @Test func aResetTakesItsPlaceAmongTheFrames() async {
        router.setOwnSound(.answer)
        router.setOwnSound(.none)
        await router.detectorIdle()
        #expect(detector.resetsAfter == [0])
        stall()
        router.setOwnSound(.answer)
        router.setOwnSound(.none)
        feed(3)
        detector.release()
        await router.detectorIdle()
        // After the stalled frame, before the one that came after the reset.
        #expect(detector.resetsAfter == [0, 1])
        #expect(detector.framesSeen == 2)
        await router.stopDetector()
    }

    /// Stopped in the middle of a frame: it ends after that frame, what is queued is not heard, nothing is posted
    /// after, and frames that come later are not queued.
    @Test func theDetectorStopsCleanly() async {
        stall()
        feed(FakeHotPhrase.marker, frames: 5)
        #expect(router.detectorRunning)
        async let stopped: Void = router.stopDetector()
        while router.detectorTakesFrames { await Task.yield() }
        detector.release()
        await stopped
        #expect(!router.detectorRunning)
        #expect(detector.framesSeen == 1)
        feed(FakeHotPhrase.marker, frames: 5)
        await router.detectorIdle()  // at once: nothing runs
        #expect(detector.framesSeen == 1)
        #expect(posted.wakes == 0)
    }

    /// The loop runs the detector's thread from its start to its end.
    @Test func theLoopStopsItsDetectorAtShutdown() async {
        await router.stopDetector()
        let rig = await LoopRig(hotPhrase: true)
        #expect(rig.loop.router.detectorRunning)
        await rig.stop()
        #expect(!rig.loop.router.detectorRunning)
    }

    /// The frames the detector did not hear are in the status.
    @Test func theStatusCountsTheFramesDropped() async throws {
        await router.stopDetector()
        let rig = await LoopRig(hotPhrase: true)
        let detector = try #require(rig.hotPhrase)
        detector.hold()
        rig.microphone.feed(frames: 1, value: 0)
        detector.waitUntilAFrameWaits()
        rig.microphone.feed(frames: Self.queueFrames + 4, value: 0)
        #expect(rig.loop.snapshot.hotPhraseFramesDropped == 4)
        detector.release()
        await rig.stop()
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
