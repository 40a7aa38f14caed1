// CoreBluetooth spellings of the peripheral role, so iOS code ports by changing its imports.

/// `CBPeripheralManager`
public typealias CBPeripheralManager = PeripheralManager
/// `CBPeripheralManagerDelegate`
public typealias CBPeripheralManagerDelegate = PeripheralManagerDelegate
/// `CBMutableService`
public typealias CBMutableService = MutableService
/// `CBMutableCharacteristic`
public typealias CBMutableCharacteristic = MutableCharacteristic
/// `CBMutableDescriptor`
public typealias CBMutableDescriptor = MutableDescriptor
/// `CBATTRequest`
public typealias CBATTRequest = ATTRequest
/// `CBAttributePermissions`
public typealias CBAttributePermissions = AttributePermissions
/// `CBCentral`
public typealias CBCentral = Central
