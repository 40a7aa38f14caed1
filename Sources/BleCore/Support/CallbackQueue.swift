import BleDBus
import Dispatch
import Foundation

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
