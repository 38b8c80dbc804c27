import Foundation
import Glibc
import Platform
import Synchronization
import Testing

@Suite struct SpawnTests {
    /// A child starts with no signal blocked or ignored, whatever the thread that spawned it blocks (Swift's and
    /// Dispatch's threads block most signals) and whatever the speaker ignores (SIGPIPE): else a hook or an owner's
    /// command could not be stopped with SIGTERM, and `timeout` or `alarm` in it would never fire.
    @Test func aChildStartsWithCleanSignals() throws {
        signal(SIGPIPE, SIG_IGN)
        let result = Mutex<String?>(nil)
        OwnedThread.start(name: "spawn-test") {
            var blocked = sigset_t()
            sigemptyset(&blocked)
            for s in [SIGTERM, SIGALRM, SIGINT, SIGHUP] { sigaddset(&blocked, s) }
            pthread_sigmask(SIG_BLOCK, &blocked, nil)
            var fds: [Int32] = [0, 0]
            guard SpawnActions.pipeCloseOnExec(&fds) == 0 else { result.withLock { $0 = "no pipe" }; return }
            let spawned = SpawnActions.spawn("/usr/bin/grep", argv: ["grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"], envp: [], stdout: fds[1])
            close(fds[1])
            var out: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 512)
            while true {
                let n = read(fds[0], &buffer, buffer.count)
                if n <= 0 { break }
                out += buffer.prefix(n)
            }
            close(fds[0])
            if case .success(let pid) = spawned {
                var status: Int32 = 0
                waitpid(pid, &status, 0)
            }
            result.withLock { $0 = String(decoding: out, as: UTF8.self) }
        }
        var text: String?
        for _ in 0..<500 {
            text = result.withLock { $0 }
            if text != nil { break }
            usleep(10_000)
        }
        let masks = Dictionary(uniqueKeysWithValues: (text ?? "").split(separator: "\n").compactMap { line -> (String, UInt64)? in
            let parts = line.split(separator: "\t")
            guard parts.count == 2, let mask = UInt64(parts[1], radix: 16) else { return nil }
            return (String(parts[0]), mask)
        })
        #expect(masks["SigBlk:"] == 0, "\(text ?? "no output")")
        // Signals 1-31; 32 and 33 are glibc's own (its threads' cancellation and set*id), which no program may change.
        #expect(masks["SigIgn:"].map { $0 & 0x7fff_ffff } == 0, "\(text ?? "no output")")
    }
}
