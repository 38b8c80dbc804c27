import SpeakerCore
import Logging
import Platform
import Synchronization
import AudioCore

/// The hot phrase detector on a thread of the app's own ("hs-hotphrase"), fed from the capture thread through a
/// bounded queue (issue #38). On the capture thread it ran slower than real time under emulation and ALSA overran,
/// losing the button's questions as well as wakes (BENCHMARKS.md, "The Pi in a box"). Now the capture thread only
/// copies a frame in, under `queue`, and never waits for the detector; the detector thread copies a frame out and
/// runs the detector holding no lock that the capture thread takes.
///
/// When the detector falls behind, the queue drops its own oldest frames: only the detector's copy of them, since
/// the upload, the endpointer, the pre-roll and the enrollment's take are fed on the capture thread and never pass
/// through here. The drops are counted (`framesDropped`, in the status) and logged at most once a minute.
final class HotPhraseWorker: Sendable {
    /// How much audio the queue holds: a stall of the detector this long (a household's detector being swapped in,
    /// a busy moment of the CPU) loses nothing. Longer, and a wake found that late would come long after the
    /// person spoke and after the pre-roll that the question starts with, so the oldest audio goes first.
    static let queueMS = 1_000
    static let queueSamples = queueMS * SpeakerAudio.samplesPerMS
    /// Frames longer than this are queued in pieces of it (the speaker's are 20 ms, 320 samples): the buffers the
    /// detector hears a frame in are made once, this long.
    static let pieceSamples = 1_600
    /// The most frames the queue holds, whatever their length.
    static let queueFrames = 256
    /// The log says that frames were dropped at most this often (with their count since the last line).
    static let logInterval = Duration.seconds(60)

    /// What the detector thread takes out of the queue.
    enum Work {
        /// A frame of `count` samples, copied into the thread's buffer.
        case frame(Entry)
        /// The detector forgets what it heard, before the frames queued after the reset was asked for.
        case reset
        case stop
    }

    /// One queued frame: its samples are the next `count` of the ring.
    struct Entry {
        var count = 0
        var over = OwnSound.none
        var echoing = false
        /// A reset was asked for before this frame was captured (it runs before the frame).
        var resetBefore = false
        /// The router's epoch at capture (`CaptureRouter.Route.epoch`): a hit is posted only while it is unchanged.
        var epoch = 0
    }

    struct Queue {
        /// The frames' samples, in a ring allocated once; the oldest frame's first sample is at `sampleStart`.
        var samples = [Int16](repeating: 0, count: HotPhraseWorker.queueSamples)
        var sampleStart = 0
        var sampleCount = 0
        var entries = [Entry](repeating: Entry(), count: HotPhraseWorker.queueFrames)
        var entryStart = 0
        var entryCount = 0
        /// A reset asked for after the last frame queued: the next frame queued carries it, or the thread runs it
        /// as soon as the queue is empty.
        var resetPending = false
        var running = false
        var stopping = false
        /// The thread has taken work out and not yet come back for more.
        var busy = false
        var dropped = 0
        var droppedSinceLine = 0
        var droppedSamplesSinceLine = 0
        /// Resumed once the thread has nothing to do (`idle()`), or has stopped (`stop()`).
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
        var stopWaiters: [CheckedContinuation<Void, Never>] = []

        var isIdle: Bool { !running || (!busy && entryCount == 0 && !resetPending) }

        /// Queues `frame` (at most `pieceSamples`), dropping the oldest frames to make room.
        mutating func push(_ frame: UnsafeBufferPointer<Int16>, over: OwnSound, echoing: Bool, epoch: Int) -> Bool {
            guard running, !stopping, !frame.isEmpty else { return false }
            while entryCount == entries.count || sampleCount + frame.count > samples.count { dropOldest() }
            let at = (sampleStart + sampleCount) % samples.count
            let first = min(frame.count, samples.count - at)
            samples.withUnsafeMutableBufferPointer { ring in
                ring.baseAddress!.advanced(by: at).update(from: frame.baseAddress!, count: first)
                if first < frame.count { ring.baseAddress!.update(from: frame.baseAddress! + first, count: frame.count - first) }
            }
            entries[(entryStart + entryCount) % entries.count] =
                Entry(count: frame.count, over: over, echoing: echoing, resetBefore: resetPending, epoch: epoch)
            resetPending = false
            entryCount += 1
            sampleCount += frame.count
            return true
        }

        private mutating func dropOldest() {
            let oldest = entries[entryStart]
            entryStart = (entryStart + 1) % entries.count
            entryCount -= 1
            sampleStart = (sampleStart + oldest.count) % samples.count
            sampleCount -= oldest.count
            dropped += 1
            droppedSinceLine += 1
            droppedSamplesSinceLine += oldest.count
            // The reset still comes before what follows the dropped frame.
            if oldest.resetBefore {
                if entryCount > 0 { entries[entryStart].resetBefore = true } else { resetPending = true }
            }
        }

        /// After the frames queued so far: the next frame queued carries it, or the thread runs it once the queue
        /// is empty.
        mutating func requestReset() {
            guard running, !stopping else { return }
            resetPending = true
        }

        /// The next work for the thread, the frame's samples copied into `buffer`; nil: nothing to do (the idle
        /// waiters are handed over in `waiters`). `tell`: the drops since the last log line are handed over too.
        mutating func take(into buffer: UnsafeMutableBufferPointer<Int16>, tell: Bool,
                           waiters: inout [CheckedContinuation<Void, Never>], dropsToTell: inout (frames: Int, samples: Int, total: Int)?) -> Work? {
            if stopping { return .stop }
            if tell && droppedSinceLine > 0 {
                dropsToTell = (droppedSinceLine, droppedSamplesSinceLine, dropped)
                droppedSinceLine = 0
                droppedSamplesSinceLine = 0
            }
            if entryCount > 0 {
                busy = true
                if entries[entryStart].resetBefore {
                    entries[entryStart].resetBefore = false
                    return .reset
                }
                let entry = entries[entryStart]
                let first = min(entry.count, samples.count - sampleStart)
                samples.withUnsafeBufferPointer { ring in
                    buffer.baseAddress!.update(from: ring.baseAddress! + sampleStart, count: first)
                    if first < entry.count { (buffer.baseAddress! + first).update(from: ring.baseAddress!, count: entry.count - first) }
                }
                entryStart = (entryStart + 1) % entries.count
                entryCount -= 1
                sampleStart = (sampleStart + entry.count) % samples.count
                sampleCount -= entry.count
                return .frame(entry)
            }
            if resetPending {
                resetPending = false
                busy = true
                return .reset
            }
            busy = false
            swap(&waiters, &idleWaiters)
            return nil
        }
    }

    private let queue = Mutex(Queue())
    /// The thread sleeps on it while the queue is empty. Held only to look at the queue or to signal, never while
    /// the detector runs.
    private let wake = Condition()
    private let detector: any HotPhraseDetecting
    private let deliver: @Sendable (HotPhraseHit, _ epoch: Int) -> Void
    private let now: @Sendable () -> ContinuousClock.Instant
    private let logger: Logger?

    /// `deliver`: called on the thread with each hit and the epoch its frame was captured in.
    init(detector: any HotPhraseDetecting, logger: Logger?, now: @escaping @Sendable () -> ContinuousClock.Instant,
         deliver: @escaping @Sendable (HotPhraseHit, _ epoch: Int) -> Void) {
        self.detector = detector
        self.logger = logger
        self.now = now
        self.deliver = deliver
    }

    /// Frames dropped because the detector was behind, since the speaker started.
    var framesDropped: Int { queue.withLock { $0.dropped } }

    /// Whether the thread runs (started and not yet ended).
    var isRunning: Bool { queue.withLock { $0.running } }

    /// Whether frames are queued (the thread runs and has not been asked to stop).
    var takesFrames: Bool { queue.withLock { $0.running && !$0.stopping } }

    /// Starts the thread (once: nothing if it runs). Frames are queued from now on.
    func start() {
        let start = queue.withLock { q -> Bool in
            guard !q.running else { return false }
            q.running = true
            q.stopping = false
            return true
        }
        if start { OwnedThread.start(name: "hs-hotphrase") { [self] in run() } }
    }

    /// Ends the thread once the frame it is on is done, dropping the frames still queued (a wake at shutdown leads
    /// nowhere). Returns when the thread has ended, or at once when it does not run.
    func stop() async {
        await withCheckedContinuation { (stopped: CheckedContinuation<Void, Never>) in
            let running = queue.withLock { q -> Bool in
                guard q.running else { return false }
                q.stopping = true
                q.stopWaiters.append(stopped)
                return true
            }
            if running { signal() } else { stopped.resume() }
        }
    }

    /// Returns once every frame queued before the call has been heard and its hit delivered (or the thread does
    /// not run).
    func idle() async {
        await withCheckedContinuation { (waiting: CheckedContinuation<Void, Never>) in
            let idle = queue.withLock { q -> Bool in
                if q.isIdle { return true }
                q.idleWaiters.append(waiting)
                return false
            }
            if idle { waiting.resume() }
        }
    }

    /// On the capture thread: queues one frame (cut into pieces if longer than `pieceSamples`), as the capture
    /// router decided at its capture. `heard` is a buffer of at least `pieceSamples`, for what the detector hears
    /// of each piece (`HotPhraseDetecting.hear`). Never waits for the detector.
    func push(_ frame: UnsafeBufferPointer<Int16>, over: OwnSound, epoch: Int, heard: UnsafeMutableBufferPointer<Int16>) {
        var queued = false
        var offset = 0
        while offset < frame.count {
            let n = min(Self.pieceSamples, frame.count - offset)
            let piece = UnsafeBufferPointer(rebasing: frame[offset..<offset + n])
            let into = UnsafeMutableBufferPointer(rebasing: heard[0..<n])
            let echoing = detector.hear(piece, into: into)
            let pushed = queue.withLock {
                $0.push(UnsafeBufferPointer(into), over: over, echoing: echoing, epoch: epoch)
            }
            queued = queued || pushed
            offset += n
        }
        if queued { signal() }
    }

    /// The detector forgets what it heard, before any frame queued after this call (and at once if none is).
    func requestReset() {
        queue.withLock { $0.requestReset() }
        signal()
    }

    private func signal() {
        wake.lock()
        wake.signal()
        wake.unlock()
    }

    private func run() {
        var buffer = [Int16](repeating: 0, count: Self.pieceSamples)
        var lastLine: ContinuousClock.Instant? = nil
        while true {
            let tell = lastLine.map { $0.duration(to: now()) >= Self.logInterval } ?? true
            var drops: (frames: Int, samples: Int, total: Int)? = nil
            var work: Work? = nil
            wake.lock()
            while work == nil {
                var waiters: [CheckedContinuation<Void, Never>] = []
                work = buffer.withUnsafeMutableBufferPointer { b in
                    queue.withLock { $0.take(into: b, tell: tell, waiters: &waiters, dropsToTell: &drops) }
                }
                for waiting in waiters { waiting.resume() }
                if work == nil { wake.wait() }
            }
            wake.unlock()
            if let drops {
                lastLine = now()
                logger?.warning("""
                    the hot phrase detector fell behind the microphone: \(drops.frames) frame\(drops.frames == 1 ? "" : "s") \
                    (\(drops.samples / SpeakerAudio.samplesPerMS) ms of audio) not listened to since the last such line, \(drops.total) since the start; \
                    a hot phrase said meanwhile may have been missed (questions and takes lost nothing)
                    """, metadata: ["event": "detector", "status": "behind", "dropped": "\(drops.frames)", "dropped_total": "\(drops.total)"])
            }
            switch work {
            case .frame(let entry)?:
                let hit = buffer.withUnsafeBufferPointer { b in
                    detector.process(UnsafeBufferPointer(rebasing: b[0..<entry.count]), over: entry.over, echoing: entry.echoing)
                }
                if let hit { deliver(hit, entry.epoch) }
            case .reset?:
                detector.reset()
            case .stop?, nil:
                let waiters = queue.withLock { q -> [CheckedContinuation<Void, Never>] in
                    q.running = false
                    q.stopping = false
                    q.busy = false
                    q.entryCount = 0
                    q.sampleCount = 0
                    q.resetPending = false
                    defer { q.stopWaiters = []; q.idleWaiters = [] }
                    return q.stopWaiters + q.idleWaiters
                }
                for waiting in waiters { waiting.resume() }
                return
            }
        }
    }
}
