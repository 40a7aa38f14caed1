import BleCore
import Foundation

/// The members of one JSON object from outside (an MQTT command, a commands file), read with
/// their type and bounds checked: a wrong one is refused with its path, never trapped on,
/// clamped or left out without a word.
struct JSONFields {
    let value: JSONValue
    /// Where the object is in its document (`commands[1]`), empty at the top.
    let path: String

    init(_ value: JSONValue, path: String = "") throws(CommandError) {
        guard case .object = value else { throw .notAnObject(path: path) }
        self.value = value
        self.path = path
    }

    func path(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func has(_ key: String) -> Bool { value[key] != nil }

    /// Refuses members not in `known`: in a file a person wrote, a misspelt key (`retry`) must
    /// not be ignored as if the setting had been left out.
    func refuseUnknown(_ known: Set<String>) throws(CommandError) {
        guard case .object(let pairs) = value else { return }
        for (key, _) in pairs where !known.contains(key) {
            throw .invalidField(path: path(key), reason: "is not a known member; known are \(known.sorted().joined(separator: ", "))")
        }
    }

    /// A string member, at most `maxLength` characters; nil when absent.
    func string(_ key: String, maxLength: Int = 256) throws(CommandError) -> String? {
        guard let member = value[key] else { return nil }
        guard let text = member.stringValue else { throw .invalidField(path: path(key), reason: "must be a string, not \(member.kind)") }
        guard text.utf8.count <= maxLength else {
            throw .invalidField(path: path(key), reason: "is \(text.utf8.count) bytes long; at most \(maxLength) are allowed")
        }
        return text
    }

    func requiredString(_ key: String, needs: String, maxLength: Int = 256) throws(CommandError) -> String {
        guard let text = try string(key, maxLength: maxLength) else { throw .missingField(path: path(key), needs: needs) }
        return text
    }

    /// An integer member within `range`; nil when absent. Numbers past `range` (or past
    /// `Int`) are refused, not clamped or converted with a trap.
    func integer(_ key: String, in range: ClosedRange<Int>) throws(CommandError) -> Int? {
        guard let member = value[key] else { return nil }
        let bounds = "must be an integer from \(range.lowerBound) to \(range.upperBound)"
        switch member {
        case .integer(let number):
            guard range.contains(number) else { throw .invalidField(path: path(key), reason: "\(number) is out of range: \(bounds)") }
            return number
        case .number(let number):
            guard number.isFinite, number.rounded() == number, number >= Double(range.lowerBound), number <= Double(range.upperBound) else {
                throw .invalidField(path: path(key), reason: "\(number) is out of range: \(bounds)")
            }
            return Int(number)
        default:
            throw .invalidField(path: path(key), reason: "\(bounds), not \(member.kind)")
        }
    }

    /// A finite number within `range`; nil when absent.
    func number(_ key: String, in range: ClosedRange<Double>) throws(CommandError) -> Double? {
        guard let member = value[key] else { return nil }
        guard let number = member.doubleValue, number.isFinite, range.contains(number) else {
            throw .invalidField(path: path(key), reason: "must be a number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    /// A boolean member; nil when absent.
    func bool(_ key: String) throws(CommandError) -> Bool? {
        guard let member = value[key] else { return nil }
        guard case .bool(let flag) = member else { throw .invalidField(path: path(key), reason: "must be true or false, not \(member.kind)") }
        return flag
    }

    /// A Bluetooth UUID (`fff0`, `0000fff0`, or the 36-character form), parsed without trapping.
    func uuid(_ key: String, needs: String) throws(CommandError) -> (text: String, uuid: BluetoothUUID) {
        let text = try requiredString(key, needs: needs, maxLength: 64)
        do {
            return (text, try BluetoothUUID(parsing: text))
        } catch {
            throw .invalidField(path: path(key), reason: error.description)
        }
    }

    /// A Bluetooth device address, `AA:BB:CC:DD:EE:FF` (either case), canonical upper case.
    func address(_ key: String, needs: String) throws(CommandError) -> String {
        let text = try requiredString(key, needs: needs, maxLength: 64)
        guard Self.isAddress(text) else {
            throw .invalidField(path: path(key), reason: "'\(text)' is not a Bluetooth address: write six hex pairs, AA:BB:CC:DD:EE:FF")
        }
        return text.uppercased()
    }

    static func isAddress(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 17 else { return false }
        for (index, byte) in bytes.enumerated() {
            if index % 3 == 2 {
                guard byte == UInt8(ascii: ":") else { return false }
            } else {
                guard (byte >= 0x30 && byte <= 0x39) || ((byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x66) else { return false }
            }
        }
        return true
    }

    /// An array member's elements, each an object, with their paths; nil when absent.
    func objects(_ key: String, maxCount: Int) throws(CommandError) -> [JSONFields]? {
        guard let member = value[key] else { return nil }
        guard case .array(let items) = member else { throw .invalidField(path: path(key), reason: "must be an array, not \(member.kind)") }
        guard items.count <= maxCount else { throw .invalidField(path: path(key), reason: "has \(items.count) entries; at most \(maxCount) are allowed") }
        var result: [JSONFields] = []
        for (index, item) in items.enumerated() { result.append(try JSONFields(item, path: "\(path(key))[\(index)]")) }
        return result
    }
}

extension JSONValue {
    /// The kind of value, for messages: "a string", "an array", ….
    var kind: String {
        switch self {
        case .string: return "a string"
        case .integer, .number: return "a number"
        case .bool: return "a boolean"
        case .object: return "an object"
        case .array: return "an array"
        case .null: return "null"
        }
    }
}
