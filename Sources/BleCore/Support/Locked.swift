import BleDBus
import Foundation

/// A value behind a lock, for the few things read from any thread (delegates, log level):
/// BleDBus's lock, which ThreadSanitizer understands.
typealias Locked<Value> = LoopLock<Value>

/// Moves a value that is only ever used on one serial context (the loop, or the callback
/// queue after it) across the concurrency checker's boundary.
struct Unchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
