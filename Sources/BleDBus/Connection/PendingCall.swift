/// A call that awaits its reply or a free slot.
@BleLoop
final class PendingCall {
    let id: UInt64
    let message: DBusMessage
    let completion: @BleLoop (Result<DBusMessage, DBusError>) -> Void
    /// When the call times out, counted from when it was started (queued or not).
    let deadline: ContinuousClock.Instant
    /// The timeout it was given, for the error.
    let timeoutSeconds: Double
    var serial: UInt32?

    init(id: UInt64, message: DBusMessage, deadline: ContinuousClock.Instant, timeoutSeconds: Double,
         completion: @escaping @BleLoop (Result<DBusMessage, DBusError>) -> Void) {
        self.id = id
        self.message = message
        self.deadline = deadline
        self.timeoutSeconds = timeoutSeconds
        self.completion = completion
    }
}
