import BleCore
import Foundation

/// A GATT request from MQTT: OpenMQTTGateway's `ble_read_*` / `ble_write_*` commands, or a named
/// operation command (`{"cmd": NAME, "id": MAC}`).
public struct GattRequest: Sendable {
    /// What to do.
    public enum Kind: Sendable {
        /// Read the characteristic.
        case read
        /// Write these bytes.
        case write(Data)
        /// Run the named command.
        case operation(OperationCommandSpec)
    }

    /// How OpenMQTTGateway's `value_type` renders values.
    public enum ValueType: String, Sendable {
        /// Bytes as text (the default).
        case string = "STRING"
        /// Hex digits.
        case hex = "HEX"
        /// A little-endian integer.
        case int = "INT"
        /// A little-endian 32-bit float.
        case float = "FLOAT"
    }

    /// The device, `AA:BB:CC:DD:EE:FF`.
    public var address: String
    /// The service, as the command gave it (operation commands: as the spec gives it).
    public var service: String
    /// The characteristic, as the command gave it.
    public var characteristic: String
    /// `service`, parsed.
    public var serviceUUID: BluetoothUUID
    /// `characteristic`, parsed.
    public var characteristicUUID: BluetoothUUID
    /// Read, write the given bytes, or run a named operation command.
    public var kind: Kind
    /// How values are given and reported.
    public var valueType: ValueType
    /// Attempts in all (`ttl`, 1…10), each with its own connection.
    public var attempts: Int
    /// The original `ble_write_value`, echoed in the response.
    public var writtenText: String?

    /// The most attempts a command may ask for (`ttl`, or an operation command's `retries` + 1).
    public static let maximumAttempts = 10
    /// The longest value a write may carry (an attribute's maximum length).
    public static let maximumValueLength = 512

    /// Parses a command object; nil when it is no GATT request (no `ble_write_address`,
    /// `ble_read_address` or `cmd`), a typed refusal, with the member's path, when it is a bad one.
    public static func parse(_ command: JSONValue, operations: [OperationCommandSpec]) -> Result<GattRequest, CommandError>? {
        guard command["ble_write_address"] != nil || command["ble_read_address"] != nil || command["cmd"] != nil else { return nil }
        do throws(CommandError) {
            return .success(try parseRequest(JSONFields(command), operations: operations))
        } catch {
            return .failure(error)
        }
    }

    private static func parseRequest(_ fields: JSONFields, operations: [OperationCommandSpec]) throws(CommandError) -> GattRequest {
        var valueType = ValueType.string
        if let text = try fields.string("value_type", maxLength: 16) {
            guard let type = ValueType(rawValue: text.uppercased()) else {
                throw .invalidField(path: "value_type", reason: "'\(text)' is not a value type: use STRING, HEX, INT or FLOAT")
            }
            valueType = type
        }
        let attempts = try fields.integer("ttl", in: 1...maximumAttempts) ?? 1
        if fields.has("ble_write_address") {
            let needs = "ble_write needs ble_write_address, ble_write_service, ble_write_char and ble_write_value"
            let address = try fields.address("ble_write_address", needs: needs)
            let service = try fields.uuid("ble_write_service", needs: needs)
            let characteristic = try fields.uuid("ble_write_char", needs: needs)
            guard let value = fields.value["ble_write_value"] else { throw .missingField(path: "ble_write_value", needs: needs) }
            let text: String
            switch value {
            case .string(let string): text = string
            case .integer(let number): text = String(number)
            case .number(let number) where number.isFinite: text = "\(number)"
            default: throw .invalidField(path: "ble_write_value", reason: "must be a string or a number, not \(value.kind)")
            }
            guard let bytes = encode(text, as: valueType) else {
                throw .invalidField(path: "ble_write_value", reason: "'\(text.prefix(64))' is not a valid \(valueType.rawValue) value")
            }
            guard bytes.count <= maximumValueLength else {
                throw .invalidField(path: "ble_write_value", reason: "is \(bytes.count) bytes; a characteristic takes at most \(maximumValueLength)")
            }
            return GattRequest(address: address, service: service.text, characteristic: characteristic.text, serviceUUID: service.uuid,
                               characteristicUUID: characteristic.uuid, kind: .write(bytes), valueType: valueType, attempts: attempts,
                               writtenText: text)
        }
        if fields.has("ble_read_address") {
            let needs = "ble_read needs ble_read_address, ble_read_service and ble_read_char"
            let address = try fields.address("ble_read_address", needs: needs)
            let service = try fields.uuid("ble_read_service", needs: needs)
            let characteristic = try fields.uuid("ble_read_char", needs: needs)
            return GattRequest(address: address, service: service.text, characteristic: characteristic.text, serviceUUID: service.uuid,
                               characteristicUUID: characteristic.uuid, kind: .read, valueType: valueType, attempts: attempts, writtenText: nil)
        }
        let name = try fields.requiredString("cmd", needs: "cmd names an operation command", maxLength: 128)
        let address = try fields.address("id", needs: "cmd needs id (the device address)")
        guard let spec = operations.first(where: { $0.name == name }) else { throw .unknownOperation(name) }
        // Checked when the configuration was loaded; checked again so a spec made in code cannot trap here.
        let checked = try spec.validated(at: "operation command '\(name)'")
        return GattRequest(address: address, service: spec.service, characteristic: spec.write, serviceUUID: checked.service,
                           characteristicUUID: checked.write, kind: .operation(spec), valueType: .hex,
                           attempts: 1 + (spec.retries ?? 0), writtenText: nil)
    }

    static func encode(_ text: String, as type: ValueType) -> Data? {
        switch type {
        case .string: return Data(text.utf8)
        case .hex: return Data(hex: text)
        case .int:
            guard let value = Int32(text) else { return nil }
            return withUnsafeBytes(of: value.littleEndian) { Data($0) }
        case .float:
            guard let value = Float(text), value.isFinite else { return nil }
            return withUnsafeBytes(of: value.bitPattern.littleEndian) { Data($0) }
        }
    }

    /// Renders a read value as `value_type` says.
    package func render(_ data: Data) -> JSONValue {
        switch valueType {
        case .string: return .string(String(decoding: data, as: UTF8.self))
        case .hex: return .string(data.lowercaseHex)
        case .int:
            let bytes = [UInt8](data.prefix(4))
            var value: Int32 = 0
            for (index, byte) in bytes.enumerated() { value |= Int32(byte) << (8 * Int32(index)) }
            if bytes.count < 4, let last = bytes.last, last & 0x80 != 0 {
                value |= Int32(bitPattern: UInt32.max << (8 * UInt32(bytes.count)))
            }
            return .integer(Int(value))
        case .float:
            guard data.count >= 4 else { return .null }
            let bits = [UInt8](data.prefix(4)).enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
            return .number(Double(Float(bitPattern: bits)))
        }
    }
}
