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

    /// Loads `{"commands": [...]}` or a bare array from a file.
    public static func load(path: String) throws -> [OperationCommandSpec] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        struct Wrapper: Decodable { var commands: [OperationCommandSpec] }
        if let wrapped = try? JSONDecoder().decode(Wrapper.self, from: data) { return wrapped.commands }
        return try JSONDecoder().decode([OperationCommandSpec].self, from: data)
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
