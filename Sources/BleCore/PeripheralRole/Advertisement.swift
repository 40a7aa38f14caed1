import Foundation

/// What an advertisement carries: every `LEAdvertisement1` property bluetoothd 5.66 reads.
///
/// Not in 5.66 (so not here): `ScanResponseServiceUUIDs`/`…ManufacturerData`/`…ServiceData`/
/// `…Data` (5.80, experimental), `Instance` (5.87) and the `rsi` include (5.67). bluetoothd
/// decides itself what goes into the scan response: the local name, when it does not fit.
/// `SecondaryChannel`, `MinInterval`/`MaxInterval` and `TxPower` need extended advertising
/// (the controller's `SupportedSecondaryChannels`); on legacy controllers bluetoothd ignores them.
public struct Advertisement: Sendable, Equatable {
    /// Connectable (`peripheral`) or not (`broadcast`).
    public enum Kind: String, Sendable {
        /// Connectable: centrals may connect.
        case peripheral
        /// Not connectable.
        case broadcast
    }

    /// Connectable or not.
    public var kind: Kind = .peripheral
    /// The name (bluetoothd moves it into the scan response and shortens it when needed).
    public var localName: String?
    /// Service UUIDs, in the shortest form that fits.
    public var serviceUUIDs: [BluetoothUUID] = []
    /// Service UUIDs the advertiser wants a central to offer (solicitation).
    public var solicitUUIDs: [BluetoothUUID] = []
    /// Manufacturer data by company identifier.
    public var manufacturerData: [UInt16: Data] = [:]
    /// Service data by service UUID.
    public var serviceData: [BluetoothUUID: Data] = [:]
    /// Raw AD structures by type (`Data`, 5.50; bluetoothd accepts only types it considers safe).
    public var data: [UInt8: Data] = [:]
    /// The GAP appearance value to advertise (`Appearance`), which scanners show as an icon or category.
    public var appearance: UInt16?
    /// Ask bluetoothd to add the controller's TX power (`Includes` `tx-power`).
    public var includeTxPower = false
    /// Ask bluetoothd to add the adapter's name when `localName` is nil (`Includes` `local-name`).
    public var includeLocalName = false
    /// Ask bluetoothd to add the adapter's appearance when `appearance` is nil (`Includes` `appearance`).
    public var includeAppearance = false
    /// The TX power to request in dBm, −127…20 (5.56, extended advertising only).
    public var txPower: Int16?
    /// General discoverable flag (not for `broadcast`); nil leaves bluetoothd's default.
    public var discoverable: Bool?
    /// Seconds the discoverable flag stays set.
    public var discoverableTimeout: UInt16?
    /// Seconds this advertisement gets in the rotation when several are active (default 2).
    public var duration: UInt16?
    /// Seconds until bluetoothd ends the advertisement (it then calls `Release`).
    public var timeout: UInt16?
    /// Advertising interval bounds in milliseconds (5.56).
    public var minimumInterval: UInt32?
    /// Advertising interval bounds in milliseconds (5.56).
    public var maximumInterval: UInt32?
    /// `1M`, `2M` or `Coded` (extended advertising).
    public var secondaryChannel: String?

    /// An empty, connectable advertisement.
    public init(localName: String? = nil, serviceUUIDs: [BluetoothUUID] = []) {
        self.localName = localName
        self.serviceUUIDs = serviceUUIDs
    }

    /// From CoreBluetooth's `startAdvertising` dictionary (`CBAdvertisementDataLocalNameKey`,
    /// `CBAdvertisementDataServiceUUIDsKey`; BleKit also reads the manufacturer-data, service-data
    /// and solicited-UUIDs keys, which iOS ignores).
    public init(dictionary: [String: Any]?) {
        self.init()
        guard let dictionary else { return }
        localName = dictionary[CBAdvertisementDataLocalNameKey] as? String
        serviceUUIDs = dictionary[CBAdvertisementDataServiceUUIDsKey] as? [BluetoothUUID] ?? []
        solicitUUIDs = dictionary[CBAdvertisementDataSolicitedServiceUUIDsKey] as? [BluetoothUUID] ?? []
        if let manufacturer = dictionary[CBAdvertisementDataManufacturerDataKey] as? Data, manufacturer.count >= 2 {
            let company = UInt16(manufacturer[manufacturer.startIndex]) | UInt16(manufacturer[manufacturer.startIndex + 1]) << 8
            manufacturerData[company] = Data(manufacturer.dropFirst(2))
        }
        if let service = dictionary[CBAdvertisementDataServiceDataKey] as? [BluetoothUUID: Data] { serviceData = service }
    }

    /// The `Includes` list.
    var includes: [String] {
        var result: [String] = []
        if includeTxPower { result.append(BlueZ.LEAdvertisement1.Include.txPower) }
        if includeAppearance, appearance == nil { result.append(BlueZ.LEAdvertisement1.Include.appearance) }
        if includeLocalName, localName == nil { result.append(BlueZ.LEAdvertisement1.Include.localName) }
        return result
    }

    /// Where the bytes go in a legacy (31-byte) advertisement, as bluetoothd 5.66 builds it.
    public var layout: AdvertisingLayout { AdvertisingLayout(self) }
}

/// How an advertisement fills the 31 bytes of a legacy advertising PDU and its scan response.
public struct AdvertisingLayout: Sendable, Equatable {
    /// Bytes in the advertising PDU (flags included).
    public let advertisingBytes: Int
    /// Bytes in the scan response (the local name).
    public let scanResponseBytes: Int
    /// What went to the scan response.
    public let movedToScanResponse: [String]
    /// The name is longer than the scan response holds: bluetoothd sends it shortened.
    public let nameShortened: Bool
    /// Bytes a legacy advertising PDU or scan response holds (31); longer data needs extended advertising.
    public static let legacyLimit = 31

    /// True when it fits a legacy advertising PDU, as bluetoothd 5.66 decides (recorded in the
    /// VM: `advertising.fieldsAndFit`); a longer one is refused with `org.bluez.Error.Failed`.
    /// When the adapter itself is discoverable, bluetoothd adds Flags (3 bytes) to a connectable
    /// advertisement without `discoverable`, which this cannot know.
    public var fits: Bool { advertisingBytes <= Self.legacyLimit }

    init(_ advertisement: Advertisement) {
        // Flags only with `Discoverable` (observed: without it, and on a non-discoverable
        // adapter, 31 bytes of other fields fit, and the central sees no AdvertisingFlags).
        var length = advertisement.discoverable == true ? 3 : 0
        func uuidLists(_ uuids: [BluetoothUUID]) -> Int {
            var total = 0
            for width in [16, 32, 128] {
                let count = uuids.filter { $0.bitWidth == width }.count
                if count > 0 { total += 2 + count * width / 8 }
            }
            return total
        }
        length += uuidLists(advertisement.serviceUUIDs)
        length += uuidLists(advertisement.solicitUUIDs)
        for (_, data) in advertisement.manufacturerData { length += 4 + data.count }
        for (uuid, data) in advertisement.serviceData { length += 2 + uuid.bitWidth / 8 + data.count }
        for (_, data) in advertisement.data { length += 2 + data.count }
        if advertisement.appearance != nil || advertisement.includeAppearance { length += 4 }
        // The kernel adds the TX power: 3 bytes less room.
        if advertisement.includeTxPower { length += 3 }
        advertisingBytes = length
        if let name = advertisement.localName, !name.isEmpty {
            let bytes = name.utf8.count
            scanResponseBytes = min(Self.legacyLimit, 2 + bytes)
            nameShortened = 2 + bytes > Self.legacyLimit
            movedToScanResponse = [BlueZ.LEAdvertisement1.Include.localName]
        } else {
            scanResponseBytes = 0
            nameShortened = false
            movedToScanResponse = []
        }
    }
}

/// What the adapter's advertising manager offers (`LEAdvertisingManager1`'s properties).
public struct AdvertisingCapabilities: Sendable, Equatable {
    /// What `Includes` may ask for (`tx-power`, `appearance`, `local-name` on 5.66).
    public let supportedIncludes: [String]
    /// Advertisements registered now (by every app on the machine).
    public let activeInstances: Int
    /// Advertisements that may still be registered (bluetoothd counts the free slots).
    public let supportedInstances: Int
    /// Secondary channels for extended advertising; empty on a legacy controller.
    public let secondaryChannels: [String]
    /// The longest advertising data: 31 on legacy controllers.
    public var maximumAdvertisingLength: Int { secondaryChannels.isEmpty ? AdvertisingLayout.legacyLimit : 251 }
}
