import Foundation
import Synchronization

/// A playback PCM's output file made a named pipe that is read at a set pace, so that what the speaker plays takes
/// time as it does on a sound card. The `file` PCMs over the null PCM (TestALSA) take audio as fast as it comes:
/// a 25 s answer is "played" in a fraction of a second, and a test of stopping it part way races the writer.
/// Reading the pipe at `bytesPerSecond` holds the writer (ALSA's blocking write into a full pipe) to that pace.
public final class PacedSink: Sendable {
    public let path: String
    private let bytesPerSecond: Int
    private let state = Mutex<(data: [UInt8], stopping: Bool, held: Bool)>(([], false, false))
    private let finished = DispatchSemaphore(value: 0)

    /// Makes the pipe at `path` (replacing whatever was there) and starts reading it on a thread of its own.
    public init(path: String, bytesPerSecond: Int) throws {
        self.path = path
        self.bytesPerSecond = bytesPerSecond
        unlink(path)
        guard mkfifo(path, 0o600) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        let thread = Thread { [self] in read() }
        thread.start()
    }

    private func read() {
        defer { finished.signal() }
        let chunk = 1024
        var buffer = [UInt8](repeating: 0, count: chunk)
        while !state.withLock({ $0.stopping }) {
            // Blocks until a writer opens it (each sound opens the PCM anew); EOF when that writer closes it.
            var fd: Int32
            repeat { fd = open(path, O_RDONLY | O_CLOEXEC) } while fd < 0 && errno == EINTR
            guard fd >= 0 else { return }
            while true {
                // Held: the writer blocks once the pipe is full, as on a sound card that has stopped taking samples.
                while state.withLock({ $0.held && !$0.stopping }) { usleep(5_000) }
                var n: Int
                repeat { n = buffer.withUnsafeMutableBytes { Foundation.read(fd, $0.baseAddress, chunk) } } while n < 0 && errno == EINTR
                if n <= 0 { break }
                state.withLock { $0.data.append(contentsOf: buffer[0..<n]) }
                usleep(useconds_t(n * 1_000_000 / bytesPerSecond))
            }
            close(fd)
        }
    }

    /// Stops reading until `release()`: what is being played cannot end, however long a test takes to look.
    public func hold() { state.withLock { $0.held = true } }

    public func release() { state.withLock { $0.held = false } }

    /// Everything read so far, as 16-bit little-endian samples.
    public var samples: [Int16] {
        state.withLock { s in
            s.data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self).prefix(s.data.count / 2)) }
        }
    }

    /// Stops reading once no one writes (call after the speaker has stopped), and removes the pipe.
    public func stop() {
        state.withLock { $0.stopping = true }
        // A reader waiting in open() for the next writer is let go by a writer that opens and closes at once.
        let fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        if fd >= 0 { close(fd) }
        _ = finished.wait(timeout: .now() + 10)
        unlink(path)
    }
}
