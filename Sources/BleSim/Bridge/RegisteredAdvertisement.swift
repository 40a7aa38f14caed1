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
        timeout = properties[BlueZ.LEAdvertisement1.timeout]
    }

    /// Bytes in the 31-byte legacy advertising PDU; the local name goes to the scan response.
    var legacyLength: Int {
        // Solicit UUIDs, appearance and `Data` are left out: bluetoothd 5.66 in the VM accepted
        // BlueZ's example advertisement, which is longer than 31 bytes with them
        // (`outside.exampleGattServer`); how it fits them is not recorded.
        var length = 3
        let short = serviceUUIDs.filter { SimUUID.short($0) != nil }
        let long = serviceUUIDs.filter { SimUUID.short($0) == nil }
        if !short.isEmpty { length += 2 + 2 * short.count }
        if !long.isEmpty { length += 2 + 16 * long.count }
        for (_, data) in manufacturerData { length += 4 + data.count }
        for (uuid, data) in serviceData { length += 2 + (SimUUID.short(uuid) != nil ? 2 : 16) + data.count }
        if includesTxPower { length += 3 }
        return length
    }
}
