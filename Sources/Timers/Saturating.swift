/// Whole numbers from Doubles without traps. `Int(_:)` traps on NaN, on infinity and on anything beyond Int's
/// range, and the Doubles here can come from outside: Houndify's JSON, a control client, a damaged timers file, or
/// arithmetic on them (issue #34: one spoken number crashed the speaker at every start).
public enum Saturating {
    /// `value` rounded by `rule` and brought into `range`; NaN gives `range.lowerBound` (the least it can mean).
    public static func int(_ value: Double, _ rule: FloatingPointRoundingRule = .toNearestOrAwayFromZero,
                           in range: ClosedRange<Int> = Int.min...Int.max) -> Int {
        guard !value.isNaN else { return range.lowerBound }
        let rounded = value.rounded(rule)
        // Double(Int.max) is 2^63, one past Int.max: `>=` keeps it out of Int(_:).
        if rounded <= Double(range.lowerBound) { return range.lowerBound }
        if rounded >= Double(range.upperBound) { return range.upperBound }
        return min(max(Int(rounded), range.lowerBound), range.upperBound)
    }
}
