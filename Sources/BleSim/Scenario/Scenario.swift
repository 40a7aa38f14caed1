import BleDBus
import Foundation

/// A simulator setup in a JSON file: adapters, timing, TemporaryTimeout, peripherals and faults.
///
/// ```json
/// {
///   "temporaryTimeout": 30,
///   "timing": {"scale": 1},
///   "adapters": [{"name": "hci0", "address": "00:AA:01:00:00:00"}],
///   "peripherals": [{"address": "C0:FF:EE:00:00:01", "name": "LED", "services": [...]}],
///   "faults": [{"connect": "C0:FF:EE:00:00:01", "failure": "abortByLocal", "times": 1}]
/// }
/// ```
public struct Scenario: Sendable, Decodable {
    /// The daemon's configuration.
    public var configuration: Simulator.Configuration
    /// The peripherals in the air.
    public var peripherals: [PeripheralSpec]
    /// Faults armed at start.
    public var faults: [FaultSpec]

    /// One fault in a scenario file.
    public enum FaultSpec: Sendable, Decodable, Equatable {
        /// `{"connect": ADDRESS, "failure": "abortByLocal|inProgress|neverAnswer|timeout", "times": N}`
        case connect(address: String, failure: FaultInjector.ConnectFailure, times: Int?)
        /// `{"linkLoss": ADDRESS, "afterPackets": N}`
        case linkLoss(address: String, afterPackets: Int)
        /// `{"attError": ADDRESS, "characteristic": UUID, "operation": "read|write", "code": 14, "times": N}`
        case attError(address: String, characteristic: String, operation: FaultInjector.Operation, code: UInt8, times: Int?)
        /// `{"notifications": ADDRESS, "dropEvery": N}` or `{"notifications": ADDRESS, "duplicate": true}`
        /// or `{"notifications": ADDRESS, "reorder": true}`
        case notifications(address: String, fault: FaultInjector.NotificationFault)
        /// `{"neverReply": MEMBER, "times": N}`
        case neverReply(member: String, times: Int?)
        /// `{"accessDenied": true}`
        case accessDenied

        private enum Keys: String, CodingKey {
            case connect, failure, times, linkLoss, afterPackets, attError, characteristic, operation, code
            case notifications, dropEvery, duplicate, reorder, neverReply, accessDenied
        }

        /// Reads one fault; an unknown shape is an error naming the accepted keys.
        public init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            if let address = try container.decodeIfPresent(String.self, forKey: .connect) {
                self = .connect(address: try Scenario.address(address, container, .connect),
                                failure: try container.decode(FaultInjector.ConnectFailure.self, forKey: .failure),
                                times: try container.decodeIfPresent(Int.self, forKey: .times))
            } else if let address = try container.decodeIfPresent(String.self, forKey: .linkLoss) {
                self = .linkLoss(address: try Scenario.address(address, container, .linkLoss),
                                 afterPackets: try container.decode(Int.self, forKey: .afterPackets))
            } else if let address = try container.decodeIfPresent(String.self, forKey: .attError) {
                self = .attError(address: try Scenario.address(address, container, .attError),
                                 characteristic: try SimUUID.decode(container.decode(String.self, forKey: .characteristic),
                                                                    in: container, key: .characteristic),
                                 operation: try container.decode(FaultInjector.Operation.self, forKey: .operation),
                                 code: try container.decode(UInt8.self, forKey: .code),
                                 times: try container.decodeIfPresent(Int.self, forKey: .times))
            } else if let address = try container.decodeIfPresent(String.self, forKey: .notifications) {
                let checked = try Scenario.address(address, container, .notifications)
                if let every = try container.decodeIfPresent(Int.self, forKey: .dropEvery) {
                    guard every > 0 else {
                        throw DecodingError.dataCorruptedError(forKey: .dropEvery, in: container, debugDescription: "dropEvery must be at least 1")
                    }
                    self = .notifications(address: checked, fault: .dropEvery(every))
                } else if try container.decodeIfPresent(Bool.self, forKey: .duplicate) == true {
                    self = .notifications(address: checked, fault: .duplicate)
                } else if try container.decodeIfPresent(Bool.self, forKey: .reorder) == true {
                    self = .notifications(address: checked, fault: .reorderPairs)
                } else {
                    throw DecodingError.dataCorruptedError(forKey: .notifications, in: container,
                                                           debugDescription: "a notifications fault needs dropEvery, duplicate or reorder")
                }
            } else if let member = try container.decodeIfPresent(String.self, forKey: .neverReply) {
                self = .neverReply(member: member, times: try container.decodeIfPresent(Int.self, forKey: .times))
            } else if try container.decodeIfPresent(Bool.self, forKey: .accessDenied) == true {
                self = .accessDenied
            } else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription:
                    "a fault needs one of connect, linkLoss, attError, notifications, neverReply, accessDenied"))
            }
        }
    }

    /// Why a scenario file was refused.
    public enum LoadError: Error, CustomStringConvertible {
        /// The file could not be read.
        case unreadable(path: String, detail: String)
        /// The JSON is malformed or a value is out of range.
        case invalid(path: String, detail: String)

        /// Where and what.
        public var description: String {
            switch self {
            case .unreadable(let path, let detail): return "Cannot read scenario \(path): \(detail)"
            case .invalid(let path, let detail): return "Scenario \(path) is invalid: \(detail)"
            }
        }
    }

    private enum Keys: String, CodingKey { case adapters, temporaryTimeout, timing, peripherals, crowd, faults }

    /// Reads a scenario; every key is optional.
    public init(from decoder: Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        var configuration = Simulator.Configuration()
        if let adapters = try container.decodeIfPresent([AdapterEntry].self, forKey: .adapters) {
            configuration.adapters = adapters.map(\.spec)
        }
        if let timeout = try container.decodeIfPresent(Double.self, forKey: .temporaryTimeout) {
            guard timeout > 0 else {
                throw DecodingError.dataCorruptedError(forKey: .temporaryTimeout, in: container, debugDescription: "must be positive")
            }
            configuration.temporaryTimeoutSeconds = timeout
        }
        if let timing = try container.decodeIfPresent(TimingEntry.self, forKey: .timing) { configuration.timing = timing.model }
        self.configuration = configuration
        peripherals = try container.decodeIfPresent([PeripheralSpec].self, forKey: .peripherals) ?? []
        if let crowd = try container.decodeIfPresent(Crowd.self, forKey: .crowd) { peripherals += crowd.peripherals }
        let addresses = peripherals.map(\.address)
        if Set(addresses).count != addresses.count {
            throw DecodingError.dataCorruptedError(forKey: .peripherals, in: container, debugDescription: "two peripherals share an address")
        }
        faults = try container.decodeIfPresent([FaultSpec].self, forKey: .faults) ?? []
    }

    /// A scenario built in code.
    public init(configuration: Simulator.Configuration = .init(), peripherals: [PeripheralSpec] = [], faults: [FaultSpec] = []) {
        self.configuration = configuration
        self.peripherals = peripherals
        self.faults = faults
    }

    /// Loads a JSON scenario file.
    public static func load(path: String) throws(LoadError) -> Scenario {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw .unreadable(path: path, detail: error.localizedDescription)
        }
        return try parse(data, name: path)
    }

    /// Parses scenario JSON; `name` appears in errors.
    public static func parse(_ data: Data, name: String = "scenario") throws(LoadError) -> Scenario {
        do {
            return try JSONDecoder().decode(Scenario.self, from: data)
        } catch let error as DecodingError {
            throw .invalid(path: name, detail: describe(error, in: data))
        } catch {
            throw .invalid(path: name, detail: "\(error)")
        }
    }

    /// Builds a simulator with this scenario's peripherals and faults armed.
    @BleLoop
    public func makeSimulator() -> Simulator {
        let simulator = Simulator(configuration: configuration)
        for spec in peripherals { simulator.addPeripheral(spec) }
        for fault in faults {
            switch fault {
            case .connect(let address, let failure, let times): simulator.faults.failConnect(address, with: failure, times: times)
            case .linkLoss(let address, let packets): simulator.faults.loseLink(address, afterPackets: packets)
            case .attError(let address, let characteristic, let operation, let code, let times):
                simulator.faults.injectAttError(address, characteristic: characteristic, operation: operation,
                                                error: AttError(code: code), times: times)
            case .notifications(let address, let fault): simulator.faults.setNotificationFault(address, fault)
            case .neverReply(let member, let times): simulator.faults.neverReply(to: member, times: times)
            case .accessDenied: simulator.faults.denyAccessToEveryone()
            }
        }
        return simulator
    }

    static func address<Key: CodingKey>(_ text: String, _ container: KeyedDecodingContainer<Key>, _ key: Key) throws -> String {
        guard SimAddress.isValid(text) else {
            throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "'\(text)' is not an address like AA:BB:CC:DD:EE:FF")
        }
        return text.uppercased()
    }

    /// `line N, field.path: what`; syntax errors carry JSONSerialization's own position.
    private static func describe(_ error: DecodingError, in data: Data) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let text = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            let field = text.isEmpty ? "top level" : String(text.drop { $0 == "." })
            guard !context.codingPath.isEmpty, let line = JSONLocator.line(of: context.codingPath, in: data) else { return field }
            return "line \(line), \(field)"
        }
        if case .dataCorrupted(let context) = error, context.codingPath.isEmpty, let syntax = syntaxError(in: data) {
            return syntax
        }
        switch error {
        case .dataCorrupted(let context): return "\(path(context)): \(context.debugDescription)"
        case .keyNotFound(let key, let context): return "\(path(context)): missing key '\(key.stringValue)'"
        case .typeMismatch(let type, let context): return "\(path(context)): expected \(type)"
        case .valueNotFound(let type, let context): return "\(path(context)): expected a \(type) value"
        @unknown default: return "\(error)"
        }
    }

    /// JSONDecoder says only "not valid JSON"; JSONSerialization names the character offset,
    /// turned here into a line.
    private static func syntaxError(in data: Data) -> String? {
        do {
            _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
            return nil
        } catch {
            let detail = ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String) ?? "\(error)"
            guard let range = detail.range(of: "character "),
                  let offset = Int(detail[range.upperBound...].prefix { $0.isNumber }) else { return "not valid JSON: \(detail)" }
            let line = data.prefix(offset).reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
            return "line \(line): not valid JSON: \(detail)"
        }
    }

    /// `{"count": 1000, "addressPrefix": "DE:AD", "namePrefix": "beacon-", "interval": 100, "rssi": -70, "rssiJitter": 6}`:
    /// many similar advertisers without listing each (a crowded room). `"timestamped": true`
    /// stamps each report's manufacturer data with its sending time (`PeripheralSpec.timestampsReports`).
    private struct Crowd: Decodable {
        var peripherals: [PeripheralSpec]

        private enum Keys: String, CodingKey { case count, addressPrefix, namePrefix, interval, rssi, rssiJitter, connectable, timestamped }

        init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            let count = try container.decode(Int.self, forKey: .count)
            guard (1...65_535).contains(count) else {
                throw DecodingError.dataCorruptedError(forKey: .count, in: container, debugDescription: "count must be 1…65535")
            }
            let prefix = try container.decodeIfPresent(String.self, forKey: .addressPrefix) ?? "DE:AD:BE:EF"
            let prefixParts = prefix.split(separator: ":")
            guard prefixParts.count == 4, prefixParts.allSatisfy({ $0.count == 2 && UInt8($0, radix: 16) != nil }) else {
                throw DecodingError.dataCorruptedError(forKey: .addressPrefix, in: container,
                                                       debugDescription: "addressPrefix needs four bytes, like DE:AD:BE:EF")
            }
            let namePrefix = try container.decodeIfPresent(String.self, forKey: .namePrefix) ?? "beacon-"
            let interval = try container.decodeIfPresent(Double.self, forKey: .interval) ?? 100
            guard interval >= 20 else {
                throw DecodingError.dataCorruptedError(forKey: .interval, in: container, debugDescription: "advertising interval must be at least 20 ms")
            }
            let rssi = try container.decodeIfPresent(Int16.self, forKey: .rssi) ?? -70
            let jitter = try container.decodeIfPresent(Int16.self, forKey: .rssiJitter) ?? 6
            let connectable = try container.decodeIfPresent(Bool.self, forKey: .connectable) ?? false
            let timestamped = try container.decodeIfPresent(Bool.self, forKey: .timestamped) ?? false
            peripherals = (0..<count).map { index in
                var spec = PeripheralSpec(address: prefix.uppercased() + String(format: ":%02X:%02X", index >> 8, index & 0xFF),
                                          name: "\(namePrefix)\(index)", rssi: rssi, rssiJitter: jitter,
                                          manufacturerData: [0xFFFF: Data([UInt8(index >> 8), UInt8(index & 0xFF)])],
                                          advertisingIntervalMilliseconds: interval, connectable: connectable)
                spec.timestampsReports = timestamped
                return spec
            }
        }
    }

    private struct AdapterEntry: Decodable {
        var spec: Simulator.AdapterSpec

        private enum Keys: String, CodingKey { case name, address, systemName, powered }

        init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            let name = try container.decode(String.self, forKey: .name)
            guard !name.isEmpty, name.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) }) else {
                throw DecodingError.dataCorruptedError(forKey: .name, in: container, debugDescription: "adapter names look like hci0")
            }
            let address = try Scenario.address(container.decode(String.self, forKey: .address), container, .address)
            spec = Simulator.AdapterSpec(name: name, address: address,
                                         systemName: try container.decodeIfPresent(String.self, forKey: .systemName) ?? "BleSim",
                                         powered: try container.decodeIfPresent(Bool.self, forKey: .powered) ?? true)
        }
    }

    private struct TimingEntry: Decodable {
        var model: TimingModel

        private enum Keys: String, CodingKey { case scale, connectionInterval, disconnect, connectTimeout }

        init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            var model = TimingModel()
            if let scale = try container.decodeIfPresent(Double.self, forKey: .scale) {
                guard scale >= 0, scale <= 100 else {
                    throw DecodingError.dataCorruptedError(forKey: .scale, in: container, debugDescription: "scale must be 0…100")
                }
                model.scale = scale
            }
            if let interval = try container.decodeIfPresent(Double.self, forKey: .connectionInterval) {
                guard interval >= 7.5, interval <= 4000 else {
                    throw DecodingError.dataCorruptedError(forKey: .connectionInterval, in: container,
                                                           debugDescription: "connection intervals are 7.5…4000 ms")
                }
                model.connectionIntervalMilliseconds = interval
            }
            if let value = try container.decodeIfPresent(Double.self, forKey: .disconnect) { model.disconnectMilliseconds = max(0, value) }
            if let value = try container.decodeIfPresent(Double.self, forKey: .connectTimeout) { model.connectTimeoutMilliseconds = max(0, value) }
            self.model = model
        }
    }
}
