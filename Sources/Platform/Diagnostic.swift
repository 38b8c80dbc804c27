/// One line of `hound-speaker doctor`: each subsystem checks itself (`diagnostics()` beside its driver) and the
/// doctor only prints what they say.
public struct Diagnostic: Sendable, Equatable, CustomStringConvertible {
    public enum Status: String, Sendable {
        /// Works as the speaker will use it.
        case ok
        /// The speaker will not work until this is fixed (`advice` says how).
        case fail
        /// Works, but worth fixing.
        case warn
        /// A fact for the owner (versions, devices found).
        case info
    }

    public var status: Status
    public var summary: String
    /// What to do about a failure; "" when there is nothing to add.
    public var advice: String

    public init(_ status: Status, _ summary: String, advice: String = "") {
        self.status = status
        self.summary = summary
        self.advice = advice
    }

    /// `ok` or `fail` from a check's result.
    public static func check(_ passed: Bool, _ summary: String, advice: String = "") -> Diagnostic {
        Diagnostic(passed ? .ok : .fail, summary, advice: advice)
    }

    /// The doctor's line: "ok   what", "FAIL what" with "     -> advice" under it, "warn what", "info what".
    public var description: String {
        let label = switch status {
        case .ok: "ok  "
        case .fail: "FAIL"
        case .warn: "warn"
        case .info: "info"
        }
        return "\(label) \(summary)" + (status == .fail && !advice.isEmpty ? "\n     -> \(advice)" : "")
    }
}
