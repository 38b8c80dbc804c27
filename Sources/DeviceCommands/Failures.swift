public import Audio
public import CommandSupport
public import DeviceAssembly

extension CommandFailure {
    /// A part of the speaker that could not be made: the config's mistake exits 78 (EX_CONFIG), which the service
    /// unit does not restart on (restarting cannot mend it); anything else 1, and the unit tries again.
    public init(_ error: AssemblyError) {
        self.init(message: error.message, exitCode: error.kind == .configuration ? 78 : 1)
    }

    /// A recording that is missing, unreadable or not audio is bad input: exit 66 (EX_NOINPUT), as README says.
    public init(reading error: AudioFileError) {
        switch error {
        case .cannotOpen, .notPCM, .empty: self.init(message: error.description, exitCode: 66)
        case .resampler, .cannotWrite, .library: self.init(message: error.description)
        }
    }
}
