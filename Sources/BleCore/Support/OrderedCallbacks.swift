import BleDBus

/// Runs loop callbacks in order, at once when possible, and never from inside an inline call.
@BleLoop
package final class OrderedCallbacks {
    private var pending: [@Sendable () -> Void] = []
    private var flushScheduled = false

    /// An empty queue.
    package nonisolated init() {}

    /// True when work given now would run at once: no inline call running, nothing waiting.
    /// Callers on a hot path test it and call directly, sparing a closure per event.
    package var runsAtOnce: Bool { InlineCall.depth == 0 && pending.isEmpty }

    /// Runs `work` now, or after the inline call returns (and after what is already waiting).
    package func run(_ work: @escaping @Sendable () -> Void) {
        if InlineCall.depth == 0, pending.isEmpty { return work() }
        pending.append(work)
        guard !flushScheduled else { return }
        flushScheduled = true
        LoopBridge.later { [self] in self.flush() }
    }

    private func flush() {
        flushScheduled = false
        // Work may add work (a callback calls the app, the app calls us): it runs in order here.
        var index = 0
        while index < pending.count {
            pending[index]()
            index += 1
        }
        pending.removeAll(keepingCapacity: true)
    }
}
