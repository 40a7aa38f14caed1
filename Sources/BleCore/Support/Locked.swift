import BleDBus
import Foundation

/// A value behind a lock, for the few things read from any thread (delegates, log level):
/// BleDBus's lock, which ThreadSanitizer understands.
typealias Locked<Value> = LoopLock<Value>

// Unchecked: the value (a delegate, a restore dictionary) is handed from the loop to the app's
// callback queue and used only there; that queue is the app's (any `DispatchQueue`), so no
// thread check is possible the way `LoopBound` checks the loop's. Requiring Sendable would
// change the CoreBluetooth-shaped public API.
/// Moves a value from the loop to the callback queue that delivers it to the app. What goes
/// to the loop travels in BleRuntime's checked `LoopBound` instead.
package struct Unchecked<Value>: @unchecked Sendable {
    package let value: Value
    @inlinable package init(_ value: Value) { self.value = value }
}
