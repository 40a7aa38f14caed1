import CDBus
import Foundation

/// Reads a libdbus message body into `DBusValue`s, once, following the type codes libdbus
/// reports, so a peer's message of any shape decodes without trapping.
struct MessageDecoder {
    /// Array signatures seen in this message, parsed once: BlueZ replies repeat `a{sv}` and
    /// `as` thousands of times.
    private var parsedArrayTypes: [String: DBusType] = [:]
    /// The strings of this and earlier messages, borrowed from the caller for the decode.
    private var strings: StringCache

    private init(strings: StringCache) {
        self.strings = strings
    }

    static func decodeBody(of message: OpaquePointer) throws(DBusError) -> [DBusValue] {
        var strings = StringCache()
        return try decodeBody(of: message, strings: &strings)
    }

    /// Decodes with `strings`, which keeps what this message added for the next one.
    static func decodeBody(of message: OpaquePointer, strings: inout StringCache) throws(DBusError) -> [DBusValue] {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return [] }
        // Moved in and back out, so the cache's buffers are not copied on write.
        var decoder = MessageDecoder(strings: strings)
        strings = StringCache()
        defer { strings = decoder.strings }
        // PropertiesChanged, by far the commonest message a BlueZ client receives (every
        // notification over StartNotify is one), read along its known shape.
        if dbus_message_has_signature(message, "sa{sv}as") != 0 {
            return try decoder.decodePropertiesChanged(&iter)
        }
        var values: [DBusValue] = []
        repeat {
            values.append(try decoder.decodeCurrent(&iter))
        } while dbus_message_iter_next(&iter) != 0
        return values
    }

    /// A body of signature `sa{sv}as` (libdbus checked it): the same values `decodeCurrent`
    /// gives, without asking libdbus each value's type or the dictionary's entry types.
    private mutating func decodePropertiesChanged(_ iter: UnsafeMutablePointer<DBusMessageIter>) throws(DBusError) -> [DBusValue] {
        let interface = readString(iter)
        guard dbus_message_iter_next(iter) != 0 else { throw .malformedMessage("PropertiesChanged without properties") }
        var entries: [DBusDictionaryEntry] = []
        var dictionary = DBusMessageIter()
        dbus_message_iter_recurse(iter, &dictionary)
        while dbus_message_iter_get_arg_type(&dictionary) == DBUS_TYPE_DICT_ENTRY {
            var entry = DBusMessageIter()
            dbus_message_iter_recurse(&dictionary, &entry)
            let key = readString(&entry)
            guard dbus_message_iter_next(&entry) != 0 else { throw .malformedMessage("dictionary entry without a value") }
            var variant = DBusMessageIter()
            dbus_message_iter_recurse(&entry, &variant)
            entries.append(DBusDictionaryEntry(key: .string(key), value: .variant(try decodeCurrent(&variant))))
            dbus_message_iter_next(&dictionary)
        }
        guard dbus_message_iter_next(iter) != 0 else { throw .malformedMessage("PropertiesChanged without invalidated properties") }
        var names: [DBusValue] = []
        var list = DBusMessageIter()
        dbus_message_iter_recurse(iter, &list)
        while dbus_message_iter_get_arg_type(&list) == DBUS_TYPE_STRING {
            names.append(.string(readString(&list)))
            dbus_message_iter_next(&list)
        }
        return [.string(interface), .dictionary(key: .string, value: .variant, entries), .array(element: .string, names)]
    }

    private mutating func decodeCurrent(_ iter: UnsafeMutablePointer<DBusMessageIter>) throws(DBusError) -> DBusValue {
        let code = dbus_message_iter_get_arg_type(iter)
        switch code {
        case DBUS_TYPE_BYTE:
            var value: UInt8 = 0
            dbus_message_iter_get_basic(iter, &value)
            return .byte(value)
        case DBUS_TYPE_BOOLEAN:
            var value: dbus_bool_t = 0
            dbus_message_iter_get_basic(iter, &value)
            return .boolean(value != 0)
        case DBUS_TYPE_INT16:
            var value: Int16 = 0
            dbus_message_iter_get_basic(iter, &value)
            return .int16(value)
        case DBUS_TYPE_UINT16:
            var value: UInt16 = 0
            dbus_message_iter_get_basic(iter, &value)
            return .uint16(value)
        case DBUS_TYPE_INT32:
            var value: Int32 = 0
            dbus_message_iter_get_basic(iter, &value)
            return .int32(value)
        case DBUS_TYPE_UINT32:
            var value: UInt32 = 0
            dbus_message_iter_get_basic(iter, &value)
            return .uint32(value)
        case DBUS_TYPE_INT64:
            var value: Int64 = 0
            dbus_message_iter_get_basic(iter, &value)
            return .int64(value)
        case DBUS_TYPE_UINT64:
            var value: UInt64 = 0
            dbus_message_iter_get_basic(iter, &value)
            return .uint64(value)
        case DBUS_TYPE_DOUBLE:
            var value: Double = 0
            dbus_message_iter_get_basic(iter, &value)
            return .double(value)
        case DBUS_TYPE_STRING:
            return .string(readString(iter))
        case DBUS_TYPE_OBJECT_PATH:
            return .objectPath(ObjectPath(unchecked: readString(iter)))
        case DBUS_TYPE_SIGNATURE:
            let text = readString(iter)
            do {
                return .signature(try DBusSignature(text))
            } catch {
                throw .malformedMessage("signature value '\(text)' is invalid: \(error)")
            }
        case DBUS_TYPE_UNIX_FD:
            var descriptor: Int32 = -1
            // libdbus hands out a fresh duplicate that the reader owns.
            dbus_message_iter_get_basic(iter, &descriptor)
            guard descriptor >= 0 else { throw .malformedMessage("unix fd argument without a descriptor") }
            return .unixFD(UnixFileDescriptor(adopting: descriptor))
        case DBUS_TYPE_ARRAY:
            return try decodeArray(iter)
        case DBUS_TYPE_STRUCT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(iter, &sub)
            var fields: [DBusValue] = []
            while dbus_message_iter_get_arg_type(&sub) != DBUS_TYPE_INVALID {
                fields.append(try decodeCurrent(&sub))
                dbus_message_iter_next(&sub)
            }
            return .structure(fields)
        case DBUS_TYPE_VARIANT:
            var sub = DBusMessageIter()
            dbus_message_iter_recurse(iter, &sub)
            return .variant(try decodeCurrent(&sub))
        default:
            throw .malformedMessage("unexpected type code \(code) in message body")
        }
    }

    private mutating func decodeArray(_ iter: UnsafeMutablePointer<DBusMessageIter>) throws(DBusError) -> DBusValue {
        let elementCode = dbus_message_iter_get_element_type(iter)
        var sub = DBusMessageIter()
        dbus_message_iter_recurse(iter, &sub)
        if elementCode == DBUS_TYPE_BYTE {
            var pointer: UnsafeRawPointer?
            var count: Int32 = 0
            if dbus_message_iter_get_arg_type(&sub) == DBUS_TYPE_BYTE {
                withUnsafeMutablePointer(to: &pointer) { out in
                    dbus_message_iter_get_fixed_array(&sub, out, &count)
                }
            }
            guard let pointer, count > 0 else { return .bytes(Data()) }
            return .bytes(Data(bytes: pointer, count: Int(count)))
        }
        if elementCode == DBUS_TYPE_DICT_ENTRY {
            let (key, value) = try entryTypes(of: iter, firstEntry: sub)
            var entries: [DBusDictionaryEntry] = []
            while dbus_message_iter_get_arg_type(&sub) == DBUS_TYPE_DICT_ENTRY {
                var entryIter = DBusMessageIter()
                dbus_message_iter_recurse(&sub, &entryIter)
                let keyValue = try decodeCurrent(&entryIter)
                guard dbus_message_iter_next(&entryIter) != 0 else {
                    throw .malformedMessage("dictionary entry without a value")
                }
                let entryValue = try decodeCurrent(&entryIter)
                entries.append(DBusDictionaryEntry(key: keyValue, value: entryValue))
                dbus_message_iter_next(&sub)
            }
            return .dictionary(key: key, value: value, entries)
        }
        let element: DBusType
        if let basic = MessageDecoder.basicType(elementCode) {
            element = basic
        } else {
            guard case .array(let parsed) = try arrayType(of: iter) else {
                throw .malformedMessage("array of type code \(elementCode) without an element type")
            }
            element = parsed
        }
        var values: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&sub) != DBUS_TYPE_INVALID {
            values.append(try decodeCurrent(&sub))
            dbus_message_iter_next(&sub)
        }
        return .array(element: element, values)
    }

    /// The key and value types of a dictionary. A first entry with a basic key and a basic or
    /// variant value tells them by its type codes (every entry has the same types); otherwise,
    /// and for an empty dictionary, they come from the array's signature.
    private mutating func entryTypes(of iter: UnsafeMutablePointer<DBusMessageIter>,
                                     firstEntry: DBusMessageIter) throws(DBusError) -> (key: DBusType, value: DBusType) {
        var entries = firstEntry
        if dbus_message_iter_get_arg_type(&entries) == DBUS_TYPE_DICT_ENTRY {
            var entry = DBusMessageIter()
            dbus_message_iter_recurse(&entries, &entry)
            if let key = MessageDecoder.basicType(dbus_message_iter_get_arg_type(&entry)), key != .variant,
               dbus_message_iter_next(&entry) != 0,
               let value = MessageDecoder.basicType(dbus_message_iter_get_arg_type(&entry)) {
                return (key, value)
            }
        }
        let arrayType = try arrayType(of: iter)
        guard case .dictionary(let key, let value) = arrayType else {
            throw .malformedMessage("array with signature \(arrayType)")
        }
        return (key, value)
    }

    /// The array's complete type, from its signature (parsed once per message and signature).
    private mutating func arrayType(of iter: UnsafeMutablePointer<DBusMessageIter>) throws(DBusError) -> DBusType {
        guard let raw = dbus_message_iter_get_signature(iter) else { throw .outOfMemory }
        defer { dbus_free(raw) }
        let text = String(cString: raw)
        if let known = parsedArrayTypes[text] { return known }
        do {
            let parsed = try DBusType.parseSingle(text)
            parsedArrayTypes[text] = parsed
            return parsed
        } catch {
            throw .malformedMessage("array signature '\(text)' is invalid: \(error)")
        }
    }

    private static func basicType(_ code: Int32) -> DBusType? {
        switch code {
        case DBUS_TYPE_BOOLEAN: return .boolean
        case DBUS_TYPE_INT16: return .int16
        case DBUS_TYPE_UINT16: return .uint16
        case DBUS_TYPE_INT32: return .int32
        case DBUS_TYPE_UINT32: return .uint32
        case DBUS_TYPE_INT64: return .int64
        case DBUS_TYPE_UINT64: return .uint64
        case DBUS_TYPE_DOUBLE: return .double
        case DBUS_TYPE_STRING: return .string
        case DBUS_TYPE_OBJECT_PATH: return .objectPath
        case DBUS_TYPE_SIGNATURE: return .signature
        case DBUS_TYPE_UNIX_FD: return .unixFD
        case DBUS_TYPE_VARIANT: return .variant
        default: return nil
        }
    }

    private mutating func readString(_ iter: UnsafeMutablePointer<DBusMessageIter>) -> String {
        var pointer: UnsafePointer<CChar>?
        dbus_message_iter_get_basic(iter, &pointer)
        guard let pointer else { return "" }
        return strings.string(pointer)
    }
}
