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

@BleLoop
extension PendingCall.Completion {
    /// Delivers a whole reply or an error: a body completion gets the reply's body.
    func deliver(_ result: consuming Result<DBusMessage, DBusError>) {
        switch self {
        case .message(let completion):
            completion(result)
        case .body(let completion):
            // A switch, not `Result.map(\.body)`, whose key path and closure cost a call more
            // than the rest of its completion.
            switch consume result {
            case .success(let reply): completion(.success(reply.body))
            case .failure(let error): completion(.failure(error))
            }
        }
    }

    /// Delivers a method return decoded for its body alone: the message is built only for a
    /// caller that asked for one.
    func deliver(body: consuming Result<[DBusValue], DBusError>, serial: UInt32, replySerial: UInt32) {
        switch self {
        case .body(let completion):
            completion(body)
        case .message(let completion):
            switch consume body {
            case .success(let values):
                completion(.success(DBusMessage(kind: .methodReturn, serial: serial, replySerial: replySerial, sender: nil,
                                                destination: nil, path: nil, interface: nil, member: nil, errorName: nil,
                                                signature: nil, body: values, noReplyExpected: true)))
            case .failure(let error):
                completion(.failure(error))
            }
        }
    }
}
