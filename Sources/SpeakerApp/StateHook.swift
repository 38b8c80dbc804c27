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

    static func run(_ command: String, state: String, previous: String, logger: Logger) {
        let environment = ChildProcess.environment(adding: ["HOUND_SPEAKER_STATE": state, "HOUND_SPEAKER_PREVIOUS_STATE": previous])
        let child: pid_t
        switch ChildProcess.spawn("/bin/sh", arguments: ["/bin/sh", "-c", command], environment: environment) {
        case .success(let pid): child = pid
        case .failure(let error):
            logger.warning("state hook \"\(command)\": cannot start /bin/sh: \(error)")
            return
        }
        OwnedThread.start(name: "hs-hook") {
            var result: Int32 = 0
            while waitpid(child, &result, 0) < 0 && errno == EINTR {}
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
        let child: pid_t
        switch ChildProcess.spawn("/bin/sh", arguments: ["/bin/sh", "-c", command], environment: ChildProcess.environment(base: baseEnvironment ?? ProcessInfo.processInfo.environment)) {
        case .success(let pid): child = pid
        case .failure(let error):
            ended(.failure(DeviceProblem("command \"\(command)\": cannot start /bin/sh: \(error)")))
            return
        }
        logger.info("command \"\(command)\" started (pid \(child))")
        OwnedThread.start(name: "hs-command") {
            var result: Int32 = 0
            while waitpid(child, &result, 0) < 0 && errno == EINTR {}
            // WIFEXITED / WEXITSTATUS, which Swift does not import: the low 7 bits are the signal, bits 8-15 the status.
            let signal = result & 0x7f
            ended(signal == 0 ? .success((result >> 8) & 0xff) : .success(128 + signal))
        }
    }
}
