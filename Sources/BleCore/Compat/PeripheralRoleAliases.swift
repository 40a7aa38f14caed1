// CoreBluetooth spellings of the peripheral role, so iOS code ports by changing its imports.

/// CoreBluetooth's `CBPeripheralManager`, here ``PeripheralManager``: publishes services through
/// BlueZ's `GattManager1` and advertises through `LEAdvertisingManager1`.
public typealias CBPeripheralManager = PeripheralManager
/// CoreBluetooth's `CBPeripheralManagerDelegate`, here ``PeripheralManagerDelegate``: the same
/// callbacks for state, added services, advertising, requests and subscriptions.
public typealias CBPeripheralManagerDelegate = PeripheralManagerDelegate
/// CoreBluetooth's `CBMutableService`, here ``MutableService``: a local service to publish.
public typealias CBMutableService = MutableService
/// CoreBluetooth's `CBMutableCharacteristic`, here ``MutableCharacteristic``: a local characteristic,
/// exported to BlueZ as a `GattCharacteristic1` object.
public typealias CBMutableCharacteristic = MutableCharacteristic
/// CoreBluetooth's `CBMutableDescriptor`, here ``MutableDescriptor``: a local descriptor, exported to
/// BlueZ as a `GattDescriptor1` object.
public typealias CBMutableDescriptor = MutableDescriptor
/// CoreBluetooth's `CBATTRequest`, here ``ATTRequest``: one read or write from a central, answered
/// with `respond(to:withResult:)` as on iOS.
public typealias CBATTRequest = ATTRequest
/// CoreBluetooth's `CBAttributePermissions`, here ``AttributePermissions``: turned into BlueZ's
/// `Flags` (including the encrypted variants) when the service is published.
public typealias CBAttributePermissions = AttributePermissions
/// CoreBluetooth's `CBCentral`, here ``Central``: a remote central that reads, writes or subscribes.
public typealias CBCentral = Central
