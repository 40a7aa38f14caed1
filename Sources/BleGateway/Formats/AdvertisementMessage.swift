import BleCore
import Foundation

/// One advertisement in OpenMQTTGateway/Theengs JSON: `id`, `name`, `rssi`, `txpower`,
/// `manufacturerdata` (company id little-endian, then the bytes, hex), `servicedata` and
/// `servicedatauuid` (16-bit, 4 hex digits as Theengs writes it), then the decoded fields.
public struct AdvertisementMessage: Sendable {
    /// `AA:BB:CC:DD:EE:FF`.
    public var address: String
    /// The advertised name.
    public var name: String?
    /// The RSSI of this report.
    public var rssi: Int
    /// The advertised TX power.
    public var txPower: Int?
    /// The first manufacturer data (by company id), company id included, as Theengs Gateway takes it.
    public var manufacturerData: Data?
    /// Service data entries, 16-bit UUIDs first.
    public var serviceData: [(uuid: String, data: Data)]
    /// What the decoders made of it (the first that understood it).
    public var decoded: DecodedAdvertisement?

    /// Builds the message from what BleCore reports.
    public init(address: String, rssi: Int, advertisement: AdvertisementData) {
        self.address = AdvertisementMessage.canonical(address)
        name = advertisement.localName
        self.rssi = rssi
        txPower = advertisement.txPowerLevel
        if let (company, bytes) = advertisement.manufacturerData.min(by: { $0.key < $1.key }) {
            manufacturerData = Data([UInt8(company & 0xff), UInt8(company >> 8)]) + bytes
        }
        serviceData = advertisement.serviceData
            .map { (uuid: AdvertisementMessage.shortForm($0.key), data: $0.value) }
            .sorted { ($0.uuid.count, $0.uuid) < ($1.uuid.count, $1.uuid) }
        decoded = AdvertisementMessage.decode(advertisement)
    }

    /// `fcd2` for SIG-based UUIDs, the full lower-case form otherwise.
    static func shortForm(_ uuid: BluetoothUUID) -> String {
        let full = uuid.uuidString128.lowercased()
        if uuid.isBased, full.hasPrefix("0000") { return String(full.dropFirst(4).prefix(4)) }
        return full
    }

    /// Runs the decoders: BTHome, Eddystone and SIG service data, then iBeacon manufacturer data.
    public static func decode(_ advertisement: AdvertisementData) -> DecodedAdvertisement? {
        for (uuid, data) in advertisement.serviceData.sorted(by: { shortForm($0.key) < shortForm($1.key) }) {
            guard let short = UInt16(shortForm(uuid), radix: 16), uuid.isBased else { continue }
            let result: DecodedAdvertisement?
            switch short {
            case BTHomeDecoder.serviceUUID: result = BTHomeDecoder.decode(data)
            case EddystoneDecoder.serviceUUID: result = EddystoneDecoder.decode(data)
            default: result = SIGServiceDataDecoder.decode(uuid: short, data)
            }
            if let result { return result }
        }
        for (company, payload) in advertisement.manufacturerData.sorted(by: { $0.key < $1.key }) {
            if let result = IBeaconDecoder.decode(company: company, payload: payload) { return result }
        }
        return nil
    }

    /// The raw fields, as Theengs Gateway's `undecoded` input wants them, for one service data
    /// entry (nil: the first).
    public func rawPairs(serviceData entry: (uuid: String, data: Data)? = nil) -> [(String, JSONValue)] {
        var pairs: [(String, JSONValue)] = [("id", .string(address))]
        if let name { pairs.append(("name", .string(name))) }
        pairs.append(("rssi", .integer(rssi)))
        if let txPower { pairs.append(("txpower", .integer(txPower))) }
        if let manufacturerData { pairs.append(("manufacturerdata", .string(manufacturerData.lowercaseHex))) }
        if let service = entry ?? serviceData.first {
            pairs.append(("servicedata", .string(service.data.lowercaseHex)))
            pairs.append(("servicedatauuid", .string(service.uuid)))
        }
        return pairs
    }

    /// The published message: raw fields, decoded fields, and the gateway that heard it.
    public func json(gateway: String) -> JSONValue {
        var pairs = rawPairs()
        if let decoded {
            for (key, value) in decoded.jsonPairs where !pairs.contains(where: { $0.0 == key }) {
                pairs.append((key, value))
            }
        }
        pairs.append(("gateway", .string(gateway)))
        return .object(pairs)
    }

    /// The topic suffix: the address without colons, as OpenMQTTGateway and Theengs write it.
    public var topicID: String { String(decoding: address.utf8.filter { $0 != UInt8(ascii: ":") }, as: UTF8.self) }

    /// The address in upper case; BlueZ's addresses already are, and are returned as they are
    /// (no new string for each of thousands of advertisements a second).
    public static func canonical(_ address: String) -> String {
        address.utf8.contains(where: { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) }) ? address.uppercased() : address
    }
}
