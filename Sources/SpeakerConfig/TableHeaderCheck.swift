/// Finds a table header whose name does not start with a key (`[)`, `[` at the end of a line, `[[ =`).
///
/// TOMLKit's parser (toml++ 3, in TOMLKit 0.6.0) asserts instead of reporting an error there, which aborts the
/// whole process: a one-character typo in the config would crash every command and make systemd restart the
/// service forever. Found by Tests/fuzz (FuzzConfig). This check runs first and turns that case into an ordinary
/// config error with its line; everything else is left to the TOML parser.
///
/// It lexes just enough TOML to know where a statement starts (strings, multi-line strings, comments, arrays and
/// inline tables that span lines), then looks at the first character of each header's name as toml++ does:
/// after `[`, spaces or tabs, an optional second `[` and more spaces or tabs, a name must begin with a bare-key
/// character (A-Z a-z 0-9 _ -) or a quote; `]` and the end of the file are reported by the parser itself.
enum TableHeaderCheck {
    /// The 1-based line of the first such header, or nil.
    static func firstBadHeaderLine(in text: String) -> Int? {
        let s = Array(text.unicodeScalars)
        var i = 0
        var line = 1
        var atStatementStart = true
        var depth = 0  // open [ and { inside a value

        func at(_ k: Int) -> Unicode.Scalar? { k < s.count ? s[k] : nil }
        func isSpace(_ c: Unicode.Scalar?) -> Bool { c == " " || c == "\t" }
        func isKeyStart(_ c: Unicode.Scalar) -> Bool {
            ("A"..."Z").contains(c) || ("a"..."z").contains(c) || ("0"..."9").contains(c) || c == "_" || c == "-"
                || c == "\"" || c == "'"
        }
        /// Skips a string starting at i (a quote); returns the index after it. Counts the lines it spans.
        func skipString() -> Int {
            let quote = s[i]
            let triple = at(i + 1) == quote && at(i + 2) == quote
            var k = i + (triple ? 3 : 1)
            while k < s.count {
                let c = s[k]
                if c == "\\" && quote == "\"" {
                    if at(k + 1) == "\n" { line += 1 }  // a line-ending backslash in a multi-line string
                    k += 2
                    continue
                }
                if c == "\n" {
                    if !triple { return k }  // an unterminated one-line string: the parser reports it
                    line += 1
                } else if c == quote {
                    if !triple { return k + 1 }
                    if at(k + 1) == quote && at(k + 2) == quote {
                        // Up to two more quotes may belong to the content ("""a"""").
                        var end = k + 3
                        while end < s.count && end < k + 5 && s[end] == quote { end += 1 }
                        return end
                    }
                }
                k += 1
            }
            return k
        }

        while i < s.count {
            let c = s[i]
            if c == "\n" {
                line += 1
                if depth == 0 { atStatementStart = true }
                i += 1
            } else if isSpace(c) || c == "\r" {
                i += 1
            } else if c == "#" {
                while i < s.count && s[i] != "\n" { i += 1 }
            } else if atStatementStart && c == "[" {
                // A table header: check its name's first character, then skip the rest of the line.
                var k = i + 1
                let leadingSpace = isSpace(at(k))
                while isSpace(at(k)) { k += 1 }
                if at(k) == "[" && !leadingSpace {
                    k += 1
                    while isSpace(at(k)) { k += 1 }
                }
                if let first = at(k), first != "]", !isKeyStart(first) { return line }
                while i < s.count && s[i] != "\n" {
                    if s[i] == "\"" || s[i] == "'" { i = skipString() } else { i += 1 }
                }
                atStatementStart = false
            } else if c == "\"" || c == "'" {
                i = skipString()
                atStatementStart = false
            } else {
                if c == "[" || c == "{" { depth += 1 }
                if (c == "]" || c == "}") && depth > 0 { depth -= 1 }
                atStatementStart = false
                i += 1
            }
        }
        return nil
    }
}
