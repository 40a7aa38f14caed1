import BleDBus
import Foundation

/// A value behind a lock, for the few things read from any thread (delegates, log level):
/// BleDBus's lock, which ThreadSanitizer understands.
typealias Locked<Value> = LoopLock<Value>

// Unchecked: the value (an app's closure, a non-Sendable error or command) is handed from the
// caller's thread to the loop and never touched by the caller again; the checker cannot see a
// hand-over, and requiring Sendable would change the FXBlueTooth-shaped public API.
/// Moves a value that is only ever used on one serial context (the loop, or the callback
/// queue after it) across the concurrency checker's boundary; BleDSL's facades use it too.
package struct Unchecked<Value>: @unchecked Sendable {
    package let value: Value
    @inlinable package init(_ value: Value) { self.value = value }
}
