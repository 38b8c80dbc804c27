import Glibc
import TOMLKit

/// Runs TOMLKit's parser in a child process, where an abort inside it (toml++'s assertions on some malformed
/// input) takes down only the child. See ConfigLoader.parseTOML for why.
enum ParserProbe {
    /// nil when the parser returns on `text` (with a table or an error: the caller then parses it for real); else
    /// the first line such that the text up to and including it makes the parser die.
    static func lineThatCrashesTheParser(_ text: String) -> Int? {
        guard !survives(text) else { return nil }
        // The parser reads from the start: if it dies on the first k lines it dies on any longer prefix, so the
        // first such k is found by bisection (a handful of children, only for a config that crashes it).
        // Each prefix keeps its lines' ends: `[` followed by the end of the file is an error, by a newline a crash.
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        var low = 1, high = lines.count
        while low < high {
            let middle = (low + high) / 2
            if survives(lines[..<middle].joined(separator: "\n") + "\n") { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// True when a child process parsing `text` exits normally. A child that could not tell (stuck on a lock another
    /// thread held when it was forked, or reaped by someone else) is tried again with a fresh fork, twice; if no child
    /// can be made or none tells, true: the caller parses in this process as it would without the probe.
    static func survives(_ text: String) -> Bool {
        for _ in 0..<3 {
            if let told = probe(text) { return told }
        }
        return true
    }

    /// One child's answer: whether it exited normally; nil if it could not tell.
    private static func probe(_ text: String) -> Bool? {
        let pid = fork()
        if pid == 0 {
            // The child: back to the default actions, so an abort is an abort here (a fuzzer or a debugger may have
            // installed handlers that would report it as this process's crash), then parse and leave at once.
            for signal in [SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE] { Glibc.signal(signal, SIG_DFL) }
            _ = try? TOMLTable(string: text)
            _exit(0)
        }
        guard pid > 0 else { return true }
        // A config parses in well under a millisecond. A child still there after 5 s is stuck: it is ended.
        var status: Int32 = 0
        for _ in 0..<5000 {
            let done = waitpid(pid, &status, WNOHANG)
            if done == pid { return status & 0x7F == 0 && (status >> 8) & 0xFF == 0 }  // exited, with status 0
            if done < 0 && errno != EINTR { return nil }
            usleep(1000)
        }
        kill(pid, SIGKILL)
        _ = waitpid(pid, &status, 0)
        return nil
    }
}
