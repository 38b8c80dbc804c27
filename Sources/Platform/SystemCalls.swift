// The few C library calls Swift's Glibc module does not import (CPosix), wrapped here so that nothing above the
// drivers imports a C module (issue #38).
import CPosix
import Glibc

/// The kernel's NTP state (adjtimex(2), read only: no privilege needed).
public enum KernelClock {
    public enum State: Sendable, Equatable {
        /// Synchronized, with the kernel's estimated error in microseconds.
        case synchronized(estimatedErrorUS: Int)
        case unsynchronized
        /// adjtimex failed: errno's reason.
        case unknown(String)
    }

    public static var state: State {
        var esterror = 0
        switch hs_clock_synchronized(&esterror) {
        case 1: return .synchronized(estimatedErrorUS: esterror)
        case 0: return .unsynchronized
        default: return .unknown(String(cString: strerror(errno)))
        }
    }
}

/// Spawning children that inherit nothing they should not.
public enum SpawnActions {
    /// posix_spawn of `path` with `argv` and `envp` ("NAME=value"); `stdout` and `stderr`: descriptors for its
    /// standard output and error. Every descriptor from 3 up is closed in the child, whoever opened it
    /// (posix_spawn_file_actions_addclosefrom_np, a GNU extension; ENOSYS where glibc is older than 2.34), and it
    /// starts with no signal blocked or ignored, whatever the spawning thread blocks. The pid, or the error number.
    public static func spawn(_ path: String, argv arguments: [String], envp environment: [String], stdout: Int32?,
                             stderr: Int32? = nil) -> Result<Int32, SystemError> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        let signals = hs_spawn_clean_signals(&attributes)
        guard signals == 0 else { return .failure(SystemError(signals)) }
        if let stdout { posix_spawn_file_actions_adddup2(&actions, stdout, STDOUT_FILENO) }
        if let stderr { posix_spawn_file_actions_adddup2(&actions, stderr, STDERR_FILENO) }
        // After the dup2, so the descriptor it copied is closed too.
        let closing = hs_spawn_close_from(&actions, 3)
        guard closing == 0 else { return .failure(SystemError(closing)) }
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        return status == 0 ? .success(pid) : .failure(SystemError(status))
    }

    /// pipe2(O_CLOEXEC): a pipe no child inherits; 0, or -1 with errno set.
    public static func pipeCloseOnExec(_ fds: inout [Int32]) -> Int32 {
        precondition(fds.count == 2, "a pipe has two ends")
        return fds.withUnsafeMutableBufferPointer { hs_pipe_cloexec($0.baseAddress!) }
    }
}

/// An error number from the C library, told as strerror tells it.
public struct SystemError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: Int32
    public init(_ code: Int32) { self.code = code }
    public var description: String { String(cString: strerror(code)) }
}

public enum Malloc {
    /// Fixes glibc's mmap threshold at `bytes` (mallopt M_MMAP_THRESHOLD), which also stops glibc from raising it
    /// after a large block is freed; false if glibc refused.
    @discardableResult
    public static func fixMmapThreshold(_ bytes: Int32) -> Bool { hs_malloc_fix_mmap_threshold(bytes) == 1 }
}
