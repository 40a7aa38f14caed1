import Foundation

/// A lock around a value, built on `NSLock` (pthread mutexes), which ThreadSanitizer
/// understands: `Synchronization.Mutex` on Linux is invisible to it, and every enqueue onto the
/// loop would be reported as a race. The layers above use it for state that user code may read
/// from any thread; the value itself need not be `Sendable`, the lock is what makes sharing safe.
public final class LoopLock<Value>: @unchecked Sendable {
    private let lock = NSLock()
    // Unchecked: every access is under `lock`, which already makes it exclusive; the runtime's
    // own exclusivity check was a second, thread-local bookkeeping per access, several per event.
    @exclusivity(unchecked) private var stored: Value

    /// Guards `value`.
    public init(_ value: Value) {
        stored = value
    }

    /// The value, read or replaced under the lock.
    public var value: Value {
        get { withLock { $0 } }
        set { withLock { $0 = newValue } }
    }

    /// Runs `body` with exclusive access to the value.
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&stored)
    }
}
