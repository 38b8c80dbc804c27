// Threads, locks and conditions on pthreads, so the speaker needs only FoundationEssentials: full Foundation
// (Thread, NSLock, NSCondition) would link CoreFoundation and ICU into the binary, megabytes of resident
// memory on a 512 MB Pi for three small wrappers (BENCHMARKS.md, peak memory of `run`).
import Glibc

/// A pthread mutex, for Condition (a condition variable waits on one; Synchronization's Mutex cannot lend it).
/// Not public: the rest of the app locks with Mutex.
/// @unchecked: a C pthread_mutex_t, which is itself the synchronisation.
final class Lock: @unchecked Sendable {
    // Heap-allocated: a pthread mutex must not move, and a Swift stored property may.
    fileprivate let mutex: UnsafeMutablePointer<pthread_mutex_t>

    init() {
        mutex = .allocate(capacity: 1)
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }

    func withLock<R>(_ body: () throws -> R) rethrows -> R {
        lock()
        defer { unlock() }
        return try body()
    }
}

/// A condition variable with its own mutex (NSCondition's shape). Timed waits use the monotonic clock, so a
/// clock step at boot (NTP on a Pi without a real-time clock) neither cuts a wait short nor stretches it.
/// @unchecked: a C pthread_cond_t and its mutex, which are themselves the synchronisation.
public final class Condition: @unchecked Sendable {
    private let lockObject = Lock()
    private let cond: UnsafeMutablePointer<pthread_cond_t>

    public init() {
        cond = .allocate(capacity: 1)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        precondition(pthread_cond_init(cond, &attributes) == 0, "pthread_cond_init")
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(cond)
        cond.deallocate()
    }

    public func lock() { lockObject.lock() }
    public func unlock() { lockObject.unlock() }
    public func signal() { pthread_cond_signal(cond) }
    public func broadcast() { pthread_cond_broadcast(cond) }

    /// Waits until signalled (call with the lock held; spurious wake-ups happen, so wait in a loop).
    public func wait() { pthread_cond_wait(cond, lockObject.mutex) }

    /// Waits at most `seconds`; false if the time ran out.
    @discardableResult
    public func wait(seconds: Double) -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let whole = seconds.rounded(.down)
        var deadline = timespec(tv_sec: now.tv_sec + Int(whole),
                                tv_nsec: now.tv_nsec + Int((seconds - whole) * 1_000_000_000))
        if deadline.tv_nsec >= 1_000_000_000 {
            deadline.tv_sec += 1
            deadline.tv_nsec -= 1_000_000_000
        }
        return pthread_cond_timedwait(cond, lockObject.mutex, &deadline) == 0
    }
}

/// pthread_setname_np is a GNU extension Swift's Glibc module does not show; it writes this same file.
private func setCurrentThreadName(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)  // close-on-exec, as every descriptor the app opens
    guard fd >= 0 else { return }  // no /proc (a chroot): the name is only a convenience
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

/// A thread the app owns, for blocking C calls (ALSA reads, curl_multi_poll, espeak-ng synthesis, GPIO edge
/// waits) that must never run on Swift's cooperative pool.
public enum OwnedThread {
    /// Starts `body` on a new detached thread named `name` (as `top -H` and `ps -L` show it; Linux keeps the
    /// first 15 bytes). Where a request can ask for the thread, use `tryStart` and answer the refusal in words.
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        // At start (the capture, speech, board threads): out of threads is not something the speaker can recover
        // from, so it says so rather than hang.
        if let problem = tryStart(name: name, body) { preconditionFailure(problem) }
    }

    /// Starts `body` as `start` does; nil, or why the system refused the thread (`body` is not run then).
    public static func tryStart(name: String, _ body: @escaping @Sendable () -> Void) -> String? {
        final class Box: Sendable {
            let name: String
            let body: @Sendable () -> Void
            init(name: String, body: @escaping @Sendable () -> Void) { self.name = name; self.body = body }
        }
        let box = Unmanaged.passRetained(Box(name: name, body: body))
        var thread = pthread_t()
        let status = pthread_create(&thread, nil, { raw in
            let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
            setCurrentThreadName(box.name)
            box.body()
            return nil
        }, box.toOpaque())
        guard status == 0 else {
            box.release()
            return "no thread for \(name): \(String(cString: strerror(status)))"
        }
        pthread_detach(thread)
        return nil
    }
}
