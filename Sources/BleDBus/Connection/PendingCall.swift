/// A call that awaits its reply or a free slot.
@BleLoop
final class PendingCall {
    let id: UInt64
    /// The call until it is sent (moved out then: a copy kept for the call's life retained and
    /// released every string in it once more per call).
    var message: DBusMessage?
    /// The method's name, for the timeout error.
    let member: String
    /// Who waits, and for what: the whole reply, or its body alone (the common case, completed
    /// without building a message or wrapping the caller's closure in another).
    enum Completion {
        case message(@BleLoop (Result<DBusMessage, DBusError>) -> Void)
        case body(@BleLoop (Result<[DBusValue], DBusError>) -> Void)
    }

    let completion: Completion
    /// When the call times out, counted from when it was started (queued or not).
    let deadline: Int
    /// The timeout it was given, for the error.
    let timeout: Duration
    var serial: UInt32?
    /// Whether the caller reads the reply's header fields (`callReturningMessage`); otherwise
    /// the reply is decoded for its body alone.
    let wantsHeaders: Bool

    init(id: UInt64, message: consuming DBusMessage, deadline: Int, timeout: Duration, wantsHeaders: Bool,
         completion: Completion) {
        self.id = id
        self.wantsHeaders = wantsHeaders
        member = message.member ?? "call"
        self.message = message
        self.deadline = deadline
        self.timeout = timeout
        self.completion = completion
    }

    /// The timeout in seconds, for the error.
    var timeoutSeconds: Double {
        Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
    }
}
