import FoundationEssentials
import Glibc
public import Logging
import Platform
public import SpeakerCore

/// The optional command run on each state change (as wyoming-satellite's hooks): `/bin/sh -c COMMAND` with the
/// states in its environment, not waited for by the loop, so a slow hook cannot stall the speaker; an owned
/// thread reaps it so no zombie is left.
public enum StateHook {
    /// An observer of the loop's activity that runs `command` on every state change ("" = none).
    public static func observer(_ command: String, logger: Logger) -> (@Sendable (SpeakerActivity) -> Void)? {
        guard !command.isEmpty else { return nil }
        return { activity in
            if case .stateChanged(let from, let to) = activity { run(command, state: to.rawValue, previous: from.rawValue, logger: logger) }
        }
    }

    /// `baseEnvironment`: what the hook's environment is made from (this process's; tests give their own).
    /// `ended`: told the hook's exit status (tests).
    static func run(_ command: String, state: String, previous: String, logger: Logger,
                    baseEnvironment: [String: String] = ProcessInfo.processInfo.environment,
                    ended: (@Sendable (Int32) -> Void)? = nil) {
        let environment = ChildProcess.environment(adding: ["HOUND_SPEAKER_STATE": state, "HOUND_SPEAKER_PREVIOUS_STATE": previous],
                                                   base: baseEnvironment)
        if case .failure(let error) = ChildProcess.shell(command, environment: environment, threadName: "hs-hook", ended: ended) {
            logger.warning("state hook \"\(command)\": cannot start /bin/sh: \(error)")
        }
    }
}

/// The owner's commands (`[[houndify.client_match]] run`): `/bin/sh -c COMMAND` with the credentials kept out of
/// its environment (ChildProcess), not waited for by the loop; an owned thread reaps it and reports its status.
public struct ShellCommands: CommandPort {
    let logger: Logger
    /// What the environment is made from (nil: this process's; tests give their own).
    let baseEnvironment: [String: String]?
    public init(logger: Logger, baseEnvironment: [String: String]? = nil) {
        self.logger = logger
        self.baseEnvironment = baseEnvironment
    }

    public func run(_ command: String, ended: @escaping @Sendable (Result<Int32, DeviceProblem>) -> Void) {
        let environment = ChildProcess.environment(base: baseEnvironment ?? ProcessInfo.processInfo.environment)
        switch ChildProcess.shell(command, environment: environment, threadName: "hs-command", ended: { ended(.success($0)) }) {
        case .success(let child): logger.info("command \"\(command)\" started (pid \(child))")
        case .failure(let error): ended(.failure(DeviceProblem("command \"\(command)\": cannot start /bin/sh: \(error)")))
        }
    }
}
