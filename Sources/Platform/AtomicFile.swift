import Glibc

/// Writing a small state file so that a power cut leaves either the old content or the new, never a torn or empty
/// file: the bytes go to a temporary file beside it, are flushed to the disk (fsync), renamed over the old one,
/// and the directory is flushed so the rename itself is on the disk. A Pi's power is pulled, not shut down.
public enum AtomicFile {
    public struct Failure: Error, CustomStringConvertible, Equatable {
        public let path: String
        public let reason: String
        public var description: String { "cannot write \(path): \(reason)" }
    }

    /// Writes `bytes` to `path` (mode `mode`), making the directory if needed.
    public static func write(_ bytes: [UInt8], to path: String, mode: UInt32 = 0o600) throws(Failure) {
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
