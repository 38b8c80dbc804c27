import CSystemd
import Glibc
import Synchronization

/// Talks to systemd when the speaker runs as a `Type=notify` service (deploy/hound-speaker.service): READY=1 once
/// the event loop runs, WATCHDOG=1 from that loop, STOPPING=1 on the way out. Outside systemd (no
/// NOTIFY_SOCKET) every call does nothing, as sd_notify does.
public final class ServiceNotifier: Sendable {
    private let readySent = Atomic<Bool>(false)

    public init() {}

    /// Whether a service manager is listening (NOTIFY_SOCKET is set, as systemd does for Type=notify units).
    public var isActive: Bool { getenv("NOTIFY_SOCKET") != nil }

    /// How often the service manager wants WATCHDOG=1 (`WatchdogSec=`), nil when it does not watch. Pings go at
    /// half of it, as sd_watchdog_enabled(3) advises, so one late ping is not a restart.
    public var watchdogInterval: Duration? {
        var usec: UInt64 = 0
        guard sd_watchdog_enabled(0, &usec) > 0, usec > 0 else { return nil }
        return .microseconds(Int64(clamping: usec))
    }

    /// Sends one notification (newline-separated assignments such as "READY=1\nSTATUS=..."). Returns false when
    /// it could not be sent; a speaker outside systemd has nobody to tell, which is not an error.
    @discardableResult
    public func notify(_ state: String) -> Bool {
        sd_notify(0, state) >= 0
    }

    /// A beat from the running event loop: the first says READY=1 (with `status` for `systemctl status`), the
    /// others WATCHDOG=1.
    public func loopAlive(status: String) {
        if readySent.exchange(true, ordering: .acquiringAndReleasing) {
            notify("WATCHDOG=1")
        } else {
            notify("READY=1\nSTATUS=\(status)")
        }
    }

    public func stopping() { notify("STOPPING=1\nSTATUS=stopping") }
}
