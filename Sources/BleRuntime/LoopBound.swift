// Unchecked: the value (an app's closure, a non-Sendable command or error) is made on any
// thread and handed to the loop, which alone reads it; the checker cannot see a hand-over,
// so `value` checks the thread at run time instead, in the manner of NIO's `NIOLoopBound`.
/// A value handed to BleKit's loop and read only there: `value` traps when read off the loop
/// thread, so a box that leaks to another thread fails loudly instead of racing.
package struct LoopBound<Value>: @unchecked Sendable {
    private let stored: Value

    /// Wraps `value` on any thread, for the loop to read.
    package init(_ value: Value) { stored = value }

    /// The value; only on the loop thread.
    package var value: Value {
        precondition(MainLoop.shared.isCurrent, "a LoopBound value was read off the BleKit loop thread")
        return stored
    }
}
