import Dispatch
import FoundationEssentials
import Glibc
import Platform

/// One timer for the loop's lifetime, re-armed on every state change. A Task sleeping per state would do the same,
/// but a cancelled Task.sleep keeps its timer (and memory) until the deadline it was given, up to a minute: at a
/// query every few seconds that piles up (the loop benchmark showed it). A dispatch timer is moved, not re-made.
final class Watchdog: @unchecked Sendable {
    private let queue = DispatchQueue(label: "hound-speaker.watchdog")
    private let timer: any DispatchSourceTimer
    private let lock = Lock()
    private var generation = 0

    init(fire: @escaping @Sendable (Int) -> Void) {
        timer = DispatchSource.makeTimerSource(queue: queue)
        timer.setEventHandler { [unowned self] in
            lock.lock()
            let armed = generation
            lock.unlock()
            if armed >= 0 { fire(armed) }
        }
        timer.schedule(deadline: .distantFuture)
        timer.resume()
    }

    deinit { timer.cancel() }

    func arm(generation: Int, milliseconds: Int) {
        lock.lock()
        self.generation = generation
        lock.unlock()
        timer.schedule(deadline: .now() + .milliseconds(milliseconds))
    }

    func disarm() {
        lock.lock()
        generation = -1
        lock.unlock()
        timer.schedule(deadline: .distantFuture)
    }
}
