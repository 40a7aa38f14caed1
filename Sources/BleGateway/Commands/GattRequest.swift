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

    /// The device.
    public var address: String
    /// The service (empty for operation commands: the spec has it).
    public var service: String
    /// The characteristic UUID, as the command gave it.
    public var characteristic: String
    /// Read, write the given bytes, or run a named operation command.
    public var kind: Kind
    /// How values are given and reported.
    public var valueType: ValueType
    /// Attempts in all (`ttl`), each with its own connection.
    public var attempts: Int
    /// The original `ble_write_value`, echoed in the response.
    public var writtenText: String?

    /// Parses a command object; nil when it is no GATT request, an error text when it is a bad one.
    public static func parse(_ command: JSONValue, operations: [OperationCommandSpec]) -> Result<GattRequest, GattRequestError>? {
        let valueType = command["value_type"]?.stringValue.flatMap { ValueType(rawValue: $0.uppercased()) } ?? .string
        if command["value_type"]?.stringValue != nil && ValueType(rawValue: command["value_type"]?.stringValue?.uppercased() ?? "") == nil {
            return .failure(.init("value_type must be STRING, HEX, INT or FLOAT"))
        }
        let attempts = max(1, min(10, command["ttl"]?.intValue ?? 1))
        if let address = command["ble_write_address"]?.stringValue {
            guard let service = command["ble_write_service"]?.stringValue, let characteristic = command["ble_write_char"]?.stringValue,
                  let value = command["ble_write_value"] else {
                return .failure(.init("ble_write needs ble_write_service, ble_write_char and ble_write_value"))
            }
            let text = value.stringValue ?? value.intValue.map(String.init) ?? value.doubleValue.map { "\($0)" } ?? ""
            guard let bytes = encode(text, as: valueType) else { return .failure(.init("ble_write_value '\(text)' is not a valid \(valueType.rawValue)")) }
            return .success(GattRequest(address: address.uppercased(), service: service, characteristic: characteristic,
                                        kind: .write(bytes), valueType: valueType, attempts: attempts, writtenText: text))
        }
        if let address = command["ble_read_address"]?.stringValue {
            guard let service = command["ble_read_service"]?.stringValue, let characteristic = command["ble_read_char"]?.stringValue else {
                return .failure(.init("ble_read needs ble_read_service and ble_read_char"))
            }
            return .success(GattRequest(address: address.uppercased(), service: service, characteristic: characteristic,
                                        kind: .read, valueType: valueType, attempts: attempts, writtenText: nil))
        }
        if let name = command["cmd"]?.stringValue {
            guard let address = command["id"]?.stringValue else { return .failure(.init("cmd needs id (the device address)")) }
            guard let spec = operations.first(where: { $0.name == name }) else {
                return .failure(.init("no operation command named '\(name)' in the configuration"))
            }
            return .success(GattRequest(address: address.uppercased(), service: spec.service, characteristic: spec.write,
                                        kind: .operation(spec), valueType: .hex, attempts: 1 + max(0, spec.retries ?? 0), writtenText: nil))
        }
        return nil
    }

    static func encode(_ text: String, as type: ValueType) -> Data? {
        switch type {
        case .string: return Data(text.utf8)
        case .hex: return Data(hex: text)
        case .int:
            guard let value = Int32(text) else { return nil }
            return withUnsafeBytes(of: value.littleEndian) { Data($0) }
        case .float:
            guard let value = Float(text) else { return nil }
            return withUnsafeBytes(of: value.bitPattern.littleEndian) { Data($0) }
        }
    }

    /// Renders a read value as `value_type` says.
    func render(_ data: Data) -> JSONValue {
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

/// Why a GATT command was refused before it ran.
public struct GattRequestError: Error, Sendable, CustomStringConvertible {
    /// What is wrong.
    public var description: String
    init(_ description: String) { self.description = description }
}
