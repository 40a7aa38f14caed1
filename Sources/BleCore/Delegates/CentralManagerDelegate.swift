import Foundation

/// Receives a `CentralManager`'s events, as CoreBluetooth's `CBCentralManagerDelegate`.
///
/// A plain protocol, so Swift 5 code without concurrency annotations conforms unchanged. Calls
/// arrive in order, one at a time: on BleKit's loop thread (`BleLoop`) by default, or on the
/// `queue` given to the manager's init. Swift 6 code that keeps its state `@BleLoop` may conform
/// with `@preconcurrency` and the default (loop) delivery. Every method has an empty default.
///
/// The requirements are Apple's signatures: iOS code that implements them, unchanged, is
/// called. `connectionEventDidOccur` fails to compile (`CBConnectionEvent` is unavailable, with
/// a message); docs/PORTING.md lists every method and what BleKit does with it.
public protocol CentralManagerDelegate: AnyObject {
    /// `central.state` changed.
    func centralManagerDidUpdateState(_ central: CentralManager)
    /// With `Options.restoreConnectedPeripherals`: devices BlueZ already had connected, under
    /// `CBCentralManagerRestoredStatePeripheralsKey` (`[Peripheral]`).
    func centralManager(_ central: CentralManager, willRestoreState dict: [String: Any])
    /// A scan found (or, with duplicates allowed, heard again) a peripheral.
    ///
    /// Its default calls the CoreBluetooth form below, so iOS code that implements only that
    /// one is called; implement one of the two (with both, only this one is called).
    func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: AdvertisementData, rssi RSSI: Int)
    /// CoreBluetooth's form of the discovery callback: `advertisementData` keyed by the
    /// `CBAdvertisementData…Key` constants, the RSSI as an `NSNumber`.
    func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: [String: Any], rssi RSSI: NSNumber)
    /// The peripheral is connected and BlueZ has resolved its GATT services; call
    /// `discoverServices` (it answers at once from BlueZ's cache), as with CoreBluetooth.
    func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral)
    /// `connect` failed; `error` is a `BleError`.
    func centralManager(_ central: CentralManager, didFailToConnect peripheral: Peripheral, error: Error?)
    /// The link is gone; `error` is nil after `cancelPeripheralConnection`, else a `BleError`.
    func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, error: Error?)
    /// iOS 17's form of the disconnect callback, which BleKit calls: `timestamp` is when the
    /// link went down (seconds since 2001, as `CFAbsoluteTimeGetCurrent()`), `isReconnecting`
    /// is always false (BlueZ does not reconnect on its own). Its default calls the form above,
    /// so implement one of the two (with both, only this one is called, as on iOS).
    func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, timestamp: CFAbsoluteTime,
                        isReconnecting: Bool, error: Error?)
    /// BlueZ refused to start discovery (`error` is a `BleError`); the scan request is dropped
    /// and `isScanning` is false. Not called when the adapter is merely off: the scan then
    /// starts when it is powered on.
    func centralManager(_ central: CentralManager, didFailToScan error: Error)
}

extension CentralManagerDelegate {
    /// Does nothing.
    public func centralManagerDidUpdateState(_ central: CentralManager) {}
    /// Does nothing.
    public func centralManager(_ central: CentralManager, willRestoreState dict: [String: Any]) {}
    /// Calls the CoreBluetooth form (`[String: Any]`, `NSNumber`).
    public func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: AdvertisementData, rssi RSSI: Int) {
        centralManager(central, didDiscover: peripheral, advertisementData: advertisementData.dictionary, rssi: NSNumber(value: RSSI))
    }
    /// Does nothing.
    public func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {}
    /// Does nothing.
    public func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) {}
    /// Does nothing.
    public func centralManager(_ central: CentralManager, didFailToConnect peripheral: Peripheral, error: Error?) {}
    /// Does nothing.
    public func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, error: Error?) {}
    /// Calls the form without `timestamp` and `isReconnecting`.
    public func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, timestamp: CFAbsoluteTime,
                               isReconnecting: Bool, error: Error?) {
        centralManager(central, didDisconnectPeripheral: peripheral, error: error)
    }
    /// Does nothing.
    public func centralManager(_ central: CentralManager, didFailToScan error: Error) {}
}
