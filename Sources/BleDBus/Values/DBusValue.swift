import Foundation

/// One D-Bus value of any type, nested to any legal depth.
///
/// Byte arrays (`ay`) are always `.bytes(Data)`: decoding copies the payload once, straight from
/// the message buffer, and `array(element: .byte, …)` is normalised to `.bytes` when encoded.
///
/// Only `variant` is boxed: an `indirect` enum allocates a heap box for every value, and a
/// received BlueZ signal holds a dozen of them.
public enum DBusValue: Hashable, Sendable, CustomStringConvertible {
    /// `y`
    case byte(UInt8)
    /// `b`
    case boolean(Bool)
    /// `n`
    case int16(Int16)
    /// `q`
    case uint16(UInt16)
    /// `i`
    case int32(Int32)
    /// `u`
    case uint32(UInt32)
    /// `x`
    case int64(Int64)
    /// `t`
    case uint64(UInt64)
    /// `d`
    case double(Double)
    /// `s`
    case string(String)
    /// `o`
    case objectPath(ObjectPath)
    /// `g`
    case signature(DBusSignature)
    /// `h`: the descriptor is owned by the value (see `UnixFileDescriptor`).
    case unixFD(UnixFileDescriptor)
    /// `ay`
    case bytes(Data)
    /// `aT` for any `T` but a byte or a dictionary entry; every element must have type `element`.
    case array(element: DBusType, [DBusValue])
    /// `a{KV}`, in wire order.
    case dictionary(key: DBusType, value: DBusType, [DBusDictionaryEntry])
    /// `(…)`
    case structure([DBusValue])
    /// `v`
    indirect case variant(DBusValue)

    /// The type of this value.
    public var type: DBusType {
        switch self {
        case .byte: return .byte
        case .boolean: return .boolean
        case .int16: return .int16
        case .uint16: return .uint16
        case .int32: return .int32
        case .uint32: return .uint32
        case .int64: return .int64
        case .uint64: return .uint64
        case .double: return .double
        case .string: return .string
        case .objectPath: return .objectPath
        case .signature: return .signature
        case .unixFD: return .unixFD
        case .bytes: return .array(.byte)
        case .array(let element, _): return .array(element)
        case .dictionary(let key, let value, _): return .dictionary(key: key, value: value)
        case .structure(let fields): return .structure(fields.map(\.type))
        case .variant: return .variant
        }
    }

    /// A readable rendering in the style of `gdbus` output, for logs and test failures.
    public var description: String {
        switch self {
        case .byte(let value): return "byte \(value)"
        case .boolean(let value): return value ? "true" : "false"
        case .int16(let value): return "int16 \(value)"
        case .uint16(let value): return "uint16 \(value)"
        case .int32(let value): return "int32 \(value)"
        case .uint32(let value): return "uint32 \(value)"
        case .int64(let value): return "int64 \(value)"
        case .uint64(let value): return "uint64 \(value)"
        case .double(let value): return "double \(value)"
        case .string(let value): return "'\(value)'"
        case .objectPath(let value): return "objectpath '\(value)'"
        case .signature(let value): return "signature '\(value)'"
        case .unixFD(let value): return "handle \(value.rawValue)"
        case .bytes(let data): return "[" + data.map { String(format: "0x%02x", $0) }.joined(separator: ", ") + "]"
        case .array(_, let values): return "[" + values.map(\.description).joined(separator: ", ") + "]"
        case .dictionary(_, _, let entries):
            return "{" + entries.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        case .structure(let fields): return "(" + fields.map(\.description).joined(separator: ", ") + ")"
        case .variant(let inner): return "<\(inner)>"
        }
    }

    /// The value inside any number of variants.
    public var unwrappingVariants: DBusValue {
        var value = self
        while case .variant(let inner) = value { value = inner }
        return value
    }
}

/// One key/value pair of a D-Bus dictionary.
public struct DBusDictionaryEntry: Hashable, Sendable {
    /// The key; always of a basic type.
    public var key: DBusValue
    /// The entry's value; the dictionary keeps its entries in wire order.
    public var value: DBusValue

    /// Pairs `key` with `value`.
    public init(key: DBusValue, value: DBusValue) {
        self.key = key
        self.value = value
    }
}

/// A validated type signature, e.g. `a{sv}`.
public struct DBusSignature: Hashable, Sendable, CustomStringConvertible {
    /// The signature text.
    public let rawValue: String
    /// The complete types it holds.
    public let types: [DBusType]

    /// Parses and validates `rawValue`.
    public init(_ rawValue: String) throws(DBusSignatureError) {
        self.types = try DBusType.parse(rawValue)
        self.rawValue = rawValue
    }

    /// The signature of `types`, which are valid by construction.
    public init(types: [DBusType]) {
        self.types = types
        self.rawValue = types.map(\.signature).joined()
    }

    /// The signature text.
    public var description: String { rawValue }
}
