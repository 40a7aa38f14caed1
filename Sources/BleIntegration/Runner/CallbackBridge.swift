import BleDBus

/// Turns a one-shot callback API (BleDSL's completions) into an awaitable value with a
/// deadline: the first `resume` wins, later ones are ignored, and the deadline throws.
@BleLoop
final class CallbackBridge<Value: Sendable> {
    private var continuation: CheckedContinuation<Value?, Never>?
    private var result: Value?
    private var finished = false

    /// Delivers the value (on BleKit's loop, where BleDSL calls back).
    func resume(_ value: Value) {
        guard !finished else { return }
        finished = true
        if let continuation {
            self.continuation = nil
            continuation.resume(returning: value)
        } else {
            result = value
        }
    }

    /// Waits for `resume`, at most `deadline`.
    func value(within deadline: Duration, _ what: String) async throws -> Value {
        if let result { return result }
        let timer = LoopTimer.scheduled(after: deadline) { [weak self] in
            guard let self, !self.finished else { return }
            self.finished = true
            let continuation = self.continuation
            self.continuation = nil
            continuation?.resume(returning: nil)
        }
        let value = await withCheckedContinuation { continuation in
            if finished { continuation.resume(returning: result) } else { self.continuation = continuation }
        }
        timer.cancel()
        guard let value else { throw ScenarioFailure("timed out after \(deadline) waiting for \(what)") }
        return value
    }
}
