import Glibc

/// write(2) until all of `text` is out (a pipe may take part of it); unbuffered, so lines from the loop and
/// from the owned threads never sit in a buffer when the process is killed.
public func writeAll(_ fd: Int32, _ text: String) {
    var bytes = Array(text.utf8)[...]
    while !bytes.isEmpty {
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        if written < 0 {
            if errno == EINTR { continue }
            return  // a closed stdout (a reader that quit): nothing useful to do with the line
        }
        bytes = bytes.dropFirst(written)
    }
}
