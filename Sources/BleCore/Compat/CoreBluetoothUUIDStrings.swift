// CoreBluetooth's `CBUUID…String` constants: the 16-bit forms of the standard descriptors (and
// the GAP/GATT attributes iOS once exported), for `CBUUID(string:)`, as iOS defines them.

/// Characteristic Extended Properties descriptor (0x2900); bluetoothd serves it itself.
public let CBUUIDCharacteristicExtendedPropertiesString = "2900"
/// Characteristic User Description descriptor (0x2901): a characteristic's name, UTF-8.
public let CBUUIDCharacteristicUserDescriptionString = "2901"
/// Client Characteristic Configuration descriptor (0x2902); BlueZ manages it: use `setNotifyValue`.
public let CBUUIDClientCharacteristicConfigurationString = "2902"
/// Server Characteristic Configuration descriptor (0x2903).
public let CBUUIDServerCharacteristicConfigurationString = "2903"
/// Characteristic Presentation Format descriptor (0x2904).
public let CBUUIDCharacteristicFormatString = "2904"
/// Characteristic Aggregate Format descriptor (0x2905).
public let CBUUIDCharacteristicAggregateFormatString = "2905"
/// Valid Range descriptor (0x2906).
public let CBUUIDCharacteristicValidRangeString = "2906"
/// The characteristic iOS publishes an L2CAP PSM in (BleKit has no L2CAP channels yet).
public let CBUUIDL2CAPPSMCharacteristicString = "ABDD3056-28FA-441D-A470-55A75A52553A"
/// Generic Access service (0x1800), which bluetoothd serves and hides from clients.
public let CBUUIDGenericAccessProfileString = "1800"
/// Generic Attribute service (0x1801).
public let CBUUIDGenericAttributeProfileString = "1801"
/// Device Name characteristic (0x2A00).
public let CBUUIDDeviceNameString = "2A00"
/// Appearance characteristic (0x2A01).
public let CBUUIDAppearanceString = "2A01"
/// Peripheral Privacy Flag characteristic (0x2A02).
public let CBUUIDPeripheralPrivacyFlagString = "2A02"
/// Reconnection Address characteristic (0x2A03).
public let CBUUIDReconnectionAddressString = "2A03"
/// Peripheral Preferred Connection Parameters characteristic (0x2A04).
public let CBUUIDPeripheralPreferredConnectionParametersString = "2A04"
/// Service Changed characteristic (0x2A05).
public let CBUUIDServiceChangedString = "2A05"
