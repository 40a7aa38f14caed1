import CDBus
import Foundation

/// Writes `DBusValue`s into a libdbus message.
///
/// Everything is validated before the first byte is appended, because libdbus aborts the
/// process on an invalid string or path and cannot undo a half-written container.
enum MessageEncoder {
    /// Appends `values` to the body of `message`.
    static func append(_ values: [DBusValue], to message: OpaquePointer) throws(DBusError) {
        for index in values.indices {
            do throws(InvalidValue) {
                try validate(values[index], depth: NestingDepth())
            } catch {
                throw error.dbusError(context: "argument \(index)")
            }
        }
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        for value in values {
            guard appendValidated(value, to: &iter) else { throw .outOfMemory }
        }
    }

    struct NestingDepth {
        var arrays = 0
        var structures = 0
        var total = 0

        func entering(array: Bool) -> NestingDepth {
            var next = self
            if array { next.arrays += 1 } else { next.structures += 1 }
            next.total += 1
            return next
        }
    }

    /// Why a value cannot be sent, and where inside its argument: the place is collected on
    /// the way out of a failed check, so a value that passes costs no text at all (building
    /// the context on the way in cost more than the checks).
    struct InvalidValue: Error {
        /// `invalidArgument` (the caller's data) or `encoding` (an inconsistent value).
        let isArgumentError: Bool
        let problem: String
        /// Between the place and the problem.
        var separator = ": "
        /// Innermost last: `[3]`, `.1`, `<>`, `['key']`.
        var place: [String] = []

        static func argument(_ problem: String) -> InvalidValue { InvalidValue(isArgumentError: true, problem: problem) }
        static func encoding(_ problem: String) -> InvalidValue { InvalidValue(isArgumentError: false, problem: problem) }

        func inside(_ component: String) -> InvalidValue {
            var outer = self
            outer.place.append(component)
            return outer
        }

        func dbusError(context: String) -> DBusError {
            let text = context + place.reversed().joined() + separator + problem
            return isArgumentError ? .invalidArgument(text) : .encoding(text)
        }
    }

    /// The D-Bus limit on containers nested inside each other, variants included.
    static let maximumTotalDepth = 64

    /// memchr over a native string's bytes; the `UTF8View` walk it replaces cost ~200
    /// instructions for a five-letter option name.
    private static func containsNUL(_ text: String) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { bytes in
            guard let base = bytes.baseAddress, !bytes.isEmpty else { return false }
            return memchr(base, 0, bytes.count) != nil
        } ?? text.utf8.contains(0)
    }

    static func validate(_ value: DBusValue, depth: NestingDepth) throws(InvalidValue) {
        switch value {
        case .string(let text):
            guard !containsNUL(text) else { throw .argument("strings may not contain NUL characters") }
        case .byte, .boolean, .int16, .uint16, .int32, .uint32, .int64, .uint64, .double,
             .objectPath, .signature:
            return
        case .unixFD(let descriptor):
            guard descriptor.rawValue >= 0 else { throw .encoding("the file descriptor was already taken or closed") }
        case .bytes:
            try check(depth.entering(array: true))
        case .array(let element, let values):
            let inner = depth.entering(array: true)
            try check(inner)
            try checkType(element)
            for index in values.indices {
                let item = values[index]
                let itemType = item.type
                guard itemType == element || (element == .array(.byte) && itemType == .array(.byte)) else {
                    throw InvalidValue(isArgumentError: false, problem: "has type \(itemType) in an array of \(element)",
                                       separator: " ").inside("[\(index)]")
                }
                do throws(InvalidValue) {
                    try validate(item, depth: inner)
                } catch {
                    throw error.inside("[\(index)]")
                }
            }
        case .dictionary(let keyType, let valueType, let entries):
            guard keyType.isBasic else { throw .encoding("dictionary keys must be a basic type, not \(keyType)") }
            var inner = depth.entering(array: true)
            inner.structures += 1
            inner.total += 1
            try check(inner)
            try checkType(valueType)
            for entry in entries {
                guard entry.key.type == keyType, entry.value.type == valueType else {
                    throw .encoding("entry \(entry.key) does not have type {\(keyType)\(valueType)}")
                }
                do throws(InvalidValue) {
                    try validate(entry.key, depth: inner)
                    try validate(entry.value, depth: inner)
                } catch {
                    throw error.inside("[\(entry.key)]")
                }
            }
        case .structure(let fields):
            guard !fields.isEmpty else { throw .encoding("structures need at least one field") }
            var inner = depth
            inner.structures += 1
            inner.total += 1
            try check(inner)
            for index in fields.indices {
                do throws(InvalidValue) {
                    try validate(fields[index], depth: inner)
                } catch {
                    throw error.inside(".\(index)")
                }
            }
        case .variant(let inner):
            var nested = depth
            nested.total += 1
            try check(nested)
            do throws(InvalidValue) {
                try validate(inner, depth: nested)
            } catch {
                throw error.inside("<>")
            }
        }
    }

    private static func check(_ depth: NestingDepth) throws(InvalidValue) {
        guard depth.arrays <= DBusType.maximumNestingDepth,
              depth.structures <= DBusType.maximumNestingDepth,
              depth.total <= maximumTotalDepth else {
            throw .encoding("nested deeper than D-Bus allows (32 arrays, 32 structures, 64 in all)")
        }
    }

    /// A declared element type must itself be a valid signature (e.g. no empty structure).
    private static func checkType(_ type: DBusType) throws(InvalidValue) {
        // Parsing the signature again proves nothing for the shapes that cannot be invalid,
        // and BlueZ's arguments are nearly all of them (`a{sv}`, `as`, `v`).
        if isPlainlyValid(type) { return }
        do {
            _ = try DBusType.parseSingle(type.signature)
        } catch {
            throw .encoding("element type is invalid: \(error)")
        }
    }

    /// Basic types, variants, arrays of them and dictionaries of them: valid by construction.
    static func isPlainlyValid(_ type: DBusType) -> Bool {
        switch type {
        case .array(let element): return element.isBasic || element == .variant
        case .dictionary(let key, let value): return key.isBasic && (value.isBasic || value == .variant)
        case .structure: return false
        default: return true
        }
    }

    /// The signature of `value`'s type, without building the type for the common values.
    static func signature(of value: DBusValue) -> String {
        switch value {
        case .byte: return "y"
        case .boolean: return "b"
        case .int16: return "n"
        case .uint16: return "q"
        case .int32: return "i"
        case .uint32: return "u"
        case .int64: return "x"
        case .uint64: return "t"
        case .double: return "d"
        case .string: return "s"
        case .objectPath: return "o"
        case .signature: return "g"
        case .unixFD: return "h"
        case .bytes: return "ay"
        case .variant: return "v"
        case .array(let element, _): return "a" + element.signature
        case .dictionary(let key, let value, _): return entrySignature(key, value, brackets: "a{")
        case .structure: return value.type.signature
        }
    }

    /// `{KV}`, or `a{KV}` with `brackets` "a{".
    private static func entrySignature(_ key: DBusType, _ value: DBusType, brackets: String) -> String {
        if key == .string && value == .variant { return brackets == "{" ? "{sv}" : "a{sv}" }
        var text = brackets
        key.append(to: &text)
        value.append(to: &text)
        text.append("}")
        return text
    }

    /// Appends an already validated value; false only when libdbus runs out of memory.
    static func appendValidated(_ value: DBusValue, to iter: UnsafeMutablePointer<DBusMessageIter>) -> Bool {
        switch value {
        case .byte(var byte):
            return dbus_message_iter_append_basic(iter, DBUS_TYPE_BYTE, &byte) != 0
        case .boolean(let flag):
            var raw: dbus_bool_t = flag ? 1 : 0
            return dbus_message_iter_append_basic(iter, DBUS_TYPE_BOOLEAN, &raw) != 0
        case .int16(var number):
            return dbus_message_iter_append_basic(iter, DBUS_TYPE_INT16, &number) != 0
        case .uint16(var number):
            return dbus_message_iter_append_basic(iter, DBUS_TYPE_UINT16, &number) != 0
        case .int32(var number):
            return dbus_message_iter_append_basic(iter, DBUS_TYPE_INT32, &number) != 0
        case .uint32(var number):
            return dbus_message_iter_append_basic(iter, DBUS_TYPE_UINT32, &number) != 0
        case .int64(var number):
            return dbus_message_iter_append_basic(iter, DBUS_TYPE_INT64, &number) != 0
        case .uint64(var number):
            return dbus_message_iter_append_basic(iter, DBUS_TYPE_UINT64, &number) != 0
        case .double(var number):
            return dbus_message_iter_append_basic(iter, DBUS_TYPE_DOUBLE, &number) != 0
        case .string(let text):
            return appendString(text, type: DBUS_TYPE_STRING, to: iter)
        case .objectPath(let path):
            return appendString(path.rawValue, type: DBUS_TYPE_OBJECT_PATH, to: iter)
        case .signature(let signature):
            return appendString(signature.rawValue, type: DBUS_TYPE_SIGNATURE, to: iter)
        case .unixFD(let descriptor):
            var raw = descriptor.rawValue
            return dbus_message_iter_append_basic(iter, DBUS_TYPE_UNIX_FD, &raw) != 0
        case .bytes(let data):
            var sub = DBusMessageIter()
            guard dbus_message_iter_open_container(iter, DBUS_TYPE_ARRAY, "y", &sub) != 0 else { return false }
            let appended = data.withUnsafeBytes { buffer -> Bool in
                var base = buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1)
                return withUnsafeMutablePointer(to: &base) { pointer in
                    dbus_message_iter_append_fixed_array(&sub, DBUS_TYPE_BYTE, pointer, Int32(buffer.count)) != 0
                }
            }
            return close(&sub, in: iter, succeeded: appended)
        case .array(let element, let values):
            if element == .byte {
                var data = Data(capacity: values.count)
                for case .byte(let byte) in values { data.append(byte) }
                return appendValidated(.bytes(data), to: iter)
            }
            var sub = DBusMessageIter()
            guard openContainer(iter, DBUS_TYPE_ARRAY, element.signature, &sub) else { return false }
            var ok = true
            for item in values where ok { ok = appendValidated(item, to: &sub) }
            return close(&sub, in: iter, succeeded: ok)
        case .dictionary(let key, let valueType, let entries):
            var sub = DBusMessageIter()
            let entryType = entrySignature(key, valueType, brackets: "{")
            guard openContainer(iter, DBUS_TYPE_ARRAY, entryType, &sub) else { return false }
            var ok = true
            for entry in entries where ok {
                var entryIter = DBusMessageIter()
                guard dbus_message_iter_open_container(&sub, DBUS_TYPE_DICT_ENTRY, nil, &entryIter) != 0 else {
                    ok = false
                    break
                }
                let written = appendValidated(entry.key, to: &entryIter) && appendValidated(entry.value, to: &entryIter)
                ok = close(&entryIter, in: &sub, succeeded: written)
            }
            return close(&sub, in: iter, succeeded: ok)
        case .structure(let fields):
            var sub = DBusMessageIter()
            guard dbus_message_iter_open_container(iter, DBUS_TYPE_STRUCT, nil, &sub) != 0 else { return false }
            var ok = true
            for field in fields where ok { ok = appendValidated(field, to: &sub) }
            return close(&sub, in: iter, succeeded: ok)
        case .variant(let inner):
            var sub = DBusMessageIter()
            guard openContainer(iter, DBUS_TYPE_VARIANT, signature(of: inner), &sub) else { return false }
            return close(&sub, in: iter, succeeded: appendValidated(inner, to: &sub))
        }
    }

    /// Opens a container whose signature is a Swift string: passing the string to libdbus
    /// directly would copy it into a new array (`utf8CString`) on every call.
    private static func openContainer(_ iter: UnsafeMutablePointer<DBusMessageIter>, _ type: Int32, _ signature: String,
                                      _ sub: UnsafeMutablePointer<DBusMessageIter>) -> Bool {
        signature.withCString { dbus_message_iter_open_container(iter, type, $0, sub) != 0 }
    }

    private static func appendString(_ text: String, type: Int32, to iter: UnsafeMutablePointer<DBusMessageIter>) -> Bool {
        text.withCString { pointer in
            var cString: UnsafePointer<CChar>? = pointer
            return dbus_message_iter_append_basic(iter, type, &cString) != 0
        }
    }

    private static func close(_ sub: UnsafeMutablePointer<DBusMessageIter>, in iter: UnsafeMutablePointer<DBusMessageIter>, succeeded: Bool) -> Bool {
        if succeeded { return dbus_message_iter_close_container(iter, sub) != 0 }
        dbus_message_iter_abandon_container(iter, sub)
        return false
    }
}
