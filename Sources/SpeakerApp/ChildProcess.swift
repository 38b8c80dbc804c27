import FoundationEssentials
import Glibc

/// Starting another program: the state hook and the local service. One place decides what a child's environment
/// holds, so the Houndify credentials never reach one (a hook is anyone's script).
enum ChildProcess {
    /// This process's environment (or `base`) without the Houndify credentials, plus `extra`.
    static func environment(adding extra: [String: String] = [:],
                            base: [String: String] = ProcessInfo.processInfo.environment) -> [String: String] {
        var environment = base
        environment["HOUNDIFY_CLIENT_ID"] = nil
        environment["HOUNDIFY_CLIENT_KEY"] = nil
        return environment.merging(extra) { _, new in new }
    }

    /// posix_spawn of `path` with `arguments` (argv[0] first); `stdout`: a descriptor for its standard output,
    /// and one to close in the child. The pid, or the error number.
    static func spawn(_ path: String, arguments: [String], environment: [String: String],
                      stdout: (write: Int32, closeInChild: Int32)? = nil) -> Result<pid_t, Errno> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let stdout {
            posix_spawn_file_actions_adddup2(&actions, stdout.write, STDOUT_FILENO)
            posix_spawn_file_actions_addclose(&actions, stdout.closeInChild)
        }
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, path, &actions, nil, argv, envp)
        return status == 0 ? .success(pid) : .failure(Errno(status))
    }

    struct Errno: Error, CustomStringConvertible {
        let code: Int32
        init(_ code: Int32) { self.code = code }
        var description: String { String(cString: strerror(code)) }
    }
}
