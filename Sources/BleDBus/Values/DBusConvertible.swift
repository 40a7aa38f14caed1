import Foundation

/// A Swift type with a fixed D-Bus type that converts to and from `DBusValue`.
///
/// `DBusValue` itself is the `v` type: encoding wraps it in a variant, decoding unwraps one.
/// Decoding never traps: a value of another type throws `DBusDecodingError`.
public protocol DBusConvertible: Sendable {
    /// The D-Bus type of every value of this Swift type.
    static var dbusType: DBusType { get }
    /// This value as a D-Bus value of `dbusType`.
    var dbusValue: DBusValue { get }
    /// Reads a value of `dbusType`; `context` names the place for error messages.
    init(dbusValue: DBusValue, context: String) throws(DBusDecodingError)
}

extension DBusConvertible {
    /// Reads a value, naming the top level in errors.
    public init(dbusValue: DBusValue) throws(DBusDecodingError) {
        try self.init(dbusValue: dbusValue, context: "")
    }
}

@inline(__always)
func mismatch(_ expected: DBusType, _ value: DBusValue, _ context: String) -> DBusDecodingError {
    DBusDecodingError(expected: expected.signature, found: value.type.signature, context: context)
}

extension UInt8: DBusConvertible {
    /// `y`
    public static var dbusType: DBusType { .byte }
    /// `.byte`
    public var dbusValue: DBusValue { .byte(self) }
    /// Reads a `y`.
    public init(dbusValue: DBusValue, context: String) throws(DBusDecodingError) {
        guard case .byte(let value) = dbusValue else { throw mismatch(.byte, dbusValue, context) }
        self = value
    }
}

extension Bool: DBusConvertible {
    /// `b`
    public static var dbusType: DBusType { .boolean }
    /// `.boolean`
    public var dbusValue: DBusValue { .boolean(self) }
    /// Reads a `b`.
    public init(dbusValue: DBusValue, context: String) throws(DBusDecodingError) {
        guard case .boolean(let value) = dbusValue else { throw mismatch(.boolean, dbusValue, context) }
        self = value
    }
}

extension Int16: DBusConvertible {
    /// `n`
    public static var dbusType: DBusType { .int16 }
    /// `.int16`
    public var dbusValue: DBusValue { .int16(self) }
    /// Reads an `n`.
    public init(dbusValue: DBusValue, context: String) throws(DBusDecodingError) {
        guard case .int16(let value) = dbusValue else { throw mismatch(.int16, dbusValue, context) }
        self = value
    }
}

extension UInt16: DBusConvertible {
    /// `q`
    public static var dbusType: DBusType { .uint16 }
    /// `.uint16`
    public var dbusValue: DBusValue { .uint16(self) }
    /// Reads a `q`.
    public init(dbusValue: DBusValue, context: String) throws(DBusDecodingError) {
        guard case .uint16(let value) = dbusValue else { throw mismatch(.uint16, dbusValue, context) }
        self = value
    }
}

extension Int32: DBusConvertible {
    /// `i`
    public static var dbusType: DBusType { .int32 }
    /// `.int32`
    public var dbusValue: DBusValue { .int32(self) }
    /// Reads an `i`.
    public init(dbusValue: DBusValue, context: String) throws(DBusDecodingError) {
        guard case .int32(let value) = dbusValue else { throw mismatch(.int32, dbusValue, context) }
        self = value
    }
}

extension UInt32: DBusConvertible {
    /// `u`
    public static var dbusType: DBusType { .uint32 }
    /// `.uint32`
    public var dbusValue: DBusValue { .uint32(self) }
    /// Reads a `u`.
    public init(dbusValue: DBusValue, context: String) throws(DBusDecodingError) {
        guard case .uint32(let value) = dbusValue else { throw mismatch(.uint32, dbusValue, context) }
        self = value
    }
}

extension Int64: DBusConvertible {
    /// `x`
    public static var dbusType: DBusType { .int64 }
    /// `.int64`
    public var dbusValue: DBusValue { .int64(self) }
    /// Reads an `x`.
    public init(dbusValue: DBusValue, context: String) throws(DBusDecodingError) {
        guard case .int64(let value) = dbusValue else { throw mismatch(.int64, dbusValue, context) }
        self = value
    }
}

extension UInt64: DBusConvertible {
    /// `t`
    public static var dbusType: DBusType { .uint64 }
    /// `.uint64`
    public var dbusValue: DBusValue { .uint64(self) }
    /// Reads a `t`.
    public init(dbusValue: DBusValue, context: String) throws(DBusDecodingError) {
        guard case .uint64(let value) = dbusValue else { throw mismatch(.uint64, dbusValue, context) }
        self = value
    }
}

extension Double: DBusConvertible {
    /// `d`
    public static var dbusType: DBusType { .double }
    /// `.double`
    public var dbusValue: DBusValue { .double(self) }
    /// Reads a `d`.
    public init(dbusValue: DBusValue, context: String) throws(DBusDecodingError) {
        guard case .double(let value) = dbusValue else { throw mismatch(.double, dbusValue, context) }
        self = value
    }
}

extension String: DBusConvertible {
    /// `s`
    public static var dbusType: DBusType { .string }
    /// `.string`
    public var dbusValue: DBusValue { .string(self) }
    /// Reads an `s`.
    public init(dbusValue: DBusValue, context: String) throws(DBusDecodingError) {
        guard case .string(let value) = dbusValue else { throw mismatch(.string, dbusValue, context) }
        self = value
    }
}

extension ObjectPath: DBusConvertible {
    /// `o`
    public static var dbusType: DBusType { .objectPath }
    /// `.objectPath`
    public var dbusValue: DBusValue { .objectPath(self) }
    /// Reads an `o`.
    public init(dbusValue: DBusValue, context: String) throws(DBusDecodingError) {
        guard case .objectPath(let value) = dbusValue else { throw mismatch(.objectPath, dbusValue, context) }
        self = value
    }
}

extension DBusSignature: DBusConvertible {
    /// `g`
    public static var dbusType: DBusType { .signature }
    /// `.signature`
    public var dbusValue: DBusValue { .signature(self) }
    /// Reads a `g`.
    public init(dbusValue: DBusValue, context: String) throws(DBusDecodingError) {
        guard case .signature(let value) = dbusValue else { throw mismatch(.signature, dbusValue, context) }
        self = value
    }
}

extension UnixFileDescriptor {
    /// Reads an `h`, handing over the same owner object (a second owner would close twice).
    public static func decode(_ dbusValue: DBusValue, context: String = "") throws(DBusDecodingError) -> UnixFileDescriptor {
        guard case .unixFD(let value) = dbusValue else { throw mismatch(.unixFD, dbusValue, context) }
        return value
    }
}

extension Data: DBusConvertible {
    /// `ay`
    public static var dbusType: DBusType { .array(.byte) }
    /// `.bytes`
    public var dbusValue: DBusValue { .bytes(self) }
    /// Reads an `ay` (also an `array(element: .byte)` built by hand).
    public init(dbusValue: DBusValue, context: String) throws(DBusDecodingError) {
        switch dbusValue {
        case .bytes(let data):
            self = data
        case .array(.byte, let values):
            var data = Data(capacity: values.count)
            for case .byte(let byte) in values { data.append(byte) }
            self = data
        default:
            throw mismatch(.array(.byte), dbusValue, context)
        }
    }
}

extension DBusValue: DBusConvertible {
    /// `v`
    public static var dbusType: DBusType { .variant }
    /// Wraps `self` in a variant.
    public var dbusValue: DBusValue { .variant(self) }
    /// Unwraps one variant level.
    public init(dbusValue: DBusValue, context: String) throws(DBusDecodingError) {
        guard case .variant(let inner) = dbusValue else { throw mismatch(.variant, dbusValue, context) }
        self = inner
    }
}

extension Array: DBusConvertible where Element: DBusConvertible {
    /// `aT`
    public static var dbusType: DBusType { .array(Element.dbusType) }
    /// An array value; byte arrays become `.bytes`.
    public var dbusValue: DBusValue {
        if Element.self == UInt8.self, let bytes = self as? [UInt8] { return .bytes(Data(bytes)) }
        return .array(element: Element.dbusType, map(\.dbusValue))
    }
    /// Reads an `aT`.
    public init(dbusValue: DBusValue, context: String) throws(DBusDecodingError) {
        switch dbusValue {
        case .array(_, let values):
            var result: [Element] = []
            result.reserveCapacity(values.count)
            for (index, value) in values.enumerated() {
                result.append(try Element(dbusValue: value, context: "\(context)[\(index)]"))
            }
            self = result
        case .bytes(let data) where Element.self == UInt8.self:
            var result: [Element] = []
            for byte in data { result.append(try Element(dbusValue: .byte(byte), context: context)) }
            self = result
        default:
            throw mismatch(.array(Element.dbusType), dbusValue, context)
        }
    }
}

extension Dictionary: DBusConvertible where Key: DBusConvertible, Value: DBusConvertible {
    /// `a{KV}`
    public static var dbusType: DBusType { .dictionary(key: Key.dbusType, value: Value.dbusType) }
    /// A dictionary value, in the dictionary's iteration order.
    public var dbusValue: DBusValue {
        .dictionary(key: Key.dbusType, value: Value.dbusType,
                    map { DBusDictionaryEntry(key: $0.key.dbusValue, value: $0.value.dbusValue) })
    }
    /// Reads an `a{KV}`; a later duplicate key wins, as in BlueZ's own parsers.
    public init(dbusValue: DBusValue, context: String) throws(DBusDecodingError) {
        guard case .dictionary(_, _, let entries) = dbusValue else {
            throw mismatch(Self.dbusType, dbusValue, context)
        }
        var result: [Key: Value] = [:]
        result.reserveCapacity(entries.count)
        for entry in entries {
            let key = try Key(dbusValue: entry.key, context: context)
            result[key] = try Value(dbusValue: entry.value, context: "\(context)[\(entry.key)]")
        }
        self = result
    }
}

extension Array where Element == DBusValue {
    /// Reads argument `index` of a message body as `T`; a missing argument is a decoding error.
    public func argument<T: DBusConvertible>(_ index: Int, as type: T.Type = T.self) throws(DBusDecodingError) -> T {
        guard indices.contains(index) else {
            throw DBusDecodingError(expected: T.dbusType.signature, found: "nothing", context: "argument \(index)")
        }
        return try T(dbusValue: self[index], context: "argument \(index)")
    }
}
