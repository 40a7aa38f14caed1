/// The objects a connection exports: method dispatch, `Properties`, `Introspectable` and
/// `ObjectManager`, with every call answered exactly once.
///
/// Error names and texts follow what libdbus and BlueZ send, so a peer cannot tell our objects
/// from theirs: an unknown path gets `UnknownObject`, an unknown method or a wrong signature
/// `UnknownMethod`, a bad property access `InvalidArgs`/`UnknownProperty`/`PropertyReadOnly`/
/// `InvalidSignature`.
@BleLoop
public final class ObjectRegistry {
    /// The standard interface names.
    public enum Standard {
        /// `org.freedesktop.DBus.Introspectable`
        public static let introspectable = "org.freedesktop.DBus.Introspectable"
        /// `org.freedesktop.DBus.Properties`
        public static let properties = "org.freedesktop.DBus.Properties"
        /// `org.freedesktop.DBus.ObjectManager`
        public static let objectManager = "org.freedesktop.DBus.ObjectManager"
    }

    private weak var connection: Connection?
    private var objects: [ObjectPath: [ExportedInterface]] = [:]
    private var managers: Set<ObjectPath> = []
    /// Sees every call before dispatch; a tracer for tests (BleSim records its calls here).
    public var callObserver: (@BleLoop (DBusMessage) -> Void)?
    /// May answer (or keep) a call before dispatch; returns true when it took the call.
    /// BleSim injects `AccessDenied` and never-answered calls here.
    public var callFilter: (@BleLoop (IncomingCall) -> Bool)?

    init(connection: Connection) {
        self.connection = connection
    }

    // MARK: Registration

    /// Exports `interfaces` at `path`, adding to any it already has (same-named ones are
    /// replaced). Under an object manager, announces them with `InterfacesAdded`.
    public func register(_ path: ObjectPath, interfaces: [ExportedInterface]) {
        var current = objects[path] ?? []
        for interface in interfaces {
            if let index = current.firstIndex(where: { $0.name == interface.name }) {
                current[index] = interface
            } else {
                current.append(interface)
            }
        }
        let isNew = objects[path] == nil
        objects[path] = current
        guard let manager = manager(above: path) else { return }
        let announced = isNew ? withStandardInterfaces(current, path: path) : interfaces
        let body: [DBusValue] = [.objectPath(path), interfacesValue(announced)]
        try? connection?.emitSignal(path: manager, interface: Standard.objectManager, member: "InterfacesAdded", body: body)
    }

    /// Removes some interfaces from `path` (all of them when `interfaces` is nil), announcing it
    /// with `InterfacesRemoved` under an object manager.
    public func unregister(_ path: ObjectPath, interfaces names: [String]? = nil) {
        guard let current = objects[path] else { return }
        var removedNames: [String]
        if let names {
            let remaining = current.filter { !names.contains($0.name) }
            removedNames = current.filter { names.contains($0.name) }.map(\.name)
            if remaining.isEmpty {
                objects.removeValue(forKey: path)
                removedNames = standardNames(for: current, path: path, removal: true) + removedNames
            } else {
                objects[path] = remaining
            }
        } else {
            objects.removeValue(forKey: path)
            removedNames = standardNames(for: current, path: path, removal: true) + current.map(\.name)
        }
        guard !removedNames.isEmpty, let manager = manager(above: path) else { return }
        let body: [DBusValue] = [.objectPath(path), .array(element: .string, removedNames.map { .string($0) })]
        try? connection?.emitSignal(path: manager, interface: Standard.objectManager, member: "InterfacesRemoved", body: body)
    }

    /// Makes `path` an object manager: it answers `GetManagedObjects` for everything below it
    /// and announces registrations there.
    public func addObjectManager(at path: ObjectPath) {
        managers.insert(path)
    }

    /// True when `path` has exported interfaces.
    public func isRegistered(_ path: ObjectPath) -> Bool { objects[path] != nil }

    /// The interface names exported at `path`, in order.
    public func interfaceNames(at path: ObjectPath) -> [String] { objects[path]?.map(\.name) ?? [] }

    /// Every exported path, sorted.
    public var registeredPaths: [ObjectPath] { objects.keys.sorted() }

    /// Emits `PropertiesChanged` for `names`, reading their current values; names whose
    /// property no longer exists are announced as invalidated, after `invalidated`.
    public func emitPropertiesChanged(path: ObjectPath, interface: String, names: [String], invalidated: [String] = []) {
        guard let exported = objects[path]?.first(where: { $0.name == interface }) else { return }
        var changed: [DBusDictionaryEntry] = []
        var gone = invalidated
        for name in names {
            guard let property = exported.property(named: name) else { continue }
            if let value = property.get() {
                changed.append(DBusDictionaryEntry(key: .string(name), value: .variant(value)))
            } else if !gone.contains(name) {
                gone.append(name)
            }
        }
        emitPropertiesChanged(path: path, interface: interface, changed: changed, invalidated: gone)
    }

    /// Emits `PropertiesChanged` with explicit values.
    public func emitPropertiesChanged(path: ObjectPath, interface: String, changed: [DBusDictionaryEntry],
                                      invalidated: [String]) {
        let body: [DBusValue] = [
            .string(interface),
            .dictionary(key: .string, value: .variant, changed),
            .array(element: .string, invalidated.map { .string($0) }),
        ]
        try? connection?.emitSignal(path: path, interface: Standard.properties, member: "PropertiesChanged", body: body)
    }

    /// The `GetManagedObjects` answer for the manager at `root`.
    public func managedObjects(under root: ObjectPath) -> DBusValue {
        var entries: [DBusDictionaryEntry] = []
        for path in objects.keys.sorted() where path.isDescendant(of: root, orEqual: false) {
            guard let interfaces = objects[path] else { continue }
            entries.append(DBusDictionaryEntry(key: .objectPath(path),
                                               value: interfacesValue(withStandardInterfaces(interfaces, path: path))))
        }
        return .dictionary(key: .objectPath, value: .dictionary(key: .string, value: .dictionary(key: .string, value: .variant)), entries)
    }

    // MARK: Standard interfaces, the way BlueZ's gdbus lists them

    private func hasProperties(_ interfaces: [ExportedInterface]) -> Bool {
        interfaces.contains { !$0.properties.isEmpty }
    }

    /// Introspectable first, and Properties right after the first interface that has
    /// properties: the order bluetoothd's gdbus registers and lists them in.
    private func withStandardInterfaces(_ interfaces: [ExportedInterface], path: ObjectPath) -> [ExportedInterface] {
        var result = [ExportedInterface(Standard.introspectable)]
        var propertiesListed = false
        for interface in interfaces {
            result.append(interface)
            if !propertiesListed && !interface.properties.isEmpty {
                result.append(ExportedInterface(Standard.properties))
                propertiesListed = true
            }
        }
        return result
    }

    /// bluetoothd lists Properties, then Introspectable, in `InterfacesRemoved`.
    private func standardNames(for interfaces: [ExportedInterface], path: ObjectPath, removal: Bool) -> [String] {
        hasProperties(interfaces) ? [Standard.properties, Standard.introspectable] : [Standard.introspectable]
    }

    private func interfacesValue(_ interfaces: [ExportedInterface]) -> DBusValue {
        .dictionary(key: .string, value: .dictionary(key: .string, value: .variant), interfaces.map {
            DBusDictionaryEntry(key: .string($0.name), value: $0.currentProperties())
        })
    }

    private func manager(above path: ObjectPath) -> ObjectPath? {
        managers.filter { path.isDescendant(of: $0, orEqual: false) }.max { $0.rawValue.count < $1.rawValue.count }
    }

    // MARK: Dispatch

    func dispatch(_ message: DBusMessage) {
        guard let connection else { return }
        callObserver?(message)
        let call = IncomingCall(message: message, connection: connection)
        if let callFilter, callFilter(call) { return }
        let path = message.path ?? .root
        let member = message.member ?? ""
        let interfaceName = message.interface

        if interfaceName == Standard.introspectable || (interfaceName == nil && member == "Introspect"),
           member == "Introspect", message.signature.isEmpty {
            guard objects[path] != nil || managers.contains(path) || hasChildren(path) || path == .root else {
                return unknownObject(call)
            }
            call.reply([.string(introspectionXML(for: path))])
            return
        }
        if managers.contains(path), interfaceName == Standard.objectManager || interfaceName == nil,
           member == "GetManagedObjects" {
            guard message.signature.isEmpty else { return unknownMethod(call) }
            call.reply([managedObjects(under: path)])
            return
        }
        guard let interfaces = objects[path] else { return unknownObject(call) }
        if interfaceName == Standard.properties, hasProperties(interfaces) {
            return handleProperties(call, interfaces: interfaces)
        }
        let candidates = interfaceName.map { name in interfaces.filter { $0.name == name } } ?? interfaces
        for interface in candidates {
            guard let method = interface.method(named: member) else { continue }
            guard method.inSignature == message.signature else { return unknownMethod(call) }
            method.handler(call)
            return
        }
        unknownMethod(call)
    }

    /// libdbus words both errors this way, with a trailing newline; BlueZ clients see it.
    private func missingMethodText(_ call: IncomingCall) -> String {
        "Method \"\(call.member)\" with signature \"\(call.message.signature)\" on interface \"\(call.message.interface ?? "(null)")\" doesn't exist\n"
    }

    private func unknownObject(_ call: IncomingCall) {
        call.fail(name: "org.freedesktop.DBus.Error.UnknownObject", message: missingMethodText(call))
    }

    private func unknownMethod(_ call: IncomingCall) {
        call.fail(name: "org.freedesktop.DBus.Error.UnknownMethod", message: missingMethodText(call))
    }

    private func handleProperties(_ call: IncomingCall, interfaces: [ExportedInterface]) {
        let arguments = call.arguments
        let requested: String
        if case .string(let name)? = arguments.first { requested = name } else { requested = "" }
        let target = interfaces.first { $0.name == requested }
        switch (call.member, call.message.signature) {
        case ("Get", "ss"):
            guard let target else {
                return call.fail(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "No such interface '\(requested)'")
            }
            guard case .string(let propertyName) = arguments[1] else { return }
            guard let property = target.property(named: propertyName), property.access != .write,
                  let value = property.get() else {
                return call.fail(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "No such property '\(propertyName)'")
            }
            call.reply([.variant(value)])
        case ("GetAll", "s"):
            guard let target else {
                return call.fail(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "No such interface '\(requested)'")
            }
            call.reply([target.currentProperties()])
        case ("Set", "ssv"):
            guard let target else {
                return call.fail(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "No such interface '\(requested)'")
            }
            guard case .string(let propertyName) = arguments[1], case .variant(let value) = arguments[2] else { return }
            guard let property = target.property(named: propertyName) else {
                return call.fail(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "No such property '\(propertyName)'")
            }
            guard property.access != .read, let setter = property.set else {
                return call.fail(name: "org.freedesktop.DBus.Error.PropertyReadOnly",
                                 message: "Property '\(propertyName)' is not writable")
            }
            guard value.type == property.type else {
                return call.fail(name: "org.freedesktop.DBus.Error.InvalidSignature",
                                 message: "Invalid signature for '\(propertyName)'")
            }
            setter(value, call)
        default:
            unknownMethod(call)
        }
    }

    // MARK: Introspection

    private func hasChildren(_ path: ObjectPath) -> Bool {
        objects.keys.contains { $0.isDescendant(of: path, orEqual: false) }
    }

    private func childNames(of path: ObjectPath) -> [String] {
        var names = Set<String>()
        let prefixLength = path == .root ? 1 : path.rawValue.utf8.count + 1
        for candidate in objects.keys where candidate.isDescendant(of: path, orEqual: false) {
            let rest = candidate.rawValue.utf8.dropFirst(prefixLength)
            let element = rest.split(separator: UInt8(ascii: "/"), maxSplits: 1).first.map { String(decoding: $0, as: UTF8.self) }
            if let element, !element.isEmpty { names.insert(element) }
        }
        return names.sorted()
    }

    /// The introspection XML of `path`, in the layout bluetoothd's gdbus writes.
    public func introspectionXML(for path: ObjectPath) -> String {
        var listed: [IntrospectionWriter.Interface] = []
        for interface in withStandardInterfaces(objects[path] ?? [], path: path) {
            switch interface.name {
            case Standard.introspectable:
                listed.append(IntrospectionWriter.introspectable)
                if managers.contains(path) { listed.append(IntrospectionWriter.objectManager) }
            case Standard.properties:
                listed.append(IntrospectionWriter.properties)
            default:
                listed.append(IntrospectionWriter.Interface(interface))
            }
        }
        return IntrospectionWriter.document(interfaces: listed, children: childNames(of: path))
    }
}
