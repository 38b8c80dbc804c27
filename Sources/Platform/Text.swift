// The few string helpers the speaker took from full Foundation (NSString's format and trimming), on the C
// library and the standard library instead: see Threads.swift for why.
import Glibc

extension String {
    /// printf-style formatting of numbers (`%d`, `%.3f`, `%03o`, `%02x`, ...), as C's vsnprintf does it.
    /// Strings go in by interpolation, not `%s` or `%@`.
    public init(cFormat format: String, _ arguments: any CVarArg...) {
        let needed = withVaList(arguments) { vsnprintf(nil, 0, format, $0) }
        guard needed > 0 else {
            self = ""
            return
        }
        var buffer = [CChar](repeating: 0, count: Int(needed) + 1)
        _ = withVaList(arguments) { vsnprintf(&buffer, buffer.count, format, $0) }
        self = String(decoding: buffer.prefix(Int(needed)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Which characters `trimmed` removes from the ends.
public struct TrimmedCharacters: Sendable {
    let contains: @Sendable (Character) -> Bool

    /// Spaces and tabs (not newlines).
    public static let whitespaces = TrimmedCharacters { $0.isWhitespace && !$0.isNewline }
    public static let whitespacesAndNewlines = TrimmedCharacters { $0.isWhitespace }

    public init(charactersIn characters: String) {
        let set = Set(characters)
        contains = { set.contains($0) }
    }

    init(_ contains: @escaping @Sendable (Character) -> Bool) { self.contains = contains }
}

extension StringProtocol {
    /// The string without the given characters at either end.
    public func trimmed(_ characters: TrimmedCharacters = .whitespacesAndNewlines) -> String {
        guard let first = firstIndex(where: { !characters.contains($0) }),
              let last = lastIndex(where: { !characters.contains($0) }) else { return "" }
        return String(self[first...last])
    }
}
