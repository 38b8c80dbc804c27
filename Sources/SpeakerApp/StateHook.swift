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
        var environment = ProcessInfo.processInfo.environment
        // The key is the speaker's secret: no hook (a script of anyone's) gets it.
        environment["HOUNDIFY_CLIENT_KEY"] = nil
        environment["HOUND_SPEAKER_STATE"] = state
        environment["HOUND_SPEAKER_PREVIOUS_STATE"] = previous
        let shell: [String] = ["/bin/sh", "-c", command]
        let arguments: [UnsafeMutablePointer<CChar>?] = shell.map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (arguments + envp).forEach { free($0) } }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, "/bin/sh", nil, nil, arguments, envp)
        guard status == 0 else {
            logger.warning("state hook \"\(command)\": cannot start /bin/sh: \(String(cString: strerror(status)))")
            return
        }
        let child = pid
        OwnedThread.start(name: "hs-hook") {
            var result: Int32 = 0
            while waitpid(child, &result, 0) < 0 && errno == EINTR {}
        }
    }
}
