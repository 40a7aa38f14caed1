// CoreBluetooth spellings, so iOS code ports by changing its imports. They exist for that only;
// new code should use the BleKit names.

/// `CBUUID`
public typealias CBUUID = BluetoothUUID
/// `CBCentralManager`
public typealias CBCentralManager = CentralManager
/// `CBPeripheral`
public typealias CBPeripheral = Peripheral
/// `CBService`
public typealias CBService = Service
/// `CBCharacteristic`
public typealias CBCharacteristic = Characteristic
/// `CBDescriptor`
public typealias CBDescriptor = Descriptor
/// `CBManagerState`
public typealias CBManagerState = ManagerState
/// `CBPeripheralState`
public typealias CBPeripheralState = PeripheralState
/// `CBCharacteristicWriteType`
public typealias CBCharacteristicWriteType = CharacteristicWriteType
/// `CBCharacteristicProperties`
public typealias CBCharacteristicProperties = CharacteristicProperties
/// `CBCentralManagerDelegate`
public typealias CBCentralManagerDelegate = CentralManagerDelegate
/// `CBPeripheralDelegate`
public typealias CBPeripheralDelegate = PeripheralDelegate
/// `CBATTError`
public typealias CBATTError = AttError
