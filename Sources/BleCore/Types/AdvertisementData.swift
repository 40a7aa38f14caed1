import Foundation

/// What a peripheral advertised, gathered from BlueZ's `Device1` properties.
///
/// BlueZ merges ADV_IND and SCAN_RSP and keeps the latest values per device, so this is the
/// device's current advertised state rather than one raw packet.
public struct AdvertisementData: Sendable, Equatable {
    /// The advertised (or GAP) name.
    public var localName: String?
    /// Manufacturer data by 16-bit company identifier.
    public var manufacturerData: [UInt16: Data]
    /// Service data by service UUID.
    public var serviceData: [BluetoothUUID: Data]
    /// Advertised service UUIDs.
    public var serviceUUIDs: [BluetoothUUID]
    /// The advertised TX power level, when present.
    public var txPowerLevel: Int?
    /// Whether the peripheral accepts connections. BlueZ 5.66 does not export this flag; a
    /// device object exists for connectable advertisers unless a discovery filter is set, so
    /// BleKit reports true unless BlueZ says otherwise.
    public var isConnectable: Bool
    /// The advertised GAP appearance (BleKit only: iOS does not report it). BlueZ 5.66 shows no
    /// solicited service UUIDs and no other AD structures (`Data`) of an advertisement, so there
    /// are no fields for them.
    public var appearance: UInt16?

    /// Advertisement data with the given fields.
    public init(localName: String? = nil, manufacturerData: [UInt16: Data] = [:], serviceData: [BluetoothUUID: Data] = [:],
                serviceUUIDs: [BluetoothUUID] = [], txPowerLevel: Int? = nil, isConnectable: Bool = true, appearance: UInt16? = nil) {
        self.appearance = appearance
        self.localName = localName
        self.manufacturerData = manufacturerData
        self.serviceData = serviceData
        self.serviceUUIDs = serviceUUIDs
        self.txPowerLevel = txPowerLevel
        self.isConnectable = isConnectable
    }

    /// CoreBluetooth's dictionary form, keyed by the `CBAdvertisementData…Key` constants.
    /// Manufacturer data is given as CoreBluetooth does: the company id little-endian, then the bytes
    /// (the first company in ascending order).
    public var dictionary: [String: Any] {
        var result: [String: Any] = [CBAdvertisementDataIsConnectable: isConnectable]
        if let localName { result[CBAdvertisementDataLocalNameKey] = localName }
        if let (company, bytes) = manufacturerData.sorted(by: { $0.key < $1.key }).first {
            result[CBAdvertisementDataManufacturerDataKey] = Data([UInt8(company & 0xff), UInt8(company >> 8)]) + bytes
        }
        if !serviceData.isEmpty { result[CBAdvertisementDataServiceDataKey] = serviceData }
        if !serviceUUIDs.isEmpty { result[CBAdvertisementDataServiceUUIDsKey] = serviceUUIDs }
        if let txPowerLevel { result[CBAdvertisementDataTxPowerLevelKey] = txPowerLevel }
        return result
    }
}

/// CoreBluetooth's key for the advertised name in `didDiscover`'s dictionary:
/// ``AdvertisementData/localName`` (BlueZ's `Name`, else an `Alias` that is more than the address).
public let CBAdvertisementDataLocalNameKey = "kCBAdvDataLocalName"
/// CoreBluetooth's key for manufacturer data: the company identifier little-endian, then the
/// bytes, as on iOS (the lowest company identifier when BlueZ reports several).
public let CBAdvertisementDataManufacturerDataKey = "kCBAdvDataManufacturerData"
/// CoreBluetooth's key for service data: `[BluetoothUUID: Data]`, from BlueZ's `ServiceData`.
public let CBAdvertisementDataServiceDataKey = "kCBAdvDataServiceData"
/// CoreBluetooth's key for the advertised service UUIDs: `[BluetoothUUID]`, from BlueZ's `UUIDs`.
public let CBAdvertisementDataServiceUUIDsKey = "kCBAdvDataServiceUUIDs"
/// CoreBluetooth's key for the advertised TX power (dBm, `Int`), present only when BlueZ reports
/// `TxPower`.
public let CBAdvertisementDataTxPowerLevelKey = "kCBAdvDataTxPowerLevel"
/// CoreBluetooth's key for whether the advertiser accepts connections (`Bool`, always present);
/// see ``AdvertisementData/isConnectable`` for why it is true unless BlueZ says otherwise.
public let CBAdvertisementDataIsConnectable = "kCBAdvDataIsConnectable"
/// CoreBluetooth's scan option: `true` reports a peripheral on every advertisement, as
/// ``ScanOptions/allowDuplicates`` (BlueZ's `DuplicateData` filter) does.
public let CBCentralManagerScanOptionAllowDuplicatesKey = "kCBScanOptionAllowDuplicates"
/// CoreBluetooth's key in `willRestoreState`'s dictionary: the `[Peripheral]` BlueZ already had
/// connected when the manager started with restoration turned on.
public let CBCentralManagerRestoredStatePeripheralsKey = "kCBRestoredPeripherals"
