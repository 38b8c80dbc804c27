import Foundation
import Platform
public import Testing

/// A trait for a suite (or test) whose synchronous tests block: a child process waited for, a sleep, real-time
/// ALSA I/O. Swift Testing runs a synchronous test on Swift's cooperative pool, which has one thread per CPU; two such
/// tests waiting on children held both threads of a two-CPU machine for most of a minute, and every other test in
/// the process, the servers the async ones talk to included, waited with them (a test client's 20 s timeout ran out
/// in CI). With this trait each test runs on a thread of its own, still in its own task, so its expectations are
/// its own.
public struct OwnThreadTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        // The suite as a whole has nothing to run; its test cases each get their own thread.
        guard testCase != nil else { return try await function() }
        let executor = OwnThreadExecutor()
        defer { executor.finish() }
        try await withTaskExecutorPreference(executor) {
            // The preference moves the task at its next suspension, and a synchronous test has none: this is it.
            await Task.yield()
            try await function()
        }
    }
}

extension Trait where Self == OwnThreadTrait {
    /// Each test on a thread of its own, off Swift's cooperative pool (OwnThreadTrait).
    public static var ownThread: Self { Self() }
}

/// The calling thread's name as the kernel has it (what OwnedThread named it).
public func currentThreadName() -> String {
    ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .newlines)
}

/// A task executor with one thread, made for one test and ended after it.
final class OwnThreadExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked: `jobs` and `finished` are only touched under `condition`.
    private let condition = Platform.Condition()
    private var jobs: [UnownedJob] = []
    private var finished = false

    init() {
        OwnedThread.start(name: "test-body") { [self] in work() }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// The thread ends once told to and nothing is left to run.
    func finish() {
        condition.lock()
        finished = true
        condition.signal()
        condition.unlock()
    }

    private func work() {
        while true {
            condition.lock()
            while jobs.isEmpty && !finished { condition.wait() }
            guard !jobs.isEmpty else { condition.unlock(); return }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
