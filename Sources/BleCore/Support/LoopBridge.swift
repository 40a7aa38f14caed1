import BleDBus
import Dispatch
import Foundation

/// How the public facades (BleCore's and BleDSL's) reach `@BleLoop` state from any thread.
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
            let result = Locked<T?>(nil)
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
        let box = Unchecked(body)
        BleLoop.perform { box.value() }
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

/// Where delegate callbacks run: on the loop (default) or on the queue given at init.
///
/// On the loop they run at once, except while the app's own call is running inline (a
/// `writeValue` made inside a callback runs on the spot, with no hop): a callback is never
/// called from inside the call that caused it (FXBlueTooth defect 8), and order is kept.
final class CallbackQueue: Sendable {
    let queue: DispatchQueue?
    private let ordered = OrderedCallbacks()
    /// Reports callbacks that wait on a blocked or unserved `queue`.
    private let stalls: CallbackStallMonitor?

    init(queue: DispatchQueue?) {
        self.queue = queue
        stalls = queue.map { CallbackStallMonitor(label: $0 === DispatchQueue.main ? "main" : $0.label) }
    }

    /// Runs `work` on the loop now (or after the app's call returns), or on the queue in order.
    /// `work` is `@Sendable`, so it is never inferred to be loop-isolated: on a queue it would
    /// trap the runtime's isolation check.
    /// True when a callback given now would run at once on this thread: no queue, no inline
    /// call running, nothing waiting. The hottest callbacks then call the delegate directly.
    @BleLoop var runsAtOnce: Bool { queue == nil && ordered.runsAtOnce }

    @BleLoop
    func deliver(_ work: @escaping @Sendable () -> Void) {
        guard let queue else { return ordered.run(work) }
        if let stalls {
            queue.async(execute: stalls.track(work))
        } else {
            queue.async(execute: work)
        }
    }
}
