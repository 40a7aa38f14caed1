import BleDBus

/// One BlueZ property: its name, its D-Bus type and how to read it as a Swift value.
///
/// Reading through a key instead of a string keeps the name and the type in one place, so a
/// misspelt name or a wrong type cannot hide in a reader: `map[BlueZ.Device1.connected]` is a
/// `Bool?` that is nil when the property is absent or has another type.
public struct PropertyKey<Value: Sendable>: Sendable {
    /// The property name as bluetoothd spells it, e.g. `Connected`.
    public let name: String
    /// The D-Bus type bluetoothd 5.66 gives it.
    public let type: DBusType
    private let decoder: @Sendable (DBusValue) -> Value?

    /// A key whose value needs its own reader (dictionaries of variants such as `ManufacturerData`).
    public init(_ name: String, type: DBusType, decode: @escaping @Sendable (DBusValue) -> Value?) {
        self.name = name
        self.type = type
        self.decoder = decode
    }

    /// The value as `Value`, or nil when it has another type. Strict, as bluetoothd's parsers:
    /// a value wrapped in a further variant is another type.
    public func decode(_ value: DBusValue) -> Value? {
        decoder(value)
    }

    /// The value of a `Get` reply, which carries it in one variant.
    public func decode(getReply value: DBusValue) -> Value? {
        guard case .variant(let inner) = value else { return nil }
        return decoder(inner)
    }

    /// True when `properties` mentions it (a change or an invalidation to react to), whatever
    /// its value.
    public func isPresent(in properties: PropertyMap) -> Bool {
        properties[name] != nil
    }

    /// The property's value in `properties`, or nil when absent or of another type.
    public func read(from properties: PropertyMap) -> Value? {
        properties[name].flatMap { decoder($0) }
    }
}

extension PropertyKey where Value: DBusConvertible {
    /// A key whose Swift type fixes its D-Bus type.
    public init(_ name: String) {
        self.init(name, type: Value.dbusType) { $0.as(Value.self) }
    }

    /// `value` as the D-Bus value this property carries.
    public func encode(_ value: Value) -> DBusValue {
        value.dbusValue
    }
}

extension Dictionary where Key == String, Value == DBusValue {
    /// The typed value of `key`, or nil when absent or of another type.
    public subscript<Typed>(key: PropertyKey<Typed>) -> Typed? {
        key.read(from: self)
    }
}

extension ExportedProperty {
    /// Describes an exported property named and typed by `key`.
    public init<Typed>(_ key: PropertyKey<Typed>, access: Access = .read,
                       get: @escaping @BleLoop @Sendable () -> DBusValue?,
                       set: (@BleLoop @Sendable (DBusValue, IncomingCall) -> Void)? = nil) {
        self.init(key.name, key.type, access: access, get: get, set: set)
    }
}
