import BleDBus

/// One `connect` request, across its retries.
@BleLoop
final class ConnectAttempt {
    var retriesLeft: Int
    var attemptNumber = 0
    /// The Connect call answered (the ATT link is up; GATT discovery may still run).
    var linkUp = false
    /// We called Disconnect to cancel it; its `br-connection-canceled` failure is ours.
    var cancelling = false
    /// Waiting for `Connected=false` after abort-by-local before retrying (bleak PR #1255).
    var retryWhenDown = false
    var deadline: LoopTimer?
    var backoff: LoopTimer?
    var graceTimer: LoopTimer?
    var graceExpired = false
    var finished = false

    init(retriesLeft: Int) {
        self.retriesLeft = retriesLeft
    }

    func cancelTimers() {
        deadline?.cancel()
        backoff?.cancel()
        graceTimer?.cancel()
    }
}
