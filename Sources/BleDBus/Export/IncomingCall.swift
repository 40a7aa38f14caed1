import CDBus

/// A method call to one of our exported objects, answered exactly once.
///
/// Answer with `reply` or `fail`, now or later. A second answer is ignored; a call released
/// unanswered is answered with `org.freedesktop.DBus.Error.Failed`, so no caller waits forever
/// because a handler forgot it. (To model a peer that never replies, keep the call.)
@BleLoop
public final class IncomingCall {
    /// The call as received.
    public let message: DBusMessage
    /// The caller's unique bus name (`:1.42`): check it where only one peer may call.
    public var sender: String { message.sender ?? "" }
    /// The call's arguments.
    public var arguments: [DBusValue] { message.body }
    /// The object path called.
    public var path: ObjectPath { message.path ?? .root }
    /// The method name.
    public var member: String { message.member ?? "" }
    /// True once answered.
    public private(set) var isAnswered = false

    private weak var connection: Connection?

    init(message: DBusMessage, connection: Connection) {
        self.message = message
        self.connection = connection
        // The caller asked for no reply: there is nothing to answer.
        isAnswered = message.noReplyExpected
    }

    /// Sends a successful reply with `values`.
    public func reply(_ values: [DBusValue] = []) {
        guard !isAnswered else { return }
        isAnswered = true
        let reply = DBusMessage(kind: .methodReturn, serial: 0, replySerial: message.serial, sender: nil,
                                destination: message.sender, path: nil, interface: nil, member: nil, errorName: nil,
                                signature: nil, body: values, noReplyExpected: true)
        do {
            try connection?.send(reply)
        } catch {
            // The reply itself was invalid (a handler bug or bad data): the caller still hears.
            isAnswered = false
            fail(name: "org.freedesktop.DBus.Error.Failed", message: "The reply could not be encoded: \(error)")
        }
    }

    /// Sends an error reply.
    public func fail(name: String, message text: String) {
        guard !isAnswered else { return }
        isAnswered = true
        let errorName = DBusNames.isValidErrorName(name) ? name : "org.freedesktop.DBus.Error.Failed"
        let reply = DBusMessage(kind: .error, serial: 0, replySerial: message.serial, sender: nil,
                                destination: message.sender, path: nil, interface: nil, member: nil,
                                errorName: errorName, signature: "s", body: [.string(text.replacingOccurrences(of: "\0", with: ""))],
                                noReplyExpected: true)
        _ = try? connection?.send(reply)
    }

    /// Sends an error reply for `error`: a `.remote` error keeps its name.
    public func fail(_ error: DBusError) {
        if case .remote(let name, let text) = error {
            fail(name: name, message: text)
        } else {
            fail(name: "org.freedesktop.DBus.Error.Failed", message: error.description)
        }
    }

    isolated deinit {
        if !isAnswered {
            fail(name: "org.freedesktop.DBus.Error.Failed", message: "The object did not answer \(member)")
        }
    }
}
