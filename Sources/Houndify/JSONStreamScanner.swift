public import FoundationEssentials
import Glibc

/// Splits a byte stream into consecutive top-level JSON objects, however the bytes are cut into reads.
///
/// Houndify's voice response is a sequence of compact JSON messages; HTTP chunk boundaries are not a reliable
/// frame (libcurl hands over de-chunked data in arbitrary pieces), so the scanner tracks brace depth, strings and
/// escapes. Between values it skips whitespace and bare decimal integer lines (the `ObjectByteCountPrefix`
/// framing some SDKs request: docs/houndify-protocol.md, "Response framing"). Scanning resumes where the
/// previous call stopped, so each byte is examined once.
public struct JSONStreamScanner: Sendable {
    public enum ScanError: Error, Equatable, CustomStringConvertible {
        case unexpectedByte(UInt8, offset: Int)
        case messageTooLarge(limit: Int)
        public var description: String {
            switch self {
            case .unexpectedByte(let b, let offset):
                "unexpected byte 0x\(String(b, radix: 16)) (\(b >= 0x20 && b < 0x7F ? "'\(Character(Unicode.Scalar(b)))'" : "control")) at offset \(offset) between messages"
            case .messageTooLarge(let limit): "a message is larger than \(limit) bytes"
            }
        }
    }

    public let maxMessageBytes: Int
    private var buffer: [UInt8] = []
    private var position = 0          // next byte to examine
    private var start: Int? = nil     // start of the current value, if inside one
    private var depth = 0
    private var inString = false
    private var escaped = false
    private var inIntegerLine = false
    private var consumed = 0          // bytes dropped from the front, for error offsets

    public init(maxMessageBytes: Int = 4 << 20) {
        self.maxMessageBytes = maxMessageBytes
    }

    /// True when bytes of an unfinished message are held (a stream that ends now was cut short).
    public var hasPartialMessage: Bool { start != nil }

    /// Adds bytes and returns every message completed by them.
    public mutating func feed<Bytes: Sequence>(_ bytes: Bytes) throws(ScanError) -> [Data] where Bytes.Element == UInt8 {
        buffer.append(contentsOf: bytes)
        var messages: [Data] = []
        while position < buffer.count {
            let byte = buffer[position]
            if let begin = start {
                if inString {
                    if escaped { escaped = false } else if byte == 0x5C { escaped = true } else if byte == 0x22 { inString = false }
                } else if byte == 0x22 {
                    inString = true
                } else if byte == 0x7B || byte == 0x5B {
                    depth += 1
                } else if byte == 0x7D || byte == 0x5D {
                    depth -= 1
                    if depth == 0 {
                        messages.append(Data(buffer[begin...position]))
                        start = nil
                    }
                }
                position += 1
                if let begin = start, position - begin > maxMessageBytes {
                    throw .messageTooLarge(limit: maxMessageBytes)
                }
                continue
            }
            if inIntegerLine {
                if byte == 0x0A { inIntegerLine = false } else if !(byte >= 0x30 && byte <= 0x39) && byte != 0x0D && byte != 0x20 {
                    throw .unexpectedByte(byte, offset: consumed + position)
                }
            } else if byte == 0x7B {
                start = position
                depth = 1
            } else if byte >= 0x30 && byte <= 0x39 {
                inIntegerLine = true
            } else if !(byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09) {
                throw .unexpectedByte(byte, offset: consumed + position)
            }
            position += 1
        }
        // Drop what is no longer needed so the buffer holds at most one unfinished message.
        let keepFrom = start ?? position
        if keepFrom > 0 {
            buffer.removeFirst(keepFrom)
            consumed += keepFrom
            position -= keepFrom
            if start != nil { start = 0 }
        }
        return messages
    }
}
