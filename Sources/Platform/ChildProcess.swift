import FoundationEssentials
import Glibc

/// Starting another program: the state hook, the owner's commands and the local service. One place decides what a
/// child's environment holds, so the Houndify credentials never reach one (a hook is anyone's script).
public enum ChildProcess {
    /// This process's environment (or `base`) without the Houndify credentials, plus `extra`.
    public static func environment(adding extra: [String: String] = [:], base: [String: String]? = nil) -> [String: String] {
        var environment = base ?? ProcessInfo.processInfo.environment
        environment["HOUNDIFY_CLIENT_ID"] = nil
        environment["HOUNDIFY_CLIENT_KEY"] = nil
        return environment.merging(extra) { _, new in new }
    }

    /// posix_spawn of `path` with `arguments` (argv[0] first); `stdout`: a descriptor for its standard output.
    /// The child gets standard input, output and error and nothing else: every descriptor from 3 up is closed in
    /// it, whoever opened it. Close-on-exec where this app opens descriptors is not enough, since libraries open
    /// theirs without it (SwiftNIO's listening socket): a hook that outlived a kill -9 of the speaker kept the
    /// control API's port, and the restarted speaker ran without its API (issue #34). The pid, or the error number.
    public static func spawn(_ path: String, arguments: [String], environment: [String: String],
                             stdout: Int32? = nil) -> Result<Int32, Errno> {
        SpawnActions.spawn(path, argv: arguments, envp: environment.map { "\($0.key)=\($0.value)" }, stdout: stdout)
    }

    /// `/bin/sh -c command` in `environment`, not waited for: an owned thread reaps it (so no zombie is left) and
    /// hands `ended` its exit status (128 + the signal if a signal ended it). The pid, or the error number.
    public static func shell(_ command: String, environment: [String: String], threadName: String,
                             ended: (@Sendable (Int32) -> Void)? = nil) -> Result<Int32, Errno> {
        let spawned = spawn("/bin/sh", arguments: ["/bin/sh", "-c", command], environment: environment)
        guard case .success(let child) = spawned else { return spawned }
        OwnedThread.start(name: threadName) {
            var result: Int32 = 0
            while waitpid(child, &result, 0) < 0 && errno == EINTR {}
            // WIFEXITED / WEXITSTATUS, which Swift does not import: the low 7 bits are the signal, bits 8-15 the status.
            let signal = result & 0x7f
            ended?(signal == 0 ? (result >> 8) & 0xff : 128 + signal)
        }
        return spawned
    }

    public typealias Errno = SystemError
}
