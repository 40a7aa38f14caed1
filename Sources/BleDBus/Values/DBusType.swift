/// A complete D-Bus type, as one element of a type signature.
///
/// `DBusType.parse(_:)` validates a signature the way the D-Bus specification does (length,
/// nesting depth, dictionary keys, empty structures) and never traps on bad input.
public indirect enum DBusType: Hashable, Sendable, CustomStringConvertible {
    /// `y`: an unsigned 8-bit integer.
    case byte
    /// `b`: a boolean.
    case boolean
    /// `n`: a signed 16-bit integer.
    case int16
    /// `q`: an unsigned 16-bit integer.
    case uint16
    /// `i`: a signed 32-bit integer.
    case int32
    /// `u`: an unsigned 32-bit integer.
    case uint32
    /// `x`: a signed 64-bit integer.
    case int64
    /// `t`: an unsigned 64-bit integer.
    case uint64
    /// `d`: an IEEE 754 double.
    case double
    /// `s`: a UTF-8 string without NUL characters.
    case string
    /// `o`: an object path.
    case objectPath
    /// `g`: a type signature.
    case signature
    /// `h`: a Unix file descriptor passed with the message.
    case unixFD
    /// `v`: a value that carries its own type.
    case variant
    /// `aT`: an array of `T`.
    case array(DBusType)
    /// `a{KV}`: a dictionary; `key` must be a basic type.
    case dictionary(key: DBusType, value: DBusType)
    /// `(T…)`: a structure of at least one field.
    case structure([DBusType])

    /// The signature text of this type, e.g. `a{sv}`.
    public var signature: String {
        // The one-character types are literals: no string is built for the commonest case.
        switch self {
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
        case .variant: return "v"
        case .array, .dictionary, .structure:
            var text = ""
            append(to: &text)
            return text
        }
    }

    /// Same as `signature`.
    public var description: String { signature }

    /// True for the types that may be dictionary keys: every fixed type, strings, paths and
    /// signatures, but not variants or containers.
    public var isBasic: Bool {
        switch self {
        case .array, .dictionary, .structure, .variant: return false
        default: return true
        }
    }

    func append(to text: inout String) {
        switch self {
        case .byte: text.append("y")
        case .boolean: text.append("b")
        case .int16: text.append("n")
        case .uint16: text.append("q")
        case .int32: text.append("i")
        case .uint32: text.append("u")
        case .int64: text.append("x")
        case .uint64: text.append("t")
        case .double: text.append("d")
        case .string: text.append("s")
        case .objectPath: text.append("o")
        case .signature: text.append("g")
        case .unixFD: text.append("h")
        case .variant: text.append("v")
        case .array(let element):
            text.append("a")
            element.append(to: &text)
        case .dictionary(let key, let value):
            text.append("a{")
            key.append(to: &text)
            value.append(to: &text)
            text.append("}")
        case .structure(let fields):
            text.append("(")
            for field in fields { field.append(to: &text) }
            text.append(")")
        }
    }

    /// The D-Bus type code (`DBUS_TYPE_*`) of this type's first character.
    var typeCode: Int32 {
        switch self {
        case .byte: return Int32(UInt8(ascii: "y"))
        case .boolean: return Int32(UInt8(ascii: "b"))
        case .int16: return Int32(UInt8(ascii: "n"))
        case .uint16: return Int32(UInt8(ascii: "q"))
        case .int32: return Int32(UInt8(ascii: "i"))
        case .uint32: return Int32(UInt8(ascii: "u"))
        case .int64: return Int32(UInt8(ascii: "x"))
        case .uint64: return Int32(UInt8(ascii: "t"))
        case .double: return Int32(UInt8(ascii: "d"))
        case .string: return Int32(UInt8(ascii: "s"))
        case .objectPath: return Int32(UInt8(ascii: "o"))
        case .signature: return Int32(UInt8(ascii: "g"))
        case .unixFD: return Int32(UInt8(ascii: "h"))
        case .variant: return Int32(UInt8(ascii: "v"))
        case .array, .dictionary: return Int32(UInt8(ascii: "a"))
        case .structure: return Int32(UInt8(ascii: "r"))
        }
    }

    /// The longest signature D-Bus allows.
    public static let maximumSignatureLength = 255
    /// The deepest nesting of arrays (and, separately, of structures) D-Bus allows.
    public static let maximumNestingDepth = 32

    /// Parses a signature of zero or more complete types.
    ///
    /// Throws `DBusSignatureError` naming the first problem; never traps.
    public static func parse(_ signature: String) throws(DBusSignatureError) -> [DBusType] {
        let bytes = Array(signature.utf8)
        guard bytes.count <= maximumSignatureLength else {
            throw .tooLong(length: bytes.count)
        }
        var parser = SignatureParser(bytes: bytes)
        var types: [DBusType] = []
        while parser.position < bytes.count {
            types.append(try parser.parseCompleteType(arrayDepth: 0, structDepth: 0))
        }
        return types
    }

    /// Parses a signature that must hold exactly one complete type (as a variant's does).
    public static func parseSingle(_ signature: String) throws(DBusSignatureError) -> DBusType {
        let types = try parse(signature)
        guard types.count == 1, let only = types.first else {
            throw .notSingleCompleteType(signature: signature)
        }
        return only
    }
}

/// Why a type signature is not valid D-Bus.
public enum DBusSignatureError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The signature is longer than 255 bytes.
    case tooLong(length: Int)
    /// A character that is no D-Bus type code.
    case unknownTypeCode(character: String, offset: Int)
    /// The signature ends inside an array, structure or dictionary.
    case truncated(offset: Int)
    /// A `{…}` dictionary entry outside an array, with a non-basic key, or not exactly two types.
    case invalidDictionaryEntry(offset: Int)
    /// `()`: structures need at least one field.
    case emptyStructure(offset: Int)
    /// A `)` or `}` without its opening character.
    case unbalanced(offset: Int)
    /// More than 32 nested arrays or 32 nested structures.
    case nestedTooDeep(offset: Int)
    /// A variant or similar place needed exactly one complete type.
    case notSingleCompleteType(signature: String)

    /// What is wrong, with the offset into the signature where it was found.
    public var description: String {
        switch self {
        case .tooLong(let length):
            return "D-Bus signature is \(length) bytes long; the limit is 255."
        case .unknownTypeCode(let character, let offset):
            return "D-Bus signature has unknown type code '\(character)' at offset \(offset)."
        case .truncated(let offset):
            return "D-Bus signature ends inside a container at offset \(offset)."
        case .invalidDictionaryEntry(let offset):
            return "D-Bus signature has an invalid dictionary entry at offset \(offset): entries need a basic key and one value, inside an array."
        case .emptyStructure(let offset):
            return "D-Bus signature has an empty structure '()' at offset \(offset)."
        case .unbalanced(let offset):
            return "D-Bus signature has an unbalanced bracket at offset \(offset)."
        case .nestedTooDeep(let offset):
            return "D-Bus signature nests deeper than 32 arrays or structures at offset \(offset)."
        case .notSingleCompleteType(let signature):
            return "D-Bus signature '\(signature)' must hold exactly one complete type."
        }
    }
}

private struct SignatureParser {
    let bytes: [UInt8]
    var position = 0

    mutating func parseCompleteType(arrayDepth: Int, structDepth: Int) throws(DBusSignatureError) -> DBusType {
        guard position < bytes.count else { throw .truncated(offset: position) }
        let start = position
        let code = bytes[position]
        position += 1
        switch code {
        case UInt8(ascii: "y"): return .byte
        case UInt8(ascii: "b"): return .boolean
        case UInt8(ascii: "n"): return .int16
        case UInt8(ascii: "q"): return .uint16
        case UInt8(ascii: "i"): return .int32
        case UInt8(ascii: "u"): return .uint32
        case UInt8(ascii: "x"): return .int64
        case UInt8(ascii: "t"): return .uint64
        case UInt8(ascii: "d"): return .double
        case UInt8(ascii: "s"): return .string
        case UInt8(ascii: "o"): return .objectPath
        case UInt8(ascii: "g"): return .signature
        case UInt8(ascii: "h"): return .unixFD
        case UInt8(ascii: "v"): return .variant
        case UInt8(ascii: "a"):
            guard arrayDepth < DBusType.maximumNestingDepth else { throw .nestedTooDeep(offset: start) }
            guard position < bytes.count else { throw .truncated(offset: position) }
            if bytes[position] == UInt8(ascii: "{") {
                let entryStart = position
                position += 1
                guard structDepth < DBusType.maximumNestingDepth else { throw .nestedTooDeep(offset: entryStart) }
                let key = try parseCompleteType(arrayDepth: arrayDepth + 1, structDepth: structDepth + 1)
                guard key.isBasic else { throw .invalidDictionaryEntry(offset: entryStart) }
                guard position < bytes.count else { throw .truncated(offset: position) }
                guard bytes[position] != UInt8(ascii: "}") else { throw .invalidDictionaryEntry(offset: entryStart) }
                let value = try parseCompleteType(arrayDepth: arrayDepth + 1, structDepth: structDepth + 1)
                guard position < bytes.count else { throw .truncated(offset: position) }
                guard bytes[position] == UInt8(ascii: "}") else { throw .invalidDictionaryEntry(offset: entryStart) }
                position += 1
                return .dictionary(key: key, value: value)
            }
            return .array(try parseCompleteType(arrayDepth: arrayDepth + 1, structDepth: structDepth))
        case UInt8(ascii: "("):
            guard structDepth < DBusType.maximumNestingDepth else { throw .nestedTooDeep(offset: start) }
            var fields: [DBusType] = []
            while true {
                guard position < bytes.count else { throw .truncated(offset: position) }
                if bytes[position] == UInt8(ascii: ")") {
                    position += 1
                    guard !fields.isEmpty else { throw .emptyStructure(offset: start) }
                    return .structure(fields)
                }
                fields.append(try parseCompleteType(arrayDepth: arrayDepth, structDepth: structDepth + 1))
            }
        case UInt8(ascii: "{"):
            throw .invalidDictionaryEntry(offset: start)
        case UInt8(ascii: ")"), UInt8(ascii: "}"):
            throw .unbalanced(offset: start)
        default:
            throw .unknownTypeCode(character: String(decoding: [code], as: UTF8.self), offset: start)
        }
    }
}
