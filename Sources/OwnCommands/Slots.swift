/// What a command's template can leave open, each with its own words (a rule of the grammar) and its value.
public enum Slot: String, Sendable, CaseIterable {
    /// 1-99, and a hundred: "five", "twenty five", "a hundred".
    case number
    /// A length: "five minutes", "an hour and a half", "two hours and ten minutes", "half an hour", "ninety seconds".
    case duration
    /// A time of day: "seven", "seven thirty", "seven a.m.", "half past six", "quarter to eight p.m.", "noon".
    case time
    /// A timer's or an alarm's name, from the names people give kitchen timers.
    case name
    /// "first" to "fifth": which of several timers.
    case ordinal
    /// A volume level of 0-100 ("fifty", "fifty percent").
    case percent

    /// The timer and alarm names the recogniser knows (a closed grammar can only hear words it lists).
    public static let names = ["egg", "eggs", "pasta", "rice", "tea", "coffee", "bread", "pizza", "oven", "cake",
                               "cookie", "cookies", "potato", "potatoes", "chicken", "soup", "laundry", "nap", "homework",
                               "workout", "kitchen", "cooking", "baking", "dinner", "lunch", "breakfast"]

    static let ones = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    static let teens = ["ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
    static let tens = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
    static let ordinals = ["first", "second", "third", "fourth", "fifth"]

    /// The slot's words as a pattern (its rule in the grammar).
    public var pattern: Pattern { Slot.patterns[self]! }

    private static let patterns: [Slot: Pattern] = {
        func alternatives(_ words: [String]) -> String { "(" + words.joined(separator: " | ") + ")" }
        let belowHundred = "(\(alternatives(ones)) | \(alternatives(teens)) | \(alternatives(tens)) [\(alternatives(ones))])"
        let count = "(<number> | a | an)"
        let unit = "(second | seconds | minute | minutes | hour | hours)"
        let hour = alternatives(ones + ["ten", "eleven", "twelve"])
        let minutes = "(o (\(alternatives(ones))) | \(alternatives(Array(teens.dropFirst()))) | (twenty | thirty | forty | fifty) [\(alternatives(ones))])"
        let meridiem = "[a.m. | p.m. | in the morning | in the afternoon | in the evening | at night]"
        let texts: [Slot: String] = [
            .number: "\(belowHundred) | (a | one) hundred",
            .duration: "\(count) \(unit) [and \(count) \(unit)] | \(count) \(unit) and a half | \(count) and a half \(unit) "
                + "| half (an hour | a minute)",
            .time: "\(hour) [o'clock] \(meridiem) | \(hour) \(minutes) \(meridiem) "
                + "| (half past | quarter past | quarter to | \(minutes) (past | to)) \(hour) \(meridiem) | noon | midnight",
            .name: alternatives(names),
            .ordinal: alternatives(ordinals),
            .percent: "<number> [percent] | zero [percent]",
        ]
        return texts.mapValues { text in
            do { return try Pattern.parse(text) } catch { fatalError("a slot's own template: \(error)") }
        }
    }()
}

/// A slot's value, read from the words the recogniser heard in it.
public enum SlotValue: Sendable, Equatable {
    case number(Int)
    case seconds(Int)
    case minuteOfDay(Int)
    case name(String)
}

extension Slot {
    /// The value of `words` (which this slot's pattern matched); nil if they make none (an hour past twelve).
    func value(_ words: ArraySlice<String>) -> SlotValue? {
        switch self {
        case .number: Self.number(words).map { .number($0) }
        case .percent: Self.number(words.filter { $0 != "percent" }[...]).flatMap { $0 <= 100 ? .number($0) : nil }
        case .ordinal: Self.ordinals.firstIndex(of: words.first ?? "").map { .number($0 + 1) }
        case .name: words.first.map { .name($0) }
        case .duration: Self.seconds(words).map { .seconds($0) }
        case .time: Self.minuteOfDay(words).map { .minuteOfDay($0) }
        }
    }

    /// "twenty five" 25, "a hundred" 100, "zero" 0.
    static func number(_ words: ArraySlice<String>) -> Int? {
        var total = 0
        var any = false
        for w in words {
            if let i = ones.firstIndex(of: w) { total += i + 1 }
            else if let i = teens.firstIndex(of: w) { total += i + 10 }
            else if let i = tens.firstIndex(of: w) { total += (i + 2) * 10 }
            else if w == "hundred" { total = max(1, total) * 100 }
            else if w == "a" || w == "an" { total += 1 }
            else if w == "zero" { }
            else { return nil }
            any = true
        }
        return any ? total : nil
    }

    static func unitSeconds(_ word: String) -> Int? {
        switch word {
        case "second", "seconds": 1
        case "minute", "minutes": 60
        case "hour", "hours": 3600
        default: nil
        }
    }

    /// "an hour and a half" 5400, "two hours and ten minutes" 7800, "one and a half minutes" 90, "half an hour" 1800.
    static func seconds(_ words: ArraySlice<String>) -> Int? {
        let w = Array(words)
        if w.first == "half", let unit = w.last.flatMap(unitSeconds) { return unit / 2 }
        var total = 0
        var pending: [String] = []
        var halfPending = false
        var lastUnit: Int? = nil
        var i = 0
        while i < w.count {
            if w[i] == "and", i + 2 < w.count, w[i + 1] == "a", w[i + 2] == "half" {
                // "and a half": of the unit just said, or of the one still to come ("one and a half minutes").
                if pending.isEmpty, let unit = lastUnit { total += unit / 2 } else { halfPending = true }
                i += 3
                continue
            }
            if let unit = unitSeconds(w[i]) {
                guard let n = number(pending[...]) else { return nil }
                total += n * unit + (halfPending ? unit / 2 : 0)
                halfPending = false
                pending = []
                lastUnit = unit
            } else if w[i] != "and" {
                pending.append(w[i])
            }
            i += 1
        }
        guard pending.isEmpty, !halfPending, total > 0 else { return nil }
        return total
    }

    /// Minutes after midnight. Without a.m. or p.m., an hour of 1-6 is taken as afternoon (no one sets an alarm for
    /// 3 at night by saying "three"), 7-11 as morning, as Houndify reads them.
    static func minuteOfDay(_ words: ArraySlice<String>) -> Int? {
        var w = Array(words)
        if w == ["noon"] { return 12 * 60 }
        if w == ["midnight"] { return 0 }
        var pm: Bool? = nil
        let suffixes: [([String], Bool)] = [(["a.m."], false), (["p.m."], true), (["in", "the", "morning"], false),
                                            (["in", "the", "afternoon"], true), (["in", "the", "evening"], true), (["at", "night"], true)]
        for (suffix, isPM) in suffixes where w.count > suffix.count && Array(w.suffix(suffix.count)) == suffix {
            pm = isPM
            w.removeLast(suffix.count)
        }
        var hour: Int
        var minute = 0
        let hours = ones + ["ten", "eleven", "twelve"]
        func minutes(_ words: [String]) -> Int? {
            if words.first == "o", words.count == 2, let i = ones.firstIndex(of: words[1]) { return i + 1 }
            guard let n = number(words[...]), (1...59).contains(n) else { return nil }
            return n
        }
        if let past = w.firstIndex(where: { $0 == "past" || $0 == "to" }) {
            guard past + 1 < w.count, let h = hours.firstIndex(of: w[past + 1]), past + 2 == w.count else { return nil }
            let before = Array(w[..<past])
            let m: Int
            switch before {
            case ["half"]: m = 30
            case ["quarter"]: m = 15
            default: guard let n = minutes(before) else { return nil }; m = n
            }
            hour = h + 1
            if w[past] == "to" {
                hour -= 1
                minute = 60 - m
            } else {
                minute = m
            }
        } else {
            guard let first = w.first, let h = hours.firstIndex(of: first) else { return nil }
            hour = h + 1
            let rest = Array(w.dropFirst()).filter { $0 != "o'clock" }
            if !rest.isEmpty {
                guard let m = minutes(rest) else { return nil }
                minute = m
            }
        }
        hour %= 12  // "twelve" is 0 before a.m./p.m. decide
        let afternoon = pm ?? (hour >= 1 && hour <= 6)
        if afternoon { hour += 12 } else if hour == 0 && pm == nil { hour = 12 }  // plain "twelve": noon
        return hour * 60 + minute
    }
}
