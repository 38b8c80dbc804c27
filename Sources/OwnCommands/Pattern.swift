/// A phrase template of the speaker's own commands, in the notation JSGF uses for a rule's body: words,
/// `[optional words]`, `(one | other)` and `<slot>`s. One template serves both the recogniser (written out as a
/// JSGF grammar) and the matcher that turns the words it heard back into a command.
public indirect enum Pattern: Sendable, Equatable {
    case word(String)
    case slot(Slot)
    case sequence([Pattern])
    case choice([Pattern])
    case optional(Pattern)

    /// Parses a template such as `(set | start) [a] timer for <duration>`; nil (with the reason) if it is malformed.
    public static func parse(_ text: String) throws(PatternError) -> Pattern {
        var parser = Parser(tokens: try tokenize(text), text: text)
        let pattern = try parser.choice()
        guard parser.index == parser.tokens.count else { throw PatternError("\"\(text)\": unexpected \"\(parser.tokens[parser.index])\"") }
        return pattern
    }

    private static func tokenize(_ text: String) throws(PatternError) -> [String] {
        var tokens: [String] = []
        var word = ""
        var slot: String? = nil
        for c in text {
            if var name = slot {
                if c == ">" {
                    tokens.append("<\(name)>")
                    slot = nil
                } else {
                    name.append(c)
                    slot = name
                }
                continue
            }
            if c == "<" || c == "[" || c == "]" || c == "(" || c == ")" || c == "|" || c == " " {
                if !word.isEmpty { tokens.append(word); word = "" }
                if c == "<" { slot = "" } else if c != " " { tokens.append(String(c)) }
            } else {
                word.append(c)
            }
        }
        guard slot == nil else { throw PatternError("\"\(text)\": a slot is not closed with >") }
        if !word.isEmpty { tokens.append(word) }
        return tokens
    }

    private struct Parser {
        let tokens: [String]
        let text: String
        var index = 0

        mutating func choice() throws(PatternError) -> Pattern {
            var options = [try sequence()]
            while index < tokens.count, tokens[index] == "|" {
                index += 1
                options.append(try sequence())
            }
            return options.count == 1 ? options[0] : .choice(options)
        }

        mutating func sequence() throws(PatternError) -> Pattern {
            var items: [Pattern] = []
            while index < tokens.count, !["|", ")", "]"].contains(tokens[index]) {
                let token = tokens[index]
                index += 1
                switch token {
                case "(", "[":
                    let inner = try choice()
                    let close = token == "(" ? ")" : "]"
                    guard index < tokens.count, tokens[index] == close else { throw PatternError("\"\(text)\": \(token) is not closed") }
                    index += 1
                    items.append(token == "(" ? inner : .optional(inner))
                default:
                    if token.hasPrefix("<") {
                        let name = String(token.dropFirst().dropLast())
                        guard let slot = Slot(rawValue: name) else { throw PatternError("\"\(text)\": no slot <\(name)>") }
                        items.append(.slot(slot))
                    } else {
                        guard token == token.lowercased() else { throw PatternError("\"\(text)\": \"\(token)\" is not lower case") }
                        items.append(.word(token))
                    }
                }
            }
            guard !items.isEmpty else { throw PatternError("\"\(text)\": an empty alternative") }
            return items.count == 1 ? items[0] : .sequence(items)
        }
    }

    /// Every word the pattern can produce (its slots' words included).
    public var words: Set<String> {
        switch self {
        case .word(let w): [w]
        case .slot(let s): s.pattern.words
        case .sequence(let items), .choice(let items): items.reduce(into: Set<String>()) { $0.formUnion($1.words) }
        case .optional(let p): p.words
        }
    }

    /// The rule body in JSGF.
    public var jsgf: String {
        switch self {
        case .word(let w): w
        case .slot(let s): "<\(s.rawValue)>"
        case .sequence(let items): items.map { item in
            if case .choice = item { "(\(item.jsgf))" } else { item.jsgf }
        }.joined(separator: " ")
        case .choice(let items): items.map(\.jsgf).joined(separator: " | ")
        case .optional(let p): "[\(p.jsgf)]"
        }
    }

    /// One way through the pattern: where it ended and the slots it filled (word ranges of the input).
    struct Path {
        var end: Int
        var captures: [(slot: Slot, range: Range<Int>)]
    }

    /// Every way the pattern matches `words` from `start`.
    func paths(_ words: [String], from start: Int) -> [Path] {
        switch self {
        case .word(let w):
            return start < words.count && words[start] == w ? [Path(end: start + 1, captures: [])] : []
        case .slot(let s):
            return s.pattern.paths(words, from: start).map { Path(end: $0.end, captures: [(s, start..<$0.end)]) }
        case .sequence(let items):
            var paths = [Path(end: start, captures: [])]
            for item in items {
                paths = paths.flatMap { p in
                    item.paths(words, from: p.end).map { Path(end: $0.end, captures: p.captures + $0.captures) }
                }
                if paths.isEmpty { return [] }
            }
            return paths
        case .choice(let items):
            return items.flatMap { $0.paths(words, from: start) }
        case .optional(let p):
            return [Path(end: start, captures: [])] + p.paths(words, from: start)
        }
    }
}

public struct PatternError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ d: String) { description = d }
}
