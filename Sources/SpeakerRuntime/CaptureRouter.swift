import SpeakerCore
import BoardCore
import AudioCore
import Glibc
import Logging
import Synchronization

/// Sits on the capture thread: every frame goes into the pre-roll ring, while a question is recorded to the voice
/// search and the endpointer, during a spoken enrollment to its take, and otherwise (when there is a detector and
/// the speaker is not making sounds of its own, or with barge-in) into the hot phrase detector's queue, which its
/// own thread works through (`HotPhraseWorker`: the capture thread never waits for the detector). Decisions go to
/// the loop through `post`. The router's own buffers (the pre-roll ring, the detector's queue and the buffer each
/// frame's piece is heard into on its way there) are allocated once; what a frame is handed to may allocate: the
/// search's upload buffer as it grows, the take being recorded, and the loop's queue for each level, endpoint
/// decision, take or detection told.
final class CaptureRouter: Sendable {
    private struct Route {
        var search: (any VoiceSearchSession)?
        var endpointer: Endpointer?
        var searchID = 0
        var ring: PreRollRing
        /// What of our own sound plays (the machine's `ownSound`): while any does, the hot phrase is listened for
        /// only with barge-in.
        var playing = OwnSound.none
        /// The sum of squares and count of the samples since the last level was told (while a question is recorded).
        var levelEnergy = 0.0
        var levelCount = 0
        /// When the last level was told (nil: none yet for this question).
        var levelToldAt: ContinuousClock.Instant?
        /// The spoken enrollment under way (its number), or whose last words are still being said: the hot phrase
        /// is not listened for (the person says it, and so do the prompts); `take` records one take of it, for
        /// enrollment `takeID`.
        var enrolling: Int?
        var take: TakeRecorder?
        var takeID = 0
        /// Counts the searches attached and the enrollments started: a hit the detector finds in a frame captured
        /// before one of them is not posted (it would end that question, or wake the speaker in the enrollment).
        var epoch = 0
        /// What the detector hears of a frame, on its way into the detector's queue (`HotPhraseDetecting.hear`).
        var heard = [Int16](repeating: 0, count: HotPhraseWorker.pieceSamples)
    }

    /// 200 ms at 16 kHz: a level meter moves five times a second, slow enough for a socket and a screen.
    static let levelSamples = 3_200
    /// And never more often than this in real time: audio that comes faster than it is spoken (a file read at full
    /// speed, a backlog after a stall) must not flood the loop with levels no one can watch.
    static let levelInterval = Duration.milliseconds(200)
    /// The level told for digital silence (log10 of zero has no value).
    static let silenceDBFS = -96.0

    /// Shared with the detector's thread, which posts its hits under it.
    private let route: Shared<Route>
    /// The hot phrase detector's thread and queue; nil without a detector.
    private let worker: HotPhraseWorker?
    /// The hot phrase is listened for over the speaker's own sound too (the audio is echo-cancelled).
    private let bargeIn: Bool
    private let post: @Sendable (LoopInput) -> Void
    private let now: @Sendable () -> ContinuousClock.Instant

    /// `now`: the loop's clock, which paces the level events and the log's lines about the detector falling
    /// behind. The detector's thread runs between `startDetector()` and `stopDetector()`.
    init(preRollMS: Int, detector: (any HotPhraseDetecting)?, bargeIn: Bool = false, logger: Logger? = nil,
         now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }, post: @escaping @Sendable (LoopInput) -> Void) {
        let route = Shared(Route(ring: PreRollRing(capacity: preRollMS * SpeakerAudio.samplesPerMS)))
        self.route = route
        self.bargeIn = bargeIn
        self.now = now
        self.post = post
        worker = detector.map { detector in
            HotPhraseWorker(detector: detector, logger: logger, now: now) { hit, epoch in
                // Posted under the route's lock, so that no search or enrollment can start between the look and
                // the post: a hit is posted as it would have been at its frame's capture, unless one has started
                // since (the detector was behind), and then not at all.
                route.value.withLock { r in
                    guard r.epoch == epoch else { return }
                    switch hit {
                    case .wake: post(.event(.hotPhrase))
                    case .stop: post(.event(.stopPhrase))
                    }
                }
            }
        }
    }

    /// Starts the hot phrase detector's thread (nothing without a detector, or if it runs).
    func startDetector() { worker?.start() }

    /// Stops the detector's thread, dropping the frames it has not heard yet; returns once it has ended.
    func stopDetector() async { await worker?.stop() }

    /// Returns once the detector has heard every frame queued before the call, and its hits are posted.
    func detectorIdle() async { await worker?.idle() }

    /// Frames the detector did not hear because it was behind (since the start).
    var hotPhraseFramesDropped: Int { worker?.framesDropped ?? 0 }

    /// Whether the detector's thread runs.
    var detectorRunning: Bool { worker?.isRunning ?? false }

    /// Whether frames are queued for the detector (its thread runs and is not stopping).
    var detectorTakesFrames: Bool { worker?.takesFrames ?? false }

    /// Routes frames to `search` from now on; with `preRoll` the ring's audio goes first (the moments before a
    /// hot phrase fired).
    func attach(_ search: any VoiceSearchSession, id: Int, endpointer: Endpointer, preRoll: Bool) {
        route.value.withLock { r in
            r.search = search
            r.endpointer = endpointer
            r.searchID = id
            r.levelEnergy = 0
            r.levelCount = 0
            r.levelToldAt = nil
            r.epoch += 1
            if preRoll { r.ring.read { _ = search.write($0) } }
        }
    }

    func detach() {
        route.value.withLock { r in
            r.search = nil
            r.endpointer = nil
        }
    }

    /// What of the speaker's own sound is playing: while any is, the hot phrase is not listened for, or with
    /// barge-in it is, over the echo-cancelled audio at the detector's threshold for that sound.
    func setOwnSound(_ sound: OwnSound) {
        route.value.withLock { r in
            // The detector heard our own sound, and what it remembers of it must not count towards a detection; with
            // barge-in it heard the cancelled audio all along, and a phrase said as the answer ends still counts.
            // The reset comes before the frames captured from now on, after those queued before.
            if sound == .none && r.playing != .none && !bargeIn { worker?.requestReset() }
            r.playing = sound
        }
    }

    /// Spoken enrollment `id` starts: the hot phrase is not listened for until `endEnrolling(id)`.
    func startEnrolling(_ id: Int) {
        route.value.withLock { r in
            r.enrolling = id
            r.epoch += 1
        }
    }

    /// Enrollment `id` has ended and said its last words (nothing, if another has started since).
    func endEnrolling(_ id: Int) {
        route.value.withLock { r in
            guard r.enrolling == id else { return }
            // What the detector remembers from before is stale once the session has had the microphone.
            worker?.requestReset()
            r.enrolling = nil
            r.take = nil
        }
    }

    /// Records one take for enrollment `id` (`TakeRecorder`); it is posted as `takeRecorded` when complete.
    func startTake(id: Int) {
        route.value.withLock { r in
            r.take = TakeRecorder()
            r.takeID = id
        }
    }

    func stopTake() { route.value.withLock { $0.take = nil } }

    /// Called by the capture thread for every frame.
    func frame(_ samples: UnsafeBufferPointer<Int16>) {
        let (decision, id, level, take) = route.value.withLock { r -> (Endpointer.Decision?, Int, Double?, (Int, [Int16])?) in
            r.ring.append(samples)
            var take: (Int, [Int16])? = nil
            if var recorder = r.take {
                if let samples = recorder.process(samples) {
                    take = (r.takeID, samples)
                    r.take = nil
                } else {
                    r.take = recorder
                }
            }
            var decision: Endpointer.Decision? = nil
            var level: Double? = nil
            if let search = r.search {
                // Fed until the loop detaches it (the machine's endAudio or cancelSearch), even once refused or
                // once the endpointer has decided: whether the upload has ended is the machine's to say, and a
                // refused frame costs nothing. The endpointer says nothing after its one final decision.
                _ = search.write(samples)
                decision = r.endpointer?.process(samples)
                for sample in samples { r.levelEnergy += Double(sample) * Double(sample) }
                r.levelCount += samples.count
                if r.levelCount >= Self.levelSamples {
                    let at = now()
                    if r.levelToldAt.map({ $0.duration(to: at) >= Self.levelInterval }) ?? true {
                        level = Self.dBFS(meanSquare: r.levelEnergy / Double(r.levelCount))
                        r.levelToldAt = at
                    }
                    r.levelEnergy = 0
                    r.levelCount = 0
                }
            }
            // Decided now, on the state at capture; heard later, on the detector's thread.
            if let worker, r.search == nil && r.enrolling == nil && (r.playing == .none || bargeIn) {
                let (over, epoch) = (r.playing, r.epoch)
                r.heard.withUnsafeMutableBufferPointer { worker.push(samples, over: over, epoch: epoch, heard: $0) }
            }
            return (decision, r.searchID, level, take)
        }
        if let take { post(.takeRecorded(id: take.0, take.1)) }
        if let level { post(.tell(.level(dBFS: level))) }
        if let decision { post(.endpoint(id: id, decision)) }
    }
}

extension CaptureRouter {
    /// RMS in dB relative to a full-scale square wave (32768), floored at `silenceDBFS`.
    static func dBFS(meanSquare: Double) -> Double {
        guard meanSquare > 0 else { return silenceDBFS }
        return max(silenceDBFS, 10 * log10(meanSquare / (32768.0 * 32768.0)))
    }
}

/// What reaches the loop.
enum LoopInput: Sendable {
    case event(SpeakerEvent)
    /// From the endpointer of search `id`.
    case endpoint(id: Int, Endpointer.Decision)
    /// From voice search `id`.
    case search(id: Int, SearchEvent)
    /// A speech or earcon end, with what failed (for the log).
    case played(SpeakerEvent, problem: String?)
    case microphone(MicrophoneEvent)
    /// The service manager's liveness check passing through the loop (systemd's watchdog); it changes nothing.
    case heartbeat
    /// The next timer is due.
    case timersDue
    /// A minute has passed with a timer running.
    case timerTick
    /// Something that happened off the loop (an owner's command ended), told from the loop.
    case tell(SpeakerActivity)
    /// The speech thread sent the answer's first sample at this time (its interaction's timings).
    case firstSpeechSample(ContinuousClock.Instant)
    /// The screen was touched.
    case wakeScreen
    /// The owner's new setting for the LED ring.
    case ring(RingSetting)
    /// The speaker has been quiet long enough for the screen to dim.
    case screenIdle
    /// Time to try again to save the timers, which could not be saved.
    case retryTimersSave
    /// Resumed once everything sent before it has been handled (`SpeakerLoop.settled()`).
    case barrier(CheckedContinuation<Void, Never>)
    /// Offline: time to check whether the service answers again (`networkChecked` brings the result).
    case checkNetwork
    case networkChecked(Bool)
    /// `ctl enroll`: start a spoken enrollment of `phrase` (nil: the model's); `reply` gets its first progress or
    /// why it cannot start.
    case startEnrollment(phrase: String?, reply: CheckedContinuation<Result<EnrollmentProgress, DeviceProblem>, Never>)
    /// The button's set-up hold (`TalkIntent.teachVoice`): an enrollment of the hot phrase, or the reason it
    /// cannot start said aloud.
    case enrollFromButton
    /// To enrollment `id`'s session (a prompt said, a verdict, a save).
    case enrollment(id: Int, EnrollmentInput)
    /// The take recorded for enrollment `id`.
    case takeRecorded(id: Int, [Int16])
}
