// CoreBluetooth spellings, so iOS code ports by changing its imports. They exist for that only;
// new code should use the BleKit names.

import Foundation

/// CoreBluetooth's `CBUUID`, here ``BluetoothUUID``: `CBUUID(string:)` and the 16- and 32-bit
/// short forms port unchanged, and bad text gives nil instead of trapping.
public typealias CBUUID = BluetoothUUID
/// CoreBluetooth's `CBCentralManager`, here ``CentralManager``: scanning and connecting through
/// BlueZ's `Adapter1` and `Device1`, with the same delegate callbacks.
public typealias CBCentralManager = CentralManager
/// CoreBluetooth's `CBPeripheral`, here ``Peripheral``: one BlueZ device object, its GATT
/// discovery, reads, writes and notifications.
public typealias CBPeripheral = Peripheral
/// CoreBluetooth's `CBService`, here ``Service``: a discovered remote service (BlueZ `GattService1`).
public typealias CBService = Service
/// CoreBluetooth's `CBCharacteristic`, here ``Characteristic``: a discovered remote characteristic
/// (BlueZ `GattCharacteristic1`) and its last read or notified value.
public typealias CBCharacteristic = Characteristic
/// CoreBluetooth's `CBDescriptor`, here ``Descriptor``: a discovered remote descriptor (BlueZ
/// `GattDescriptor1`).
public typealias CBDescriptor = Descriptor
/// CoreBluetooth's `CBManagerState`, here ``ManagerState``: derived from bluetoothd, the adapter and
/// its `Powered` property rather than from a system-wide Bluetooth switch.
public typealias CBManagerState = ManagerState
/// CoreBluetooth's `CBPeripheralState`, here ``PeripheralState``: follows the device's `Connected`
/// property and the connect or disconnect BleKit has in flight.
public typealias CBPeripheralState = PeripheralState
/// CoreBluetooth's `CBCharacteristicWriteType`, here ``CharacteristicWriteType``: chooses BlueZ's
/// `request` or `command` write type.
public typealias CBCharacteristicWriteType = CharacteristicWriteType
/// CoreBluetooth's `CBCharacteristicProperties`, here ``CharacteristicProperties``: read from BlueZ's
/// `Flags` strings, with CoreBluetooth's bit values.
public typealias CBCharacteristicProperties = CharacteristicProperties
/// CoreBluetooth's `CBCentralManagerDelegate`, here ``CentralManagerDelegate``: the same callbacks,
/// delivered on the queue given to the manager (BleKit's loop thread when it is nil).
public typealias CBCentralManagerDelegate = CentralManagerDelegate
/// CoreBluetooth's `CBPeripheralDelegate`, here ``PeripheralDelegate``: the same callbacks; every
/// operation ends in one, with its result or an error (a deadline or a disconnect included).
public typealias CBPeripheralDelegate = PeripheralDelegate
/// CoreBluetooth's `CBATTError`, here ``AttError``: the ATT error code parsed from BlueZ's error
/// text, so code that switches on `CBATTError` cases keeps working.
public typealias CBATTError = AttError
/// CoreFoundation's `CFAbsoluteTime` (seconds since 1 January 2001), which Linux's Foundation
/// does not export: iOS 17's `didDisconnectPeripheral(_:timestamp:isReconnecting:error:)` uses it.
public typealias CFAbsoluteTime = Double
/// CoreBluetooth's `CBAttribute`, here ``Attribute``: what services, characteristics and
/// descriptors share.
public typealias CBAttribute = Attribute
/// CoreBluetooth's `CBPeer`, here ``Peer``: a central or a peripheral.
public typealias CBPeer = Peer
/// CoreFoundation's `CFAbsoluteTimeGetCurrent()`: now, in seconds since 1 January 2001.
public func CFAbsoluteTimeGetCurrent() -> CFAbsoluteTime { Date().timeIntervalSinceReferenceDate }
/// CoreBluetooth's `CBManager`, here ``Manager``: what both managers share (`state`,
/// `authorization`).
public typealias CBManager = Manager
/// CoreBluetooth's `CBManagerAuthorization`, here ``ManagerAuthorization``: from bluetoothd's
/// D-Bus policy instead of a privacy prompt.
public typealias CBManagerAuthorization = ManagerAuthorization
