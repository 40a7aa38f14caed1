/// One argument of a method or signal, for dispatch and introspection.
public struct ArgumentDescription: Sendable, Equatable {
    /// The name shown in introspection.
    public var name: String
    /// The argument's D-Bus type; it becomes part of the method's signature in the introspection XML.
    public var type: DBusType

    /// Describes an argument.
    public init(_ name: String, _ type: DBusType) {
        self.name = name
        self.type = type
    }
}

/// A method an exported interface answers.
public struct ExportedMethod: Sendable {
    /// The method name.
    public var name: String
    /// The arguments a call must carry; a call with another signature gets `UnknownMethod`.
    public var inArguments: [ArgumentDescription]
    /// The arguments the reply carries, as announced in the introspection XML.
    public var outArguments: [ArgumentDescription]
    /// Answers the call, now or later, through `IncomingCall.reply`/`fail`.
    public var handler: @BleLoop @Sendable (IncomingCall) -> Void

    /// Describes a method and its handler.
    public init(_ name: String, in inArguments: [ArgumentDescription] = [], out outArguments: [ArgumentDescription] = [],
                handler: @escaping @BleLoop @Sendable (IncomingCall) -> Void) {
        self.name = name
        self.inArguments = inArguments
        self.outArguments = outArguments
        self.handler = handler
    }

    var inSignature: String { inArguments.map(\.type.signature).joined() }
}

/// A signal an exported interface declares (for introspection).
public struct SignalDescription: Sendable, Equatable {
    /// The signal name.
    public var name: String
    /// Its arguments.
    public var arguments: [ArgumentDescription]

    /// Describes a signal.
    public init(_ name: String, _ arguments: [ArgumentDescription] = []) {
        self.name = name
        self.arguments = arguments
    }
}

/// A property of an exported interface, read through a getter so it is always current.
public struct ExportedProperty: Sendable {
    /// Who may do what with it.
    public enum Access: String, Sendable {
        /// Get only.
        case read
        /// Set only.
        case write
        /// Get and Set.
        case readwrite
    }

    /// The property name.
    public var name: String
    /// Its type; a `Set` with another type gets `InvalidSignature`.
    public var type: DBusType
    /// Get, Set or both.
    public var access: Access
    /// The current value, or nil while the property does not exist (it is then left out of
    /// `GetAll`, and a change to it is announced as invalidated, as BlueZ does for `RSSI`).
    public var get: @BleLoop @Sendable () -> DBusValue?
    /// Applies a `Set`; must answer `call` (reply with no arguments, or fail).
    public var set: (@BleLoop @Sendable (DBusValue, IncomingCall) -> Void)?

    /// Describes a property.
    public init(_ name: String, _ type: DBusType, access: Access = .read,
                get: @escaping @BleLoop @Sendable () -> DBusValue?,
                set: (@BleLoop @Sendable (DBusValue, IncomingCall) -> Void)? = nil) {
        self.name = name
        self.type = type
        self.access = access
        self.get = get
        self.set = set
    }
}

/// An interface implementation to export on an object path.
public struct ExportedInterface: Sendable {
    /// The interface name, e.g. `org.bluez.Adapter1`.
    public var name: String
    /// Its methods, in introspection order.
    public var methods: [ExportedMethod]
    /// Its signals, in introspection order.
    public var signals: [SignalDescription]
    /// Its properties, in `GetAll` order.
    public var properties: [ExportedProperty]

    /// Describes an interface.
    public init(_ name: String, methods: [ExportedMethod] = [], signals: [SignalDescription] = [],
                properties: [ExportedProperty] = []) {
        self.name = name
        self.methods = methods
        self.signals = signals
        self.properties = properties
    }

    func method(named name: String) -> ExportedMethod? { methods.first { $0.name == name } }
    func property(named name: String) -> ExportedProperty? { properties.first { $0.name == name } }

    /// The properties that exist now, in declaration order, as an `a{sv}` value.
    @BleLoop
    func currentProperties() -> DBusValue {
        var entries: [DBusDictionaryEntry] = []
        entries.reserveCapacity(properties.count)
        for property in properties where property.access != .write {
            if let value = property.get() {
                entries.append(DBusDictionaryEntry(key: .string(property.name), value: .variant(value)))
            }
        }
        return .dictionary(key: .string, value: .variant, entries)
    }
}
