import BleDBus
import Foundation

/// Direct readers for the shapes BlueZ uses. They walk the decoded value once; byte payloads
/// stay the `Data` decoded from the message, never copied again.
public enum BlueZShapes {
    /// Reads `a{sv}`, unwrapping each variant.
    public static func propertyMap(_ value: DBusValue, context: String = "a{sv}") throws(DBusDecodingError) -> PropertyMap {
        guard case .dictionary(.string, .variant, let entries) = value else {
            throw DBusDecodingError(expected: "a{sv}", found: value.type.signature, context: context)
        }
        var map: PropertyMap = Dictionary(minimumCapacity: entries.count)
        for entry in entries {
            guard case .string(let key) = entry.key, case .variant(let inner) = entry.value else { continue }
            map[key] = inner
        }
        return map
    }

    /// Reads `a{sa{sv}}`.
    public static func interfaceMap(_ value: DBusValue, context: String = "a{sa{sv}}") throws(DBusDecodingError) -> InterfaceMap {
        guard case .dictionary(.string, .dictionary(.string, .variant), let entries) = value else {
            throw DBusDecodingError(expected: "a{sa{sv}}", found: value.type.signature, context: context)
        }
        var map: InterfaceMap = Dictionary(minimumCapacity: entries.count)
        for entry in entries {
            guard case .string(let name) = entry.key else { continue }
            map[name] = try propertyMap(entry.value, context: "\(context)['\(name)']")
        }
        return map
    }

    /// Reads `a{oa{sa{sv}}}`.
    public static func managedObjects(_ value: DBusValue) throws(DBusDecodingError) -> ManagedObjects {
        guard case .dictionary(.objectPath, .dictionary(.string, .dictionary(.string, .variant)), let entries) = value else {
            throw DBusDecodingError(expected: "a{oa{sa{sv}}}", found: value.type.signature, context: "GetManagedObjects")
        }
        var objects: ManagedObjects = Dictionary(minimumCapacity: entries.count)
        for entry in entries {
            guard case .objectPath(let path) = entry.key else { continue }
            objects[path] = try interfaceMap(entry.value, context: path.rawValue)
        }
        return objects
    }

    /// Reads `a{qv}` of `ay` (BlueZ's `ManufacturerData`: company id → bytes).
    public static func manufacturerData(_ value: DBusValue) throws(DBusDecodingError) -> [UInt16: Data] {
        guard case .dictionary(.uint16, .variant, let entries) = value else {
            throw DBusDecodingError(expected: "a{qv}", found: value.type.signature, context: "ManufacturerData")
        }
        var result: [UInt16: Data] = [:]
        for entry in entries {
            guard case .uint16(let company) = entry.key else { continue }
            guard case .variant(.bytes(let data)) = entry.value else {
                throw DBusDecodingError(expected: "ay", found: entry.value.unwrappingVariants.type.signature,
                                        context: "ManufacturerData[\(company)]")
            }
            result[company] = data
        }
        return result
    }

    /// Reads `a{sv}` of `ay` (BlueZ's `ServiceData`: UUID string → bytes).
    public static func serviceData(_ value: DBusValue) throws(DBusDecodingError) -> [String: Data] {
        guard case .dictionary(.string, .variant, let entries) = value else {
            throw DBusDecodingError(expected: "a{sv}", found: value.type.signature, context: "ServiceData")
        }
        var result: [String: Data] = [:]
        for entry in entries {
            guard case .string(let uuid) = entry.key else { continue }
            guard case .variant(.bytes(let data)) = entry.value else {
                throw DBusDecodingError(expected: "ay", found: entry.value.unwrappingVariants.type.signature,
                                        context: "ServiceData['\(uuid)']")
            }
            result[uuid] = data
        }
        return result
    }

    /// Builds an `a{sv}` value, keeping the given order (BlueZ's signal order matters to tests).
    public static func propertyDictionary(_ pairs: [(String, DBusValue)]) -> DBusValue {
        .dictionary(key: .string, value: .variant, pairs.map {
            DBusDictionaryEntry(key: .string($0.0), value: .variant($0.1))
        })
    }

    /// Builds an `a{qv}` of `ay`.
    public static func manufacturerDataValue(_ data: [UInt16: Data]) -> DBusValue {
        .dictionary(key: .uint16, value: .variant, data.sorted { $0.key < $1.key }.map {
            DBusDictionaryEntry(key: .uint16($0.key), value: .variant(.bytes($0.value)))
        })
    }

    /// Builds an `a{sv}` of `ay`.
    public static func serviceDataValue(_ data: [String: Data]) -> DBusValue {
        .dictionary(key: .string, value: .variant, data.sorted { $0.key < $1.key }.map {
            DBusDictionaryEntry(key: .string($0.key), value: .variant(.bytes($0.value)))
        })
    }
}

extension DBusValue {
    /// This value as `T`, or nil when it has another type: for optional BlueZ properties.
    public func `as`<T: DBusConvertible>(_ type: T.Type) -> T? {
        try? T(dbusValue: self, context: "")
    }
}
