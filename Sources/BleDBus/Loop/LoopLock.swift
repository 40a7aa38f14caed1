import Foundation

/// A lock around a value, built on `NSLock` (pthread mutexes), which ThreadSanitizer
/// understands: `Synchronization.Mutex` on Linux is invisible to it, and every enqueue onto the
/// loop would be reported as a race.
final class LoopLock<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
