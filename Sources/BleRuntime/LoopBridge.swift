import Dispatch
import Foundation

/// The one way BleKit's own code gets onto the loop from any thread. Two meanings, each with
/// its own name: `async` runs at once when the caller is already on the loop thread (a write
/// issued inside a callback reaches BlueZ with no queue hop) and queues otherwise; `later`
/// always queues, behind the work queued before it (for work that must not run inside the
/// caller's call). `sync` waits for the result. `BleLoop.perform` and `MainLoop.perform` are
/// the public primitives under them, for apps.
package enum LoopBridge {
    /// Runs `body` on the loop and returns its result: directly when already on the loop
    /// thread, otherwise by waiting for the loop (which never waits on other threads, so this
    /// cannot deadlock).
    package static func sync<T>(_ body: @BleLoop () -> T) -> T {
        if MainLoop.shared.isCurrent {
            // On the loop thread (checked just above), the isolated body runs as it is: no box,
            // no closure context (`characteristic.value` read inside a callback comes here).
            typealias Plain = () -> T
            return withoutActuallyEscaping(body) { unsafeBitCast($0, to: Plain.self)() }
        }
        return withoutActuallyEscaping(body) { escapable in
            // The loop drops its reference to `escapable` before signalling: the work item that
            // carried it may outlive this call inside the loop's queue, and a closure that is
            // still referenced when `withoutActuallyEscaping` ends traps.
            let box = ClosureBox(escapable)
            let result = LoopLock<T?>(nil)
            let done = DispatchSemaphore(value: 0)
            BleLoop.perform {
                result.value = box.take()?()
                done.signal()
            }
            done.wait()
            return result.value!
        }
    }

    /// Runs `body` at once as an inline call; only on the loop thread (callers check
    /// `MainLoop.shared.isCurrent`). Not escaping, so the caller allocates nothing to carry it:
    /// the hot calls (a write from inside a notification callback) come this way.
    package static func inline(_ body: @BleLoop () -> Void) {
        BleLoop.assumeIsolated { InlineCall.run(body) }
    }

    /// Runs `body` on the loop: at once when called on the loop thread (from inside a
    /// callback, say: a write issued there reaches BlueZ with no queue hop), otherwise queued
    /// onto the loop in call order.
    package static func async(_ body: @escaping @BleLoop () -> Void) {
        if MainLoop.shared.isCurrent {
            return BleLoop.assumeIsolated { InlineCall.run(body) }
        }
        let box = LoopBound(body)
        BleLoop.perform { box.value() }
    }

    /// Runs `body` on the loop after everything queued before it — also when called on the
    /// loop thread, where it never runs inline.
    package static func later(_ body: @escaping @BleLoop @Sendable () -> Void) {
        BleLoop.perform(body)
    }
}

/// Holds a closure until the loop takes it, so no reference to it remains afterwards.
private final class ClosureBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var body: (@BleLoop () -> T)?

    init(_ body: @escaping @BleLoop () -> T) { self.body = body }

    func take() -> (@BleLoop () -> T)? {
        lock.lock()
        defer { lock.unlock() }
        let taken = body
        body = nil
        return taken
    }
}
