/// Which signals a subscription wants. Unset fields match anything.
///
/// Only `sender`, `interface`, `member` and `arg0` go into the bus's match rule; `path` and
/// `pathNamespace` are matched here, so a thousand objects cost one rule, not a thousand
/// (dbus-daemon allows a connection 512).
public struct SignalMatch: Hashable, Sendable {
    /// A unique or well-known bus name; a well-known name matches whoever owns it now.
    public var sender: String?
    /// Exactly this object path.
    public var path: ObjectPath?
    /// This path or any path below it.
    public var pathNamespace: ObjectPath?
    /// Only signals of this interface (nil: any).
    public var interface: String?
    /// Only signals of this name (nil: any).
    public var member: String?
    /// The first argument, when it is a string (as in `NameOwnerChanged`).
    public var arg0: String?

    /// A match on any combination of fields.
    public init(sender: String? = nil, path: ObjectPath? = nil, pathNamespace: ObjectPath? = nil,
                interface: String? = nil, member: String? = nil, arg0: String? = nil) {
        self.sender = sender
        self.path = path
        self.pathNamespace = pathNamespace
        self.interface = interface
        self.member = member
        self.arg0 = arg0
    }

    /// The bus-side rule: broad on purpose (no path).
    var busRule: String {
        var rule = "type='signal'"
        if let sender { rule += ",sender='\(sender)'" }
        if let interface { rule += ",interface='\(interface)'" }
        if let member { rule += ",member='\(member)'" }
        if let arg0 { rule += ",arg0='\(arg0.replacingOccurrences(of: "'", with: "'\\''"))'" }
        return rule
    }

    func validate() throws(DBusError) {
        if let sender, !DBusNames.isValidBusName(sender) { throw .invalidArgument("'\(sender)' is not a bus name") }
        if let interface, !DBusNames.isValidInterface(interface) {
            throw .invalidArgument("'\(interface)' is not an interface name")
        }
        if let member, !DBusNames.isValidMember(member) { throw .invalidArgument("'\(member)' is not a member name") }
    }

    /// Everything but the sender, which the router resolves through name owners.
    func matchesFields(of message: DBusMessage) -> Bool {
        if let path, message.path != path { return false }
        if let pathNamespace {
            guard let messagePath = message.path, messagePath.isDescendant(of: pathNamespace) else { return false }
        }
        if let interface, message.interface != interface { return false }
        if let member, message.member != member { return false }
        if let arg0 {
            guard case .string(let first)? = message.body.first, first == arg0 else { return false }
        }
        return true
    }
}

/// A live signal subscription. Cancelling it, or releasing the last reference to it, removes
/// the handler (and the bus rule when no other subscription needs it).
public final class SignalSubscription: Sendable {
    private let cancelAction: @Sendable () -> Void
    private let cancelled = AtomicFlag()

    init(cancel: @escaping @Sendable () -> Void) {
        cancelAction = cancel
    }

    /// Stops delivery; safe from any thread and more than once.
    public func cancel() {
        if cancelled.setOnce() { cancelAction() }
    }

    deinit { cancel() }
}
