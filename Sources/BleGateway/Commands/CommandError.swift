import Foundation

/// Why the gateway refused a command before running it, or a commands file when loading it:
/// a case to switch on, a stable `code` for MQTT clients, the JSON `path` of the member at
/// fault, and a message telling a person what to send instead.
public enum CommandError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The payload is larger than the gateway reads (`limit` bytes).
    case payloadTooLarge(bytes: Int, limit: Int)
    /// The payload, or the file, is not JSON.
    case invalidJSON
    /// The payload is JSON but not an object.
    case notAnObject(path: String)
    /// A member the command needs is missing.
    case missingField(path: String, needs: String)
    /// A member has the wrong type, is out of bounds, or is no valid address, UUID or hex.
    case invalidField(path: String, reason: String)
    /// `cmd` names no operation command of the configuration.
    case unknownOperation(String)
    /// The commands file cannot be read.
    case unreadableFile(path: String, reason: String)

    /// A stable identifier for programs: `payload_too_large`, `invalid_json`, `not_an_object`,
    /// `missing_field`, `invalid_field`, `unknown_command`, `unreadable_file`.
    public var code: String {
        switch self {
        case .payloadTooLarge: return "payload_too_large"
        case .invalidJSON: return "invalid_json"
        case .notAnObject: return "not_an_object"
        case .missingField: return "missing_field"
        case .invalidField: return "invalid_field"
        case .unknownOperation: return "unknown_command"
        case .unreadableFile: return "unreadable_file"
        }
    }

    /// The JSON path of the member at fault (`ble_write_service`, `commands[1].retries`), if any.
    public var path: String? {
        switch self {
        case .notAnObject(let path), .missingField(let path, _), .invalidField(let path, _): return path
        case .unknownOperation: return "cmd"
        default: return nil
        }
    }

    /// What is wrong and what to send instead.
    public var description: String {
        switch self {
        case .payloadTooLarge(let bytes, let limit):
            return "the command is \(bytes) bytes; the gateway reads commands of at most \(limit) bytes"
        case .invalidJSON: return "not valid JSON: send one JSON object, such as {\"ble_read_address\": \"AA:BB:CC:DD:EE:FF\", ...}"
        case .notAnObject(let path): return "\(path.isEmpty ? "the command" : path) must be a JSON object"
        case .missingField(let path, let needs): return "\(path) is missing: \(needs)"
        case .invalidField(let path, let reason): return path.isEmpty ? reason : "\(path): \(reason)"
        case .unknownOperation(let name): return "no operation command named '\(name)' in the configuration (--commands)"
        case .unreadableFile(let path, let reason): return "cannot read \(path): \(reason)"
        }
    }
}
