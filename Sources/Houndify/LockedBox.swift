import FoundationEssentials
import Glibc
import Platform

/// A value behind a lock, for state that non-Sendable arguments (unsafe buffers) must reach; `Mutex`'s
/// `sending` rules reject those.
final class LockedBox<Value>: @unchecked Sendable {
    private let lock = Lock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
