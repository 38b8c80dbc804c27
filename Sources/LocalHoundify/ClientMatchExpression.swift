import JSONKit

/// Houndify's expression syntax for ClientMatches, as far as owners write it: quoted words, `.` for "followed by",
/// `|` for "or", `( )` for grouping and `[ ]` for "optional" (e.g. `("turn" . "on" | "switch" . "on") . "the" .
/// ["porch"] . "light"`). The local service matches a whole transcript against it, ignoring case and punctuation.
struct ClientMatchExpression {
    indirect enum Node {
        case words([String])
        case sequence([Node])
        case choice([Node])
        case optional(Node)
    }

    let root: Node

    /// Nil when the expression is not in this syntax.
    init?(_ text: String) {
        var parser = Parser(characters: Array(text))
        guard let node = parser.choice(), parser.atEnd else { return nil }
        root = node
    }

    /// The whole of `transcript` matches.
    func matches(_ transcript: String) -> Bool {
        let words = Self.words(transcript)
        return Self.ends(root, words, from: 0).contains(words.count)
    }

    static func words(_ text: String) -> [String] {
        text.lowercased().split(whereSeparator: { !$0.isLetter && !$0.isNumber && $0 != "'" }).map(String.init)
    }

    /// Where a match of `node` starting at `start` can end.
    private static func ends(_ node: Node, _ words: [String], from start: Int) -> Set<Int> {
        switch node {
        case .words(let wanted):
            guard start + wanted.count <= words.count, Array(words[start..<start + wanted.count]) == wanted else { return [] }
            return [start + wanted.count]
        case .sequence(let parts):
            var positions: Set<Int> = [start]
            for part in parts { positions = Set(positions.flatMap { ends(part, words, from: $0) }) }
            return positions
        case .choice(let options):
            return Set(options.flatMap { ends($0, words, from: start) })
        case .optional(let inner):
            return ends(inner, words, from: start).union([start])
        }
    }

    private struct Parser {
        let characters: [Character]
        var index = 0

        var atEnd: Bool {
            mutating get { skipSpaces(); return index == characters.count }
        }

        mutating func skipSpaces() { while index < characters.count, characters[index].isWhitespace { index += 1 } }

        mutating func take(_ c: Character) -> Bool {
            skipSpaces()
            guard index < characters.count, characters[index] == c else { return false }
            index += 1
            return true
        }

        mutating func choice() -> Node? {
            guard let first = sequence() else { return nil }
            var options = [first]
            while take("|") {
                guard let next = sequence() else { return nil }
                options.append(next)
            }
            return options.count == 1 ? first : .choice(options)
        }

        mutating func sequence() -> Node? {
            guard let first = term() else { return nil }
            var parts = [first]
            while take(".") {
                guard let next = term() else { return nil }
                parts.append(next)
            }
            return parts.count == 1 ? first : .sequence(parts)
        }

        mutating func term() -> Node? {
            if take("(") {
                guard let inner = choice(), take(")") else { return nil }
                return inner
            }
            if take("[") {
                guard let inner = choice(), take("]") else { return nil }
                return .optional(inner)
            }
            guard take("\"") else { return nil }
            var text = ""
            while index < characters.count, characters[index] != "\"" { text.append(characters[index]); index += 1 }
            guard index < characters.count else { return nil }
            index += 1
            let words = ClientMatchExpression.words(text)
            return words.isEmpty ? nil : .words(words)
        }
    }
}

extension AnswerBook {
    /// The first of the request's ClientMatches whose expression matches, answered as Houndify does: a
    /// ClientMatchCommand with that match's `Result` and responses.
    func clientMatch(_ query: String, requestInfo: [String: JSONValue]) -> [String: JSONValue]? {
        for match in requestInfo["ClientMatches"]?.arrayValue ?? [] {
            guard let text = match["Expression"]?.stringValue, let expression = ClientMatchExpression(text),
                  expression.matches(query) else { continue }
            var result: [String: JSONValue] = ["CommandKind": "ClientMatchCommand", "Result": match["Result"] ?? .null,
                                               "AutoListen": false, "ViewType": ["Native", "None"]]
            for key in ["SpokenResponse", "SpokenResponseLong", "WrittenResponse", "WrittenResponseLong"] {
                result[key] = match[key] ?? ""
            }
            return result
        }
        return nil
    }
}
