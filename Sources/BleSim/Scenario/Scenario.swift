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

    private enum Keys: String, CodingKey, CaseIterable { case adapters, temporaryTimeout, timing, peripherals, crowd, faults }

    /// Reads a scenario; every key is optional, and any other key is refused (`ScenarioProblem.unknownKey`).
    public init(from decoder: Decoder) throws {
        let container = try decoder.scenarioObject(Keys.self)
        var configuration = Simulator.Configuration()
        if let adapters = try container.decodeIfPresent([AdapterEntry].self, forKey: .adapters) {
            configuration.adapters = adapters.map(\.spec)
            for (index, adapter) in adapters.enumerated() {
                let earlier = adapters.prefix(index)
                if earlier.contains(where: { $0.spec.name == adapter.spec.name }) {
                    throw ScenarioProblem.invalidValue(path: container.path(.adapters).appending(index).appending("name"), value: adapter.spec.name,
                                                       reason: "two adapters are named \(adapter.spec.name); give each its own name")
                }
                if earlier.contains(where: { $0.spec.address == adapter.spec.address }) {
                    throw ScenarioProblem.invalidValue(path: container.path(.adapters).appending(index).appending("address"), value: adapter.spec.address,
                                                       reason: "two adapters share the address \(adapter.spec.address); give each its own")
                }
            }
        }
        if let timeout = try container.number(.temporaryTimeout, .temporaryTimeout) { configuration.temporaryTimeoutSeconds = timeout }
        if let timing = try container.decodeIfPresent(TimingEntry.self, forKey: .timing) { configuration.timing = timing.model }
        self.configuration = configuration
        peripherals = try container.decodeIfPresent([PeripheralSpec].self, forKey: .peripherals) ?? []
        let listed = peripherals.count
        if let crowd = try container.decodeIfPresent(Crowd.self, forKey: .crowd) { peripherals += crowd.peripherals }
        var seen: Set<String> = []
        for (index, peripheral) in peripherals.enumerated() where !seen.insert(peripheral.address).inserted {
            let path = index < listed ? container.path(.peripherals).appending(index).appending("address") : container.path(.crowd).appending("addressPrefix")
            throw ScenarioProblem.invalidValue(path: path, value: peripheral.address,
                                               reason: "two peripherals share an address (\(peripheral.address)); give each its own")
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
            throw .unreadable(file: path, detail: error.localizedDescription)
        }
        return try parse(data, name: path)
    }

    /// Parses scenario JSON; `name` appears in errors. Unknown keys, wrong types and numbers out
    /// of range are refused (`LoadError.invalid` with a `ScenarioProblem`), so that what runs
    /// is what the file says.
    public static func parse(_ data: Data, name: String = "scenario") throws(LoadError) -> Scenario {
        do {
            return try JSONDecoder().decode(Scenario.self, from: data)
        } catch {
            throw LoadError(error, file: name, data: data)
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

    /// `{"count": 1000, "addressPrefix": "DE:AD", "namePrefix": "beacon-", "interval": 100, "rssi": -70, "rssiJitter": 6}`:
    /// many similar advertisers without listing each (a crowded room). `"timestamped": true`
    /// stamps each report's manufacturer data with its sending time (`PeripheralSpec.timestampsReports`).
    private struct Crowd: Decodable {
        var peripherals: [PeripheralSpec]

        private enum Keys: String, CodingKey, CaseIterable { case count, addressPrefix, namePrefix, interval, rssi, rssiJitter, connectable, timestamped }

        init(from decoder: Decoder) throws {
            let container = try decoder.scenarioObject(Keys.self)
            guard let count = try container.integer(Int.self, .count, .crowdCount) else {
                throw ScenarioProblem.missingKey(path: ScenarioPath(decoder.codingPath), key: Keys.count.stringValue)
            }
            let prefix = try container.decodeIfPresent(String.self, forKey: .addressPrefix) ?? "DE:AD:BE:EF"
            let prefixParts = prefix.split(separator: ":", omittingEmptySubsequences: false)
            guard prefixParts.count == 4, prefixParts.allSatisfy({ $0.count == 2 && UInt8($0, radix: 16) != nil }) else {
                throw ScenarioProblem.invalidValue(path: container.path(.addressPrefix), value: prefix,
                                                   reason: "addressPrefix needs four bytes, like DE:AD:BE:EF")
            }
            let namePrefix = try container.decodeIfPresent(String.self, forKey: .namePrefix) ?? "beacon-"
            let interval = try container.number(.interval, .advertisingInterval) ?? 100
            let rssi = try container.integer(Int16.self, .rssi, .power) ?? -70
            let jitter = try container.integer(Int16.self, .rssiJitter, .rssiJitter) ?? 6
            let connectable = try container.decodeIfPresent(Bool.self, forKey: .connectable) ?? false
            let timestamped = try container.decodeIfPresent(Bool.self, forKey: .timestamped) ?? false
            peripherals = (0..<count).map { index in
                var spec = PeripheralSpec(address: prefix.uppercased() + String(format: ":%02X:%02X", index >> 8, index & 0xFF),
                                          name: "\(namePrefix)\(index)", rssi: rssi, rssiJitter: jitter,
                                          manufacturerData: [0xFFFF: Data([UInt8(truncatingIfNeeded: index >> 8), UInt8(truncatingIfNeeded: index)])],
                                          advertisingIntervalMilliseconds: interval, connectable: connectable)
                spec.timestampsReports = timestamped
                return spec
            }
        }
    }

    private struct AdapterEntry: Decodable {
        var spec: Simulator.AdapterSpec

        private enum Keys: String, CodingKey, CaseIterable { case name, address, systemName, powered }

        init(from decoder: Decoder) throws {
            let container = try decoder.scenarioObject(Keys.self)
            let name = try container.decode(String.self, forKey: .name)
            guard !name.isEmpty, name.utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) }) else {
                throw ScenarioProblem.invalidValue(path: container.path(.name), value: name,
                                                   reason: "'\(name)' is not an adapter name; adapter names look like hci0 (lower-case letters and digits)")
            }
            spec = Simulator.AdapterSpec(name: name, address: try container.address(.address),
                                         systemName: try container.decodeIfPresent(String.self, forKey: .systemName) ?? "BleSim",
                                         powered: try container.decodeIfPresent(Bool.self, forKey: .powered) ?? true)
        }
    }

    private struct TimingEntry: Decodable {
        var model: TimingModel

        private enum Keys: String, CodingKey, CaseIterable { case scale, connectionInterval, disconnect, connectTimeout }

        init(from decoder: Decoder) throws {
            let container = try decoder.scenarioObject(Keys.self)
            var model = TimingModel()
            if let scale = try container.number(.scale, .timingScale) { model.scale = scale }
            if let interval = try container.number(.connectionInterval, .connectionInterval) { model.connectionIntervalMilliseconds = interval }
            if let value = try container.number(.disconnect, .delay) { model.disconnectMilliseconds = value }
            if let value = try container.number(.connectTimeout, .delay) { model.connectTimeoutMilliseconds = value }
            self.model = model
        }
    }
}
