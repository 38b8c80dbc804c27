import Glibc

/// Writing a small state file so that a power cut leaves either the old content or the new, never a torn or empty
/// file: the bytes go to a temporary file beside it, are flushed to the disk (fsync), renamed over the old one,
/// and the directory is flushed so the rename itself is on the disk. A Pi's power is pulled, not shut down.
public enum AtomicFile {
    /// What reading a state file found: no file (a new speaker), its bytes, or why it could not be read.
    public enum Contents: Equatable, Sendable {
        case none
        case bytes([UInt8])
        case unreadable(String)
    }

    /// Reads the file at `path` whole, or its first `limit` bytes and one more (so that the caller sees it is too
    /// long). open(2) and read(2) rather than FileManager, whose nil cannot tell a file the service's user may not
    /// read from no file: the state files keep what they cannot read, and mute fails closed on it.
    public static func read(_ path: String, limit: Int = .max) -> Contents {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            let error = errno
            return error == ENOENT ? .none : .unreadable(String(cString: strerror(error)))
        }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: min(65_536, limit == .max ? 65_536 : limit + 1))
        while bytes.count <= limit {
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { return .unreadable(String(cString: strerror(errno))) }  // EISDIR, EIO
            if n == 0 { break }
            bytes += buffer[..<n]
        }
        return .bytes(bytes)
    }

    public struct Failure: Error, CustomStringConvertible, Equatable {
        public let path: String
        public let reason: String
        public var description: String { "cannot write \(path): \(reason)" }
    }

    /// The lock file `whileLocked` takes for `path` (`.NAME.lock` beside it), and its directory.
    public static func lockFile(of path: String) -> (directory: String, path: String) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        return (directory, "\(directory)/.\(name).lock")
    }

    /// Runs `body` holding an exclusive lock on `path`'s lock file beside it (`.NAME.lock`, mode 0600, made if
    /// missing): the one writer of a file that several processes read, change and write back (the running speaker
    /// and `enroll`), so that a change one of them made is never written over by another's older copy. A lock file
    /// rather than the file itself, which each write replaces. Waits for a holder to finish (their holds are short).
    public static func whileLocked<T>(_ path: String, _ body: () throws -> T) throws -> T {
        let (directory, lockPath) = lockFile(of: path)
        try makeDirectories(directory.isEmpty ? "/" : directory)
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(path: lockPath, reason: String(cString: strerror(errno))) }
        defer { close(fd) }  // which lets the lock go
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw Failure(path: lockPath, reason: "flock: \(String(cString: strerror(errno)))") }
        }
        return try body()
    }

    /// Writes `bytes` to `path` (mode `mode`, and `owner`'s user and group when given), making the directory if needed.
    public static func write(_ bytes: [UInt8], to path: String, mode: UInt32 = 0o600, owner: (user: UInt32, group: UInt32)? = nil) throws(Failure) {
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[..<$0]) } ?? "."
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        try makeDirectories(directory.isEmpty ? "/" : directory)
        let temporary = "\(directory)/.\(name).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode_t(mode))
        guard fd >= 0 else { throw Failure(path: temporary, reason: String(cString: strerror(errno))) }
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, bytes.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                let reason = String(cString: strerror(errno))
                close(fd)
                unlink(temporary)
                throw Failure(path: temporary, reason: reason)
            }
            written += n
        }
        _ = fchmod(fd, mode_t(mode))  // whatever the umask said
        // Only when it differs from who writes: a service's seccomp filter (~@privileged) refuses even a chown to itself.
        if let owner, owner.user != geteuid() || owner.group != getegid(), fchown(fd, uid_t(owner.user), gid_t(owner.group)) != 0 {
            let reason = String(cString: strerror(errno))
            close(fd)
            unlink(temporary)
            throw Failure(path: temporary, reason: "chown: \(reason)")
        }
        guard fsync(fd) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            unlink(temporary)
            throw Failure(path: temporary, reason: "fsync: \(reason)")
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw Failure(path: path, reason: reason)
        }
        let dir = open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if dir >= 0 {
            _ = fsync(dir)
            close(dir)
        }
    }

    static func makeDirectories(_ directory: String) throws(Failure) {
        var info = stat()
        if stat(directory, &info) == 0 { return }
        if let slash = directory.lastIndex(of: "/"), slash != directory.startIndex {
            try makeDirectories(String(directory[..<slash]))
        }
        if mkdir(directory, 0o700) != 0 && errno != EEXIST {
            throw Failure(path: directory, reason: String(cString: strerror(errno)))
        }
    }
}
