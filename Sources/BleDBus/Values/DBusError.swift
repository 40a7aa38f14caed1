/// Everything that can go wrong talking D-Bus, as cases a caller can switch on.
public enum DBusError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The peer answered with a D-Bus error reply (e.g. `org.bluez.Error.InProgress`).
    case remote(name: String, message: String)
    /// No reply arrived before the call's deadline.
    case timeout(member: String, seconds: Double)
    /// The connection closed (the bus went away or `close()` was called).
    case disconnected
    /// The bus address could not be reached or refused us.
    case cannotConnect(address: String, detail: String)
    /// No session bus is configured (`DBUS_SESSION_BUS_ADDRESS` is unset).
    case noSessionBus
    /// A name, path or value given by the caller is not valid D-Bus; nothing was sent.
    case invalidArgument(String)
    /// A value could not be encoded into a message; nothing was sent.
    case encoding(String)
    /// A received value does not have the shape the caller asked for.
    case decoding(DBusDecodingError)
    /// Bytes claimed to be a D-Bus message are truncated or malformed.
    case malformedMessage(String)
    /// The connection cannot carry Unix file descriptors.
    case fileDescriptorsUnsupported
    /// The awaiting task was cancelled; the reply, if it still comes, is dropped.
    case cancelled
    /// libdbus could not allocate memory.
    case outOfMemory

    /// The D-Bus error name for `.remote`, nil otherwise.
    public var remoteName: String? {
        if case .remote(let name, _) = self { return name }
        return nil
    }

    /// What happened and what to do about it.
    public var description: String {
        switch self {
        case .remote(let name, let message):
            return message.isEmpty ? "\(name)" : "\(name): \(message)"
        case .timeout(let member, let seconds):
            return "No reply to \(member) within \(seconds) s; the peer may be stuck. Retry, or raise the call's timeout."
        case .disconnected:
            return "The D-Bus connection is closed; open a new connection."
        case .cannotConnect(let address, let detail):
            return "Cannot connect to the D-Bus bus at \(address): \(detail). Check that dbus-daemon runs and DBUS_SYSTEM_BUS_ADDRESS / DBUS_SESSION_BUS_ADDRESS point to it."
        case .noSessionBus:
            return "No session bus: DBUS_SESSION_BUS_ADDRESS is not set. Run inside a desktop session or pass an explicit address."
        case .invalidArgument(let detail):
            return "Invalid D-Bus argument: \(detail)"
        case .encoding(let detail):
            return "Cannot encode the D-Bus message: \(detail)"
        case .decoding(let error):
            return error.description
        case .malformedMessage(let detail):
            return "Malformed D-Bus message: \(detail)"
        case .fileDescriptorsUnsupported:
            return "This D-Bus connection cannot pass file descriptors (the transport is not a Unix socket)."
        case .cancelled:
            return "The D-Bus call was cancelled."
        case .outOfMemory:
            return "libdbus ran out of memory."
        }
    }
}

/// A received value does not have the expected shape.
public struct DBusDecodingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// What was expected, e.g. `s` or `a{sv}`.
    public var expected: String
    /// What was found, e.g. `u`, or `nothing` for a missing argument.
    public var found: String
    /// Where, e.g. `argument 1` or `a{sv}['Powered']`.
    public var context: String

    /// Describes a mismatch.
    public init(expected: String, found: String, context: String) {
        self.expected = expected
        self.found = found
        self.context = context
    }

    /// `Expected … at …, found …`.
    public var description: String {
        "D-Bus value at \(context.isEmpty ? "top level" : context) should be \(expected) but is \(found)."
    }
}
