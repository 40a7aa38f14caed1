import BleDBus
import BlueZVocabulary
import Foundation

/// An app's `LEAdvertisement1`, as read at registration.
struct RegisteredAdvertisement {
    let owner: String
    let path: ObjectPath
    let type: String
    let serviceUUIDs: [String]
    let manufacturerData: [UInt16: Data]
    let serviceData: [String: Data]
    let localName: String?
    let includesTxPower: Bool
    /// Solicited service UUIDs, full form (`SolicitUUIDs`).
    let solicitUUIDs: [String]
    /// `Appearance`, or 0x0000 for `Includes` `appearance` (the adapter's own appearance is not
    /// modelled); nil when neither is set.
    let appearance: UInt16?
    /// `Data`: AD type → bytes.
    let data: [UInt8: Data]
    /// `Discoverable`: bluetoothd then adds the Flags field itself.
    let discoverable: Bool
    /// Seconds until bluetoothd releases it (`Timeout`), if set.
    let timeout: UInt16?

    init?(owner: String, path: ObjectPath, properties: PropertyMap) {
        self.owner = owner
        self.path = path
        guard let type = properties[BlueZ.LEAdvertisement1.type], ["broadcast", "peripheral"].contains(type) else { return nil }
        self.type = type
        var uuids: [String] = []
        for uuid in properties[BlueZ.LEAdvertisement1.serviceUUIDs] ?? [] {
            guard let full = SimUUID.full(uuid) else { return nil }
            uuids.append(full)
        }
        serviceUUIDs = uuids
        manufacturerData = properties[BlueZ.LEAdvertisement1.manufacturerData] ?? [:]
        var serviceData: [String: Data] = [:]
        let advertisedServiceData: [String: Data] = properties[BlueZ.LEAdvertisement1.serviceData] ?? [:]
        for (uuid, data) in advertisedServiceData {
            guard let full = SimUUID.full(uuid) else { return nil }
            serviceData[full] = data
        }
        self.serviceData = serviceData
        let includes = properties[BlueZ.LEAdvertisement1.includes] ?? []
        localName = properties[BlueZ.LEAdvertisement1.localName] ?? (includes.contains("local-name") ? "BleSim" : nil)
        includesTxPower = includes.contains("tx-power")
        var solicit: [String] = []
        for uuid in properties[BlueZ.LEAdvertisement1.solicitUUIDs] ?? [] {
            guard let full = SimUUID.full(uuid) else { return nil }
            solicit.append(full)
        }
        solicitUUIDs = solicit
        appearance = properties[BlueZ.LEAdvertisement1.appearance] ?? (includes.contains("appearance") ? 0x0000 : nil)
        var data: [UInt8: Data] = [:]
        if case .dictionary(_, _, let entries)? = properties[BlueZ.LEAdvertisement1.data] {
            for entry in entries {
                guard case .byte(let type) = entry.key else { return nil }
                var value = entry.value
                if case .variant(let inner) = value { value = inner }
                switch value {
                case .bytes(let bytes): data[type] = bytes
                case .array(.byte, let items):
                    data[type] = Data(items.compactMap { if case .byte(let byte) = $0 { return byte } else { return nil } })
                default: return nil
                }
            }
        }
        self.data = data
        discoverable = properties[BlueZ.LEAdvertisement1.discoverable] ?? false
        timeout = properties[BlueZ.LEAdvertisement1.timeout]
    }

    /// Bytes in the advertising data, counted as bluetoothd 5.66 counts them (README, "The 31-byte
    /// check"): the Flags field only when it is discoverable (the property, or the adapter), every
    /// UUID list (service and solicit), manufacturer data, service data, `Data` entries and the
    /// appearance; the local name goes to the scan response.
    func dataLength(adapterDiscoverable: Bool) -> Int {
        func lists(_ uuids: [String]) -> Int {
            let short = uuids.filter { SimUUID.short($0) != nil }.count
            let long = uuids.count - short
            return (short > 0 ? 2 + 2 * short : 0) + (long > 0 ? 2 + 16 * long : 0)
        }
        var length = discoverable || (adapterDiscoverable && type == "peripheral") ? 3 : 0
        length += lists(serviceUUIDs) + lists(solicitUUIDs)
        for (_, value) in manufacturerData { length += 4 + value.count }
        for (uuid, value) in serviceData { length += 2 + (SimUUID.short(uuid) != nil ? 2 : 16) + value.count }
        for (_, value) in data { length += 2 + value.count }
        if appearance != nil { length += 4 }
        return length
    }

    /// Room for `dataLength`: 31 bytes, 3 fewer when the kernel adds the TX power.
    var dataLimit: Int { includesTxPower ? 28 : 31 }
}
