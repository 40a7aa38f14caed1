import BleCore
import BleDSL
import Foundation

/// A request/response exchange with a device, named in the gateway's configuration file and run
/// by BleKit's command engine (`PeripheralOperationCommand`) when `{"cmd": NAME, "id": MAC}`
/// arrives; the response is parsed into fields and published.
///
/// ```json
/// {"name": "battery", "service": "0000fff0-…", "write": "0000fff1-…", "notify": "0000fff2-…",
///  "command": "a501", "responseLength": 3, "timeout": 5, "retries": 2,
///  "fields": [{"key": "batt", "offset": 1, "size": 1}, {"key": "volt", "offset": 2, "size": 1, "scale": 0.1}]}
/// ```
public struct OperationCommandSpec: Sendable, Codable, Equatable {
    /// One field of the response.
    public struct Field: Sendable, Codable, Equatable {
        /// The JSON key it is published under.
        public var key: String
        /// Its first byte in the response.
        public var offset: Int
        /// Its length in bytes (1…8), little-endian unless `bigEndian`.
        public var size: Int
        /// Two's complement.
        public var signed: Bool?
        /// Multiplied into the value.
        public var scale: Double?
        /// Big-endian byte order.
        public var bigEndian: Bool?

        /// A field.
        public init(key: String, offset: Int, size: Int, signed: Bool? = nil, scale: Double? = nil, bigEndian: Bool? = nil) {
            self.key = key
            self.offset = offset
            self.size = size
            self.signed = signed
            self.scale = scale
            self.bigEndian = bigEndian
        }
    }

    /// The name commands use.
    public var name: String
    /// The service of both characteristics.
    public var service: String
    /// Where the command is written.
    public var write: String
    /// Where the response arrives (notifications).
    public var notify: String
    /// The command bytes, hex.
    public var command: String
    /// The response is complete at this many bytes.
    public var responseLength: Int
    /// Seconds to wait for the response.
    public var timeout: Double?
    /// Attempts after the first, each with a fresh connection.
    public var retries: Int?
    /// How the response is parsed; with no fields it is published as hex under `response`.
    public var fields: [Field]?

    /// A command.
    public init(name: String, service: String, write: String, notify: String, command: String, responseLength: Int,
                timeout: Double? = nil, retries: Int? = nil, fields: [Field]? = nil) {
        self.name = name
        self.service = service
        self.write = write
        self.notify = notify
        self.command = command
        self.responseLength = responseLength
        self.timeout = timeout
        self.retries = retries
        self.fields = fields
    }

    /// The UUIDs of a checked spec.
    public struct CheckedUUIDs: Sendable, Equatable {
        /// `service`, parsed.
        public var service: BluetoothUUID
        /// `write`, parsed.
        public var write: BluetoothUUID
        /// `notify`, parsed.
        public var notify: BluetoothUUID
    }

    /// The most fields a response may be parsed into.
    public static let maximumFields = 64
    /// The longest response a command may wait for.
    public static let maximumResponseLength = 4096
    /// The most attempts after the first.
    public static let maximumRetries = GattRequest.maximumAttempts - 1

    /// Checks every member against its type and bounds, so nothing from a configuration can
    /// trap later (a bad UUID, `retries` near `Int.max`); `path` names the spec in the message.
    @discardableResult
    public func validated(at path: String) throws(CommandError) -> CheckedUUIDs {
        func at(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }
        guard !name.isEmpty, name.utf8.count <= 128 else { throw .invalidField(path: at("name"), reason: "must be 1 to 128 bytes long") }
        func uuid(_ key: String, _ text: String) throws(CommandError) -> BluetoothUUID {
            do { return try BluetoothUUID(parsing: text) } catch { throw .invalidField(path: at(key), reason: error.description) }
        }
        let uuids = CheckedUUIDs(service: try uuid("service", service), write: try uuid("write", write), notify: try uuid("notify", notify))
        guard let bytes = Data(hex: command), !bytes.isEmpty, bytes.count <= GattRequest.maximumValueLength else {
            throw .invalidField(path: at("command"), reason: "'\(command.prefix(64))' must be 1 to \(GattRequest.maximumValueLength) bytes of hex")
        }
        guard (1...Self.maximumResponseLength).contains(responseLength) else {
            throw .invalidField(path: at("responseLength"), reason: "\(responseLength) is out of range: must be from 1 to \(Self.maximumResponseLength)")
        }
        if let timeout, !(timeout.isFinite && timeout > 0 && timeout <= 600) {
            throw .invalidField(path: at("timeout"), reason: "\(timeout) is out of range: must be more than 0 and at most 600 seconds")
        }
        if let retries, !(0...Self.maximumRetries).contains(retries) {
            throw .invalidField(path: at("retries"), reason: "\(retries) is out of range: must be from 0 to \(Self.maximumRetries)")
        }
        if let fields {
            guard fields.count <= Self.maximumFields else {
                throw .invalidField(path: at("fields"), reason: "has \(fields.count) entries; at most \(Self.maximumFields) are allowed")
            }
            for (index, field) in fields.enumerated() {
                let prefix = at("fields[\(index)]")
                guard !field.key.isEmpty, field.key.utf8.count <= 64 else { throw .invalidField(path: "\(prefix).key", reason: "must be 1 to 64 bytes long") }
                guard (1...8).contains(field.size) else { throw .invalidField(path: "\(prefix).size", reason: "\(field.size) is out of range: must be from 1 to 8") }
                guard field.offset >= 0, field.offset <= responseLength - field.size else {
                    throw .invalidField(path: "\(prefix).offset", reason: "\(field.offset) puts the field past the \(responseLength)-byte response")
                }
                if let scale = field.scale, !scale.isFinite || scale == 0 {
                    throw .invalidField(path: "\(prefix).scale", reason: "must be a finite number other than 0 (it multiplies every value)")
                }
            }
        }
        return uuids
    }

    /// Loads `{"commands": [...]}` or a bare array from a file, every spec checked
    /// (`validated(at:)`); a refusal names the JSON path of what is wrong.
    public static func load(path: String) throws(CommandError) -> [OperationCommandSpec] {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw .unreadableFile(path: path, reason: error.localizedDescription)
        }
        guard let json = JSONValue.parse(data) else { throw .invalidJSON }
        return try parse(json)
    }

    /// Reads `{"commands": [...]}` or a bare array of specs, as `load(path:)` does.
    public static func parse(_ json: JSONValue) throws(CommandError) -> [OperationCommandSpec] {
        let items: [JSONValue]
        let base: String
        switch json {
        case .array(let array):
            items = array
            base = ""
        case .object:
            let top = try JSONFields(json)
            try top.refuseUnknown(["commands"])
            guard case .array(let array)? = json["commands"] else {
                throw .missingField(path: "commands", needs: "the file holds {\"commands\": [...]} or an array of commands")
            }
            items = array
            base = "commands"
        default:
            throw .notAnObject(path: "")
        }
        guard items.count <= 1024 else { throw .invalidField(path: base, reason: "has \(items.count) commands; at most 1024 are allowed") }
        var specs: [OperationCommandSpec] = []
        var names: Set<String> = []
        for (index, item) in items.enumerated() {
            let path = "\(base)[\(index)]"
            let spec = try OperationCommandSpec(try JSONFields(item, path: path))
            try spec.validated(at: path)
            guard names.insert(spec.name).inserted else {
                throw .invalidField(path: "\(path).name", reason: "'\(spec.name)' is the name of an earlier command too")
            }
            specs.append(spec)
        }
        return specs
    }

    private init(_ fields: JSONFields) throws(CommandError) {
        try fields.refuseUnknown(["name", "service", "write", "notify", "command", "responseLength", "timeout", "retries", "fields"])
        let needs = "an operation command has name, service, write, notify, command and responseLength"
        name = try fields.requiredString("name", needs: needs, maxLength: 128)
        service = try fields.requiredString("service", needs: needs, maxLength: 64)
        write = try fields.requiredString("write", needs: needs, maxLength: 64)
        notify = try fields.requiredString("notify", needs: needs, maxLength: 64)
        command = try fields.requiredString("command", needs: needs, maxLength: 2 * GattRequest.maximumValueLength + 2)
        guard let length = try fields.integer("responseLength", in: 1...Self.maximumResponseLength) else {
            throw .missingField(path: fields.path("responseLength"), needs: needs)
        }
        responseLength = length
        timeout = try fields.number("timeout", in: 0...600)
        retries = try fields.integer("retries", in: 0...Self.maximumRetries)
        var parsed: [Field]?
        if let entries = try fields.objects("fields", maxCount: Self.maximumFields) {
            var list: [Field] = []
            for entry in entries {
                try entry.refuseUnknown(["key", "offset", "size", "signed", "scale", "bigEndian"])
                let needs = "a field has key, offset and size"
                let key = try entry.requiredString("key", needs: needs, maxLength: 64)
                guard let offset = try entry.integer("offset", in: 0...(Self.maximumResponseLength - 1)) else {
                    throw .missingField(path: entry.path("offset"), needs: needs)
                }
                guard let size = try entry.integer("size", in: 1...8) else { throw .missingField(path: entry.path("size"), needs: needs) }
                list.append(Field(key: key, offset: offset, size: size, signed: try entry.bool("signed"),
                                  scale: try entry.number("scale", in: -1e12...1e12), bigEndian: try entry.bool("bigEndian")))
            }
            parsed = list
        }
        self.fields = parsed
    }

    /// The parsed response, in field order; fields past the end of the response are left out.
    public func parse(_ response: Data) -> [(String, JSONValue)] {
        guard let fields, !fields.isEmpty else { return [("response", .string(response.lowercaseHex))] }
        let bytes = [UInt8](response)
        var result: [(String, JSONValue)] = []
        for field in fields where field.size >= 1 && field.size <= 8 && field.offset >= 0 && field.offset <= bytes.count
            && field.size <= bytes.count - field.offset {
            var slice = Array(bytes[field.offset..<(field.offset + field.size)])
            if field.bigEndian != true { slice.reverse() }
            let raw = slice.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            var value = Int64(bitPattern: raw)
            if field.signed == true && field.size < 8 {
                let shift = Int64(64 - 8 * field.size)
                value = Int64(bitPattern: raw << UInt64(shift)) >> shift
            }
            if let scale = field.scale, scale != 1 {
                result.append((field.key, .number(BTHomeDecoder.rounded(Double(value) * scale, factor: abs(scale)))))
            } else {
                result.append((field.key, .integer(Int(value))))
            }
        }
        return result
    }
}

/// An `OperationCommandSpec` as BleKit's command engine runs it: the response is complete when
/// `responseLength` bytes have arrived.
struct SpecOperationCommand: PeripheralOperationCommand {
    let spec: OperationCommandSpec

    var cmdData: Data { Data(hex: spec.command) ?? Data() }

    var timeOutInterval: TimeInterval { spec.timeout ?? 5 }

    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult {
        let group = dataGroup + [data]
        let total = group.reduce(0) { $0 + $1.count }
        return total >= spec.responseLength ? .success(data: group) : .goon(data: group)
    }
}
