import Foundation

/// A JSON value whose objects keep their key order, so published messages read like
/// OpenMQTTGateway's (id first) and are byte-for-byte repeatable in tests.
public enum JSONValue: Sendable, Equatable {
    /// A string.
    case string(String)
    /// An integer.
    case integer(Int)
    /// A number with a fraction.
    case number(Double)
    /// true or false.
    case bool(Bool)
    /// An object, keys in insertion order.
    case object([(String, JSONValue)])
    /// An array.
    case array([JSONValue])
    /// null.
    case null

    /// Compares objects as ordered pairs.
    public static func == (left: JSONValue, right: JSONValue) -> Bool {
        switch (left, right) {
        case (.string(let a), .string(let b)): return a == b
        case (.integer(let a), .integer(let b)): return a == b
        case (.number(let a), .number(let b)): return a == b
        case (.bool(let a), .bool(let b)): return a == b
        case (.array(let a), .array(let b)): return a == b
        case (.null, .null): return true
        case (.object(let a), .object(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    /// The member `key` of an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let pairs) = self else { return nil }
        return pairs.first { $0.0 == key }?.1
    }

    /// The string, if this is one.
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The number as an integer, if it is integral.
    public var intValue: Int? {
        switch self {
        case .integer(let value): return value
        case .number(let value) where value.rounded() == value && abs(value) < 1e15: return Int(value)
        case .string(let text): return Int(text)
        default: return nil
        }
    }

    /// The number, if this is one.
    public var doubleValue: Double? {
        switch self {
        case .integer(let value): return Double(value)
        case .number(let value): return value
        default: return nil
        }
    }

    /// The truth value; OpenMQTTGateway's commands also send 0/1 and "true"/"false".
    public var boolValue: Bool? {
        switch self {
        case .bool(let value): return value
        case .integer(let value): return value != 0
        case .string(let text): return text.lowercased() == "true" ? true : text.lowercased() == "false" ? false : nil
        default: return nil
        }
    }

    /// The serialised form, without spaces.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// The serialised form as bytes.
    public var data: Data { Data(bytes) }

    /// The serialised form as UTF-8, written straight into bytes: a gateway serialises one
    /// object per advertisement, thousands a second, and appending to a String scalar by
    /// scalar cost more than the rest of the message.
    public var bytes: [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        write(to: &output)
        return output
    }

    private func write(to output: inout [UInt8]) {
        switch self {
        case .string(let text): JSONValue.writeString(text, to: &output)
        case .integer(let value): output.append(contentsOf: String(value).utf8)
        case .number(let value):
            if value.isFinite {
                // Shortest round-trip form, without the ".0" of integral values Swift prints.
                let text = "\(value)"
                output.append(contentsOf: (text.hasSuffix(".0") ? String(text.dropLast(2)) : text).utf8)
            } else {
                output.append(contentsOf: "null".utf8)
            }
        case .bool(let value): output.append(contentsOf: (value ? "true" : "false").utf8)
        case .null: output.append(contentsOf: "null".utf8)
        case .array(let items):
            output.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                item.write(to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let pairs):
            output.append(UInt8(ascii: "{"))
            for (index, (key, value)) in pairs.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                JSONValue.writeString(key, to: &output)
                output.append(UInt8(ascii: ":"))
                value.write(to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    private static func writeString(_ text: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { utf8 in
            // Most strings (addresses, hex, names) need no escape: copied in one go.
            guard utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else {
                output.append(contentsOf: utf8)
                return
            }
            let hexDigits: StaticString = "0123456789abcdef"
            for byte in utf8 {
                switch byte {
                case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
                case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
                case UInt8(ascii: "\n"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
                case UInt8(ascii: "\r"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
                case UInt8(ascii: "\t"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
                case ..<0x20:
                    // Bytes under 0x20 are whole scalars in UTF-8 (never part of a longer one).
                    output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                    hexDigits.withUTF8Buffer { digits in
                        output.append(digits[Int(byte >> 4)])
                        output.append(digits[Int(byte & 0x0f)])
                    }
                default: output.append(byte)
                }
            }
        }
        output.append(UInt8(ascii: "\""))
    }

    /// Parses JSON text; nil when it is not valid JSON (bad input from the broker never traps).
    /// Object keys keep their order; nesting deeper than 64 levels is refused.
    public static func parse(_ data: Data) -> JSONValue? {
        var parser = JSONParser(bytes: [UInt8](data))
        guard let value = parser.value(depth: 0) else { return nil }
        parser.skipSpace()
        return parser.index == parser.bytes.count ? value : nil
    }
}

/// A small recursive-descent JSON reader (RFC 8259), so parsed objects keep their key order
/// and numbers keep the integer/fraction distinction that Foundation's reader blurs.
private struct JSONParser {
    let bytes: [UInt8]
    var index = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func skipSpace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    mutating func value(depth: Int) -> JSONValue? {
        guard depth < 64 else { return nil }
        skipSpace()
        guard index < bytes.count else { return nil }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            index += 1
            var pairs: [(String, JSONValue)] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(pairs) }
            while true {
                skipSpace()
                guard let key = string() else { return nil }
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
                index += 1
                guard let item = value(depth: depth + 1) else { return nil }
                pairs.append((key, item))
                skipSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(pairs) }
                return nil
            }
        case UInt8(ascii: "["):
            index += 1
            var items: [JSONValue] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
            while true {
                guard let item = value(depth: depth + 1) else { return nil }
                items.append(item)
                skipSpace()
                guard index < bytes.count else { return nil }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(items) }
                return nil
            }
        case UInt8(ascii: "\""):
            return string().map(JSONValue.string)
        case UInt8(ascii: "t"): return literal("true", .bool(true))
        case UInt8(ascii: "f"): return literal("false", .bool(false))
        case UInt8(ascii: "n"): return literal("null", .null)
        default: return number()
        }
    }

    private mutating func literal(_ text: String, _ result: JSONValue) -> JSONValue? {
        let expected = Array(text.utf8)
        guard index + expected.count <= bytes.count, Array(bytes[index..<(index + expected.count)]) == expected else { return nil }
        index += expected.count
        return result
    }

    private mutating func number() -> JSONValue? {
        let start = index
        var fractional = false
        while index < bytes.count {
            let byte = bytes[index]
            if (byte >= 0x30 && byte <= 0x39) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+") {
                index += 1
            } else if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                fractional = true
                index += 1
            } else {
                break
            }
        }
        guard index > start else { return nil }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if !fractional, let integer = Int(text) { return .integer(integer) }
        return Double(text).map(JSONValue.number)
    }

    private mutating func string() -> String? {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        index += 1
        var scalars = String.UnicodeScalarView()
        var run: [UInt8] = []
        func flush() {
            if !run.isEmpty { scalars.append(contentsOf: String(decoding: run, as: UTF8.self).unicodeScalars); run.removeAll() }
        }
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: "\"") {
                flush()
                return String(scalars)
            }
            if byte == UInt8(ascii: "\\") {
                flush()
                guard index < bytes.count else { return nil }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "u"):
                    guard index + 4 <= bytes.count, let code = UInt32(String(decoding: bytes[index..<(index + 4)], as: UTF8.self), radix: 16) else { return nil }
                    index += 4
                    // Surrogate halves become U+FFFD rather than a trap.
                    scalars.append(Unicode.Scalar(code) ?? "\u{FFFD}")
                default: scalars.append(Unicode.Scalar(escape))
                }
            } else {
                run.append(byte)
            }
        }
        return nil
    }
}

extension Data {
    /// Lower-case hex, as OpenMQTTGateway writes manufacturer and service data.
    var lowercaseHex: String {
        let hexDigits: StaticString = "0123456789abcdef"
        return hexDigits.withUTF8Buffer { digits in
            String(unsafeUninitializedCapacity: count * 2) { output in
                var index = 0
                for byte in self {
                    output[index] = digits[Int(byte >> 4)]
                    output[index + 1] = digits[Int(byte & 0x0f)]
                    index += 2
                }
                return index
            }
        }
    }

    /// Bytes from hex text (spaces and a 0x prefix allowed); nil when it is not hex.
    init?(hex text: String) {
        var cleaned = text.replacingOccurrences(of: " ", with: "")
        if cleaned.hasPrefix("0x") || cleaned.hasPrefix("0X") { cleaned.removeFirst(2) }
        guard cleaned.count.isMultiple(of: 2) else { return nil }
        var bytes: [UInt8] = []
        var index = cleaned.startIndex
        while index < cleaned.endIndex {
            let next = cleaned.index(index, offsetBy: 2)
            guard let byte = UInt8(cleaned[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        self.init(bytes)
    }
}
