import BleDBus

/// Counts the app's calls running inline on the loop (a facade method called from inside a
/// callback runs at once instead of hopping): while one runs, callbacks wait for it to return.
package enum InlineCall {
    @BleLoop package static var depth = 0

    /// Runs `body` as an inline call.
    @BleLoop package static func run(_ body: @BleLoop () -> Void) {
        depth += 1
        defer { depth -= 1 }
        body()
    }

    /// Runs `function(argument)` as an inline call: a named function, not a closure, on the
    /// hot paths (see `BleLoop.assumeIsolated(_:with:)`).
    @BleLoop package static func run<Argument>(_ function: @BleLoop (Argument) -> Void, with argument: Argument) {
        depth += 1
        defer { depth -= 1 }
        function(argument)
    }
}

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
        BleLoop.perform { [self] in self.flush() }
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
