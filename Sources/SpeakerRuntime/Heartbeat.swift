import Dispatch
import Synchronization

/// Liveness for a service manager (systemd's `WatchdogSec=`). A timer only posts a heartbeat into the loop's own
/// queue; `beat` runs when the loop takes it out. So the beats stop when the loop is stuck (a blocked effect, a
/// deadlock), not only when the process dies, and systemd restarts a speaker that no longer answers.
public struct LoopHeartbeat: Sendable {
    /// Time between beats; nil: one beat only, when the loop starts.
    public var interval: Duration?
    /// Runs on the loop. The first call comes right after the loop has handled `started`: the speaker is ready.
    public var beat: @Sendable () -> Void

    public init(interval: Duration?, beat: @escaping @Sendable () -> Void) {
        self.interval = interval
        self.beat = beat
    }
}

/// Posts heartbeats, at most one waiting in the queue: a loop stuck for a minute finds one, not hundreds.
/// Unchecked: a dispatch source is thread-safe but not marked Sendable; `pending` is atomic.
final class HeartbeatTimer: @unchecked Sendable {
    private let timer: any DispatchSourceTimer
    private let pending = Atomic<Bool>(false)

    init(interval: Duration?, post: @escaping @Sendable () -> Void) {
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "hound-speaker.heartbeat"))
        timer.setEventHandler { [weak self] in
            guard let self else { return }
            if pending.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged { post() }
        }
        if let interval {
            let (seconds, attoseconds) = interval.components
            let nanoseconds = Int(seconds) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
            timer.schedule(deadline: .now(), repeating: .nanoseconds(max(nanoseconds, 1_000_000)))
        } else {
            timer.schedule(deadline: .now())
        }
        timer.resume()
    }

    /// The loop has taken the heartbeat out of its queue.
    func taken() { pending.store(false, ordering: .releasing) }

    func cancel() { timer.cancel() }

    deinit { timer.cancel() }
}
