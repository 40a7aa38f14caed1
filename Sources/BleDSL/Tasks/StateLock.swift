import Foundation

/// A lock around state that user code reads from any thread (as CoreBluetooth objects allow).
/// The values it holds (user protocol objects, closures) are not `Sendable`; the lock is what
/// makes sharing them safe, so the wrapper is `@unchecked Sendable`.
final class StateLock<Value>: @unchecked Sendable {
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
