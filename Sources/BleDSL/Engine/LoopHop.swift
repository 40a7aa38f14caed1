import BleCore
import BleRuntime

/// Gets onto the loop from wherever the caller is.
enum LoopHop {
    /// Runs `body` now when already on the loop thread (inside a callback, say): a command
    /// issued there reaches `WriteValue` with no queue hop. From any other thread it is queued
    /// onto the loop, in order.
    static func run(_ body: @escaping @BleLoop () -> Void) {
        if MainLoop.shared.isCurrent {
            BleLoop.assumeIsolated { InlineCall.run(body) }
        } else {
            let box = UncheckedSendable(body)
            BleLoop.perform { box.value() }
        }
    }
}
