/// A device the speaker holds that can go away while it runs (a GPIO chip unbound, a HAT's driver reloaded) and
/// come back: when to look for it again, with backoff, and whether to say so, once per outage. Pure: the board
/// thread (BoardRunner) asks it after each failure and each success.
public struct DeviceOutage: Sendable, Equatable {
    /// The wait before the first look after the device went away; each failed look doubles it, up to `maximum`.
    public let first: Duration
    public let maximum: Duration
    /// The wait before the next look; nil while the device works.
    public private(set) var nextWait: Duration?
    /// Failed looks in this outage (0: none yet, or no outage).
    public private(set) var failedLooks = 0

    public init(first: Duration = .milliseconds(250), maximum: Duration = .seconds(5)) {
        precondition(first > .zero && maximum >= first, "an outage's backoff needs 0 < first <= maximum")
        self.first = first
        self.maximum = maximum
    }

    public var isDown: Bool { nextWait != nil }

    /// The device failed (it went away, or a look found it still missing): whether this begins an outage (say
    /// so; later failures of the same outage say nothing) and how long to wait before looking again.
    public mutating func failed() -> (beginsOutage: Bool, wait: Duration) {
        guard let current = nextWait else {
            nextWait = first
            return (true, first)
        }
        failedLooks += 1
        let wait = min(current * 2, maximum)
        nextWait = wait
        return (false, wait)
    }

    /// The device works again: whether it had been down (say it is back).
    public mutating func recovered() -> Bool {
        defer { nextWait = nil; failedLooks = 0 }
        return nextWait != nil
    }
}
