public import SpeakerCore
import Synchronization

/// Keeps the loop's activity as it comes (an observer) and lets async callers wait for one that matches: the
/// demo waits for the answer this way, and tests for what they expect. Waiting suspends; it never blocks a thread.
public final class ActivityRecorder: Sendable {
    private struct Waiter {
        var id: Int
        var after: Int
        var match: @Sendable (SpeakerActivity) -> Bool
        var continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        /// The most recent activities; the first has index `total - seen.count`.
        var seen: [SpeakerActivity] = []
        /// How many were ever recorded.
        var total = 0
        var waiters: [Waiter] = []
        var nextID = 0

        func contains(after: Int, _ match: (SpeakerActivity) -> Bool) -> Bool {
            let base = total - seen.count
            return seen[max(0, after - base)...].contains(where: match)
        }
    }

    private let state = Mutex(State())
    private let limit: Int

    /// Keeps the last `limit` activities (older ones are forgotten, as a running speaker must).
    public init(limit: Int = 10_000) { self.limit = limit }

    /// The observer to give the loop.
    public var observer: @Sendable (SpeakerActivity) -> Void { { [self] in record($0) } }

    public func record(_ activity: SpeakerActivity) {
        let due = state.withLock { s -> [CheckedContinuation<Bool, Never>] in
            s.seen.append(activity)
            s.total += 1
            if s.seen.count > limit { s.seen.removeFirst(s.seen.count - limit) }
            let index = s.total - 1
            let matched = s.waiters.filter { index >= $0.after && $0.match(activity) }
            s.waiters.removeAll { w in matched.contains { $0.id == w.id } }
            return matched.map(\.continuation)
        }
        for continuation in due { continuation.resume(returning: true) }
    }

    /// Everything recorded so far, oldest first.
    public var all: [SpeakerActivity] { state.withLock { $0.seen } }

    /// How many have been recorded (a mark for `wait(after:)`).
    public var count: Int { state.withLock { $0.total } }

    /// True once an activity at index `after` or later matches; false after `timeout` of time this process could
    /// run (`sleep(running:)`: a safety net for a test that would otherwise hang, never what decides a result).
    public func wait(after: Int = 0, timeout: Duration = .seconds(10), for match: @escaping @Sendable (SpeakerActivity) -> Bool) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.waitUntilCancelled(after: after, match) }
            group.addTask {
                await Self.sleep(running: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// Returns once `timeout` has passed in steps this process was able to take: a stretch in which none of its
    /// tasks could run (the cooperative pool taken by blocking work, a machine overloaded: CI's Debian 13 leg once
    /// stalled every test for 50 s) counts as one step, so a wait does not give up on what was only held up.
    static func sleep(running timeout: Duration) async {
        let step = Duration.milliseconds(250), clock = ContinuousClock()
        var counted = Duration.zero
        while counted < timeout, !Task.isCancelled {
            let start = clock.now
            try? await Task.sleep(for: min(step, timeout - counted))
            counted += min(clock.now - start, step)
        }
    }

    /// `wait` for one exact activity.
    public func wait(for activity: SpeakerActivity, after: Int = 0, timeout: Duration = .seconds(10)) async -> Bool {
        await wait(after: after, timeout: timeout) { $0 == activity }
    }

    private func waitUntilCancelled(after: Int, _ match: @escaping @Sendable (SpeakerActivity) -> Bool) async -> Bool {
        let id = state.withLock { s -> Int in s.nextID += 1; return s.nextID }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // Registered under the lock, or answered at once: a match already seen, or a wait already cancelled
                // (onCancel ran before the waiter existed and found nothing to resume).
                let answer = state.withLock { s -> Bool? in
                    if s.contains(after: after, match) { return true }
                    if Task.isCancelled { return false }
                    s.waiters.append(Waiter(id: id, after: after, match: match, continuation: continuation))
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            let waiter = state.withLock { s -> Waiter? in
                guard let index = s.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return s.waiters.remove(at: index)
            }
            waiter?.continuation.resume(returning: false)
        }
    }
}
