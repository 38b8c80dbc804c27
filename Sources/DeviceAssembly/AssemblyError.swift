/// Why a part of the speaker could not be made from its settings. The assembly says what went wrong and whose it is
/// to mend; the commands choose the exit code (SpeakerCommands' `CommandFailure(_:)`).
public struct AssemblyError: Error, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The config (or the installation) is wrong: no restart mends it.
        case configuration
        /// A device, a library or the system failed: a restart may find it working (a sound card plugged in late,
        /// a GPIO line another program let go).
        case unavailable
    }

    public var kind: Kind
    /// One line that names the problem (and the config key, when it is the config's).
    public var message: String
    public var description: String { message }

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
}
