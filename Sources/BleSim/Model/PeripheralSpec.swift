import BleDBus
import BlueZVocabulary
import Foundation

/// A virtual BLE peripheral: what it advertises, its GATT database and how it behaves.
///
/// Build one in Swift (`PeripheralSpec(address:name:) { … }` and the `with…` modifiers) or load
/// it from a JSON scenario (`Scenario`). The same spec can be seen by several simulated adapters.
public struct PeripheralSpec: Sendable, Codable, Equatable {
    /// `AA:BB:CC:DD:EE:FF`, upper case.
    public var address: String
    /// `public` or `random`.
    public var addressType: AddressType
    /// The advertised local name (from the scan response), if any.
    public var name: String?
    /// The GAP Device Name read after connecting; bluetoothd replaces the advertised name with it.
    public var gapName: String?
    /// The mean RSSI in dBm.
    public var rssi: Int16
    /// Uniform jitter (± dBm) added to each advertising report.
    public var rssiJitter: Int16
    /// The advertised TX power, if any.
    public var txPower: Int16?
    /// Manufacturer data by company id.
    public var manufacturerData: [UInt16: Data]
    /// Service data by UUID (any form; exported as full 128-bit strings, as bluetoothd does).
    public var serviceData: [String: Data]
    /// Advertised service UUIDs.
    public var serviceUUIDs: [String]
    /// Time between advertising reports.
    public var advertisingIntervalMilliseconds: Double
    /// Whether it accepts connections.
    public var connectable: Bool
    /// Whether it advertises at all (a peripheral that went away stops).
    public var advertising: Bool
    /// The ATT MTU the link negotiates (bluez ↔ bluez: 517).
    public var mtu: UInt16
    /// The GATT database.
    public var services: [ServiceSpec]
    /// A database that replaces `services` from the next connection on ("services changed").
    public var servicesAfterReconnect: [ServiceSpec]?
    /// Scripted behaviour.
    public var rules: [BehaviourRule]
    /// Whether each report's first manufacturer data (by company id) ends in the time it was
    /// sent (microseconds since the epoch, 8 bytes big-endian), so that a benchmark can measure
    /// how late it reaches a consumer. Set by a crowd's `"timestamped": true`.
    public var timestampsReports = false

    /// `public` or `random`.
    public enum AddressType: String, Sendable, Codable, Equatable, CaseIterable {
        /// A public (IEEE) address.
        case `public`
        /// A random address.
        case random
    }

    /// A peripheral at `address` with defaults from the emulated bluez ↔ bluez link.
    public init(address: String, addressType: AddressType = .public, name: String? = nil, gapName: String? = nil,
                rssi: Int16 = -60, rssiJitter: Int16 = 0, txPower: Int16? = nil,
                manufacturerData: [UInt16: Data] = [:], serviceData: [String: Data] = [:],
                serviceUUIDs: [String] = [], advertisingIntervalMilliseconds: Double = 100,
                connectable: Bool = true, advertising: Bool = true, mtu: UInt16 = 517,
                services: [ServiceSpec] = [], servicesAfterReconnect: [ServiceSpec]? = nil,
                rules: [BehaviourRule] = []) {
        self.address = address.uppercased()
        self.addressType = addressType
        self.name = name
        self.gapName = gapName
        self.rssi = rssi
        self.rssiJitter = rssiJitter
        self.txPower = txPower
        self.manufacturerData = manufacturerData
        self.serviceData = serviceData
        self.serviceUUIDs = serviceUUIDs
        self.advertisingIntervalMilliseconds = advertisingIntervalMilliseconds
        self.connectable = connectable
        self.advertising = advertising
        self.mtu = mtu
        self.services = services
        self.servicesAfterReconnect = servicesAfterReconnect
        self.rules = rules
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case address, addressType, name, gapName, rssi, rssiJitter, txPower, manufacturerData, serviceData
        case serviceUUIDs, advertisingIntervalMilliseconds = "advertisingInterval", connectable, advertising, mtu
        case services, servicesAfterReconnect, rules
    }

    /// Reads a spec from JSON; every field but `address` has a default, and byte values are
    /// hex strings (`"01ff"`). An unknown key, a wrong type or a number out of range is a
    /// `ScenarioProblem` naming the field.
    public init(from decoder: Decoder) throws {
        let container = try decoder.scenarioObject(CodingKeys.self)
        address = try container.address(.address)
        addressType = try container.name(AddressType.self, .addressType) ?? .public
        name = try container.decodeIfPresent(String.self, forKey: .name)
        gapName = try container.decodeIfPresent(String.self, forKey: .gapName)
        rssi = try container.integer(Int16.self, .rssi, .power) ?? -60
        rssiJitter = try container.integer(Int16.self, .rssiJitter, .rssiJitter) ?? 0
        txPower = try container.integer(Int16.self, .txPower, .power)
        let manufacturer = try container.decodeIfPresent([String: HexData].self, forKey: .manufacturerData) ?? [:]
        var manufacturerData: [UInt16: Data] = [:]
        for (key, value) in manufacturer {
            let trimmed = key.hasPrefix("0x") ? String(key.dropFirst(2)) : key
            guard let company = key.hasPrefix("0x") ? UInt16(trimmed, radix: 16) : UInt16(trimmed) else {
                throw ScenarioProblem.invalidValue(path: container.path(.manufacturerData).appending(key), value: key,
                                                   reason: "company id '\(key)' is not a 16-bit number (decimal or 0x hex)")
            }
            manufacturerData[company] = value.data
        }
        self.manufacturerData = manufacturerData
        serviceData = (try container.decodeIfPresent([String: HexData].self, forKey: .serviceData) ?? [:]).mapValues(\.data)
        for uuid in serviceData.keys.sorted() where SimUUID.full(uuid) == nil {
            throw ScenarioProblem.invalidValue(path: container.path(.serviceData).appending(uuid), value: uuid,
                                               reason: "service data key '\(uuid)' is not a UUID (use 180d, 0000180d-…, or a 128-bit UUID)")
        }
        serviceUUIDs = try container.decodeIfPresent([String].self, forKey: .serviceUUIDs) ?? []
        for (index, uuid) in serviceUUIDs.enumerated() where SimUUID.full(uuid) == nil {
            throw ScenarioProblem.invalidValue(path: container.path(.serviceUUIDs).appending(index), value: uuid,
                                               reason: "'\(uuid)' is not a UUID (use 180d, 0000180d-…, or a 128-bit UUID)")
        }
        advertisingIntervalMilliseconds = try container.number(.advertisingIntervalMilliseconds, .advertisingInterval) ?? 100
        connectable = try container.decodeIfPresent(Bool.self, forKey: .connectable) ?? true
        advertising = try container.decodeIfPresent(Bool.self, forKey: .advertising) ?? true
        mtu = try container.integer(UInt16.self, .mtu, .mtu) ?? 517
        services = try container.decodeIfPresent([ServiceSpec].self, forKey: .services) ?? []
        try ServiceSpec.checkIncludes(services, in: container, key: .services)
        servicesAfterReconnect = try container.decodeIfPresent([ServiceSpec].self, forKey: .servicesAfterReconnect)
        if let servicesAfterReconnect { try ServiceSpec.checkIncludes(servicesAfterReconnect, in: container, key: .servicesAfterReconnect) }
        rules = try container.decodeIfPresent([BehaviourRule].self, forKey: .rules) ?? []
        try checkRuleCharacteristics(in: container)
    }

    /// Throws, naming the place, when a rule names a characteristic the peripheral does not
    /// have (in `services` or `servicesAfterReconnect`): such a rule never fires, so a misspelt
    /// UUID (`"notify": "2a99"`) used to load and run without a word.
    private func checkRuleCharacteristics(in container: KeyedDecodingContainer<CodingKeys>) throws {
        let characteristics = (services + (servicesAfterReconnect ?? [])).flatMap(\.characteristics).map(\.uuid)
        let known = Set(characteristics)
        for (index, rule) in rules.enumerated() {
            let rulePath = container.path(.rules).appending(index)
            var named: [(path: ScenarioPath, uuid: String)] = []
            switch rule.trigger {
            case .write(let uuid, _): named.append((rulePath.appending("on").appending("write"), uuid))
            case .read(let uuid): named.append((rulePath.appending("on").appending("read"), uuid))
            case .subscribe(let uuid): named.append((rulePath.appending("on").appending("subscribe"), uuid))
            case .connect, .periodic: break
            }
            for (position, response) in rule.responses.enumerated() {
                let responsePath = rulePath.appending("then").appending(position)
                switch response {
                case .notify(let uuid, _, _): named.append((responsePath.appending("notify"), uuid))
                case .echo(let uuid): named.append((responsePath.appending("echo"), uuid))
                case .setValue(let uuid, _): named.append((responsePath.appending("setValue"), uuid))
                case .reply, .attError, .disconnect: break
                }
            }
            for (path, uuid) in named where !known.contains(uuid) {
                func shown(_ uuid: String) -> String { SimUUID.short(uuid).map { String(format: "%04x", $0) } ?? uuid }
                let listed = characteristics.map(shown)
                throw ScenarioProblem.invalidValue(path: path, value: shown(uuid),
                                                   reason: "the peripheral has no characteristic \(shown(uuid)), so this rule would never act; "
                                                       + (listed.isEmpty ? "it has no characteristics" : "its characteristics are \(listed.joined(separator: ", "))"))
            }
        }
    }

    /// Writes the JSON form read by `init(from:)`.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(address, forKey: .address)
        try container.encode(addressType, forKey: .addressType)
        try container.encodeIfPresent(name, forKey: .name)
        try container.encodeIfPresent(gapName, forKey: .gapName)
        try container.encode(rssi, forKey: .rssi)
        try container.encode(rssiJitter, forKey: .rssiJitter)
        try container.encodeIfPresent(txPower, forKey: .txPower)
        try container.encode(Dictionary(uniqueKeysWithValues: manufacturerData.map { (String($0.key), HexData($0.value)) }),
                             forKey: .manufacturerData)
        try container.encode(serviceData.mapValues(HexData.init), forKey: .serviceData)
        try container.encode(serviceUUIDs, forKey: .serviceUUIDs)
        try container.encode(advertisingIntervalMilliseconds, forKey: .advertisingIntervalMilliseconds)
        try container.encode(connectable, forKey: .connectable)
        try container.encode(advertising, forKey: .advertising)
        try container.encode(mtu, forKey: .mtu)
        try container.encode(services, forKey: .services)
        try container.encodeIfPresent(servicesAfterReconnect, forKey: .servicesAfterReconnect)
        try container.encode(rules, forKey: .rules)
    }
}

/// A primary service of a virtual peripheral.
public struct ServiceSpec: Sendable, Codable, Equatable {
    /// The service UUID (16-, 32- or 128-bit form).
    public var uuid: String
    /// Primary (true) or secondary.
    public var primary: Bool
    /// Its characteristics, in handle order.
    public var characteristics: [CharacteristicSpec]
    /// The other services of the device it includes, in declaration order (each is one
    /// Include declaration right after the service declaration, before the characteristics).
    public var includes: [IncludedService]
    /// Include declarations bluetoothd counted but could not make (a bridged app's `Includes`
    /// path that names no earlier service of the app): each still takes a handle at the end
    /// of the service's range, as `incr_attr_count` reserved it.
    var unresolvedIncludes = 0

    /// A service.
    public init(uuid: String, primary: Bool = true, characteristics: [CharacteristicSpec] = [], includes: [IncludedService] = []) {
        self.uuid = uuid
        self.primary = primary
        self.characteristics = characteristics
        self.includes = includes
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case uuid, primary, characteristics, includes }

    /// Reads a service; `primary` defaults to true, `includes` to none (the device checks
    /// that each names one of its other services).
    public init(from decoder: Decoder) throws {
        let container = try decoder.scenarioObject(CodingKeys.self)
        uuid = try container.uuid(.uuid)
        primary = try container.decodeIfPresent(Bool.self, forKey: .primary) ?? true
        characteristics = try container.decodeIfPresent([CharacteristicSpec].self, forKey: .characteristics) ?? []
        includes = try container.decodeIfPresent([IncludedService].self, forKey: .includes) ?? []
    }

    /// Writes the JSON form (`includes` only when there are some).
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(uuid, forKey: .uuid)
        try container.encode(primary, forKey: .primary)
        try container.encode(characteristics, forKey: .characteristics)
        if !includes.isEmpty { try container.encode(includes, forKey: .includes) }
    }

    /// Throws, naming the entry, when an include of `services` points at no other service.
    static func checkIncludes(_ services: [ServiceSpec], in container: KeyedDecodingContainer<PeripheralSpec.CodingKeys>,
                              key: PeripheralSpec.CodingKeys) throws {
        for (index, service) in services.enumerated() {
            if case .failure(let problem) = IncludedService.resolve(service.includes, of: index, in: services) {
                let entry = container.path(key).appending(problem.service).appending(CodingKeys.includes.stringValue).appending(problem.position)
                throw ScenarioProblem.invalidValue(path: entry, value: "\(service.includes[problem.position])", reason: problem.reason)
            }
        }
    }
}

/// A characteristic of a virtual peripheral.
public struct CharacteristicSpec: Sendable, Codable, Equatable {
    /// The characteristic UUID.
    public var uuid: String
    /// BlueZ flag names: `read`, `write`, `write-without-response`, `notify`, `indicate`,
    /// `reliable-write`, `encrypt-read`, … (every 5.66 flag is accepted).
    public var flags: [String]
    /// The initial value.
    public var value: Data
    /// Its descriptors (a CCCD is added automatically for notify/indicate).
    public var descriptors: [DescriptorSpec]

    /// The flag names bluetoothd 5.66 knows.
    public static let knownFlags: Set<String> = Set(BlueZ.GattFlag.all)

    /// A characteristic.
    public init(uuid: String, flags: [String], value: Data = Data(), descriptors: [DescriptorSpec] = []) {
        self.uuid = uuid
        self.flags = flags
        self.value = value
        self.descriptors = descriptors
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case uuid, flags, value, descriptors }

    /// Reads a characteristic; unknown flags are an error, so typos do not pass silently.
    public init(from decoder: Decoder) throws {
        let container = try decoder.scenarioObject(CodingKeys.self)
        uuid = try container.uuid(.uuid)
        flags = try container.flags(.flags)
        value = try container.attributeValue(.value)
        descriptors = try container.decodeIfPresent([DescriptorSpec].self, forKey: .descriptors) ?? []
    }

    /// Writes the JSON form.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(uuid, forKey: .uuid)
        try container.encode(flags, forKey: .flags)
        try container.encode(HexData(value), forKey: .value)
        try container.encode(descriptors, forKey: .descriptors)
    }
}

/// A descriptor of a virtual characteristic.
public struct DescriptorSpec: Sendable, Codable, Equatable {
    /// The descriptor UUID.
    public var uuid: String
    /// `read`, `write`, …
    public var flags: [String]
    /// The initial value.
    public var value: Data

    /// A descriptor.
    public init(uuid: String, flags: [String] = [BlueZ.GattFlag.read], value: Data = Data()) {
        self.uuid = uuid
        self.flags = flags
        self.value = value
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case uuid, flags, value }

    /// Reads a descriptor; like a characteristic's, its flags are BlueZ's names and its value
    /// at most 512 bytes.
    public init(from decoder: Decoder) throws {
        let container = try decoder.scenarioObject(CodingKeys.self)
        uuid = try container.uuid(.uuid)
        flags = try container.flags(.flags)
        value = try container.attributeValue(.value)
    }

    /// Writes the JSON form.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(uuid, forKey: .uuid)
        try container.encode(flags, forKey: .flags)
        try container.encode(HexData(value), forKey: .value)
    }
}

/// Bytes written as a hex string in JSON (`"0a1b"`, spaces and colons allowed).
public struct HexData: Sendable, Codable, Equatable {
    /// The bytes.
    public var data: Data

    /// Wraps bytes.
    public init(_ data: Data) { self.data = data }

    /// Parses hex; odd length or non-hex characters are an error.
    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let data = HexData.parse(text) else {
            throw ScenarioProblem.invalidValue(path: ScenarioPath(decoder.codingPath), value: text,
                                               reason: "'\(text)' is not hex bytes like \"01ff\"")
        }
        self.data = data
    }

    /// Writes lower-case hex.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(data.map { String(format: "%02x", $0) }.joined())
    }

    /// Parses `"01 ff"`, `"01:ff"` or `"01ff"`.
    public static func parse(_ text: String) -> Data? {
        let digits = text.filter { !" :-".contains($0) }
        guard digits.count % 2 == 0 else { return nil }
        var data = Data(capacity: digits.count / 2)
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            guard let byte = UInt8(digits[index..<next], radix: 16) else { return nil }
            data.append(byte)
            index = next
        }
        return data
    }
}
