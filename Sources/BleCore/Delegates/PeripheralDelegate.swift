import Foundation

/// Receives a `Peripheral`'s events, as CoreBluetooth's `CBPeripheralDelegate`.
///
/// Delivered like `CentralManagerDelegate` (in order, on the loop or the manager's queue).
/// Errors are `BleError`s. Every method has an empty default.
///
/// The requirements are Apple's signatures: iOS code that implements them, unchanged, is
/// called. `peripheral(_:didOpen:error:)` fails to compile (`CBL2CAPChannel` is unavailable,
/// with a message); docs/PORTING.md lists every method and what BleKit does with it.
public protocol PeripheralDelegate: AnyObject {
    /// The GAP name changed.
    func peripheralDidUpdateName(_ peripheral: Peripheral)
    /// Services disappeared from the GATT tree (the peripheral's database changed).
    func peripheral(_ peripheral: Peripheral, didModifyServices invalidatedServices: [Service])
    /// Answer to `readRSSI()`. Its default calls the CoreBluetooth form (`NSNumber`).
    func peripheral(_ peripheral: Peripheral, didReadRSSI RSSI: Int, error: Error?)
    /// CoreBluetooth's form of the RSSI answer.
    func peripheral(_ peripheral: Peripheral, didReadRSSI RSSI: NSNumber, error: Error?)
    /// Answer to `discoverServices(_:)`.
    func peripheral(_ peripheral: Peripheral, didDiscoverServices error: Error?)
    /// Answer to `discoverIncludedServices(_:for:)`: `service.includedServices` is set.
    func peripheral(_ peripheral: Peripheral, didDiscoverIncludedServicesFor service: Service, error: Error?)
    /// Answer to `discoverCharacteristics(_:for:)`.
    func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: Service, error: Error?)
    /// Answer to `discoverDescriptors(for:)`.
    func peripheral(_ peripheral: Peripheral, didDiscoverDescriptorsFor characteristic: Characteristic, error: Error?)
    /// A read completed, or a notification/indication arrived (exactly once for each).
    func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: Characteristic, error: Error?)
    /// A write with response completed.
    func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: Characteristic, error: Error?)
    /// `setNotifyValue` completed (or notifications ended with the link).
    func peripheral(_ peripheral: Peripheral, didUpdateNotificationStateFor characteristic: Characteristic, error: Error?)
    /// A descriptor read completed.
    func peripheral(_ peripheral: Peripheral, didUpdateValueFor descriptor: Descriptor, error: Error?)
    /// A descriptor write completed.
    func peripheral(_ peripheral: Peripheral, didWriteValueFor descriptor: Descriptor, error: Error?)
    /// `canSendWriteWithoutResponse` turned true again.
    func peripheralIsReady(toSendWriteWithoutResponse peripheral: Peripheral)
    /// Answer to `pair()`: nil when paired, else why not (BleKit only; iOS pairs in system UI).
    func peripheral(_ peripheral: Peripheral, didCompletePairing error: Error?)
}

extension PeripheralDelegate {
    /// Does nothing.
    public func peripheralDidUpdateName(_ peripheral: Peripheral) {}
    /// Does nothing.
    public func peripheral(_ peripheral: Peripheral, didModifyServices invalidatedServices: [Service]) {}
    /// Calls the CoreBluetooth form (`NSNumber`).
    public func peripheral(_ peripheral: Peripheral, didReadRSSI RSSI: Int, error: Error?) {
        self.peripheral(peripheral, didReadRSSI: NSNumber(value: RSSI), error: error)
    }
    /// Does nothing.
    public func peripheral(_ peripheral: Peripheral, didReadRSSI RSSI: NSNumber, error: Error?) {}
    /// Does nothing.
    public func peripheral(_ peripheral: Peripheral, didDiscoverServices error: Error?) {}
    /// Does nothing.
    public func peripheral(_ peripheral: Peripheral, didDiscoverIncludedServicesFor service: Service, error: Error?) {}
    /// Does nothing.
    public func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: Service, error: Error?) {}
    /// Does nothing.
    public func peripheral(_ peripheral: Peripheral, didDiscoverDescriptorsFor characteristic: Characteristic, error: Error?) {}
    /// Does nothing.
    public func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: Characteristic, error: Error?) {}
    /// Does nothing.
    public func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: Characteristic, error: Error?) {}
    /// Does nothing.
    public func peripheral(_ peripheral: Peripheral, didUpdateNotificationStateFor characteristic: Characteristic, error: Error?) {}
    /// Does nothing.
    public func peripheral(_ peripheral: Peripheral, didUpdateValueFor descriptor: Descriptor, error: Error?) {}
    /// Does nothing.
    public func peripheral(_ peripheral: Peripheral, didWriteValueFor descriptor: Descriptor, error: Error?) {}
    /// Does nothing.
    public func peripheralIsReady(toSendWriteWithoutResponse peripheral: Peripheral) {}
    /// Does nothing.
    public func peripheral(_ peripheral: Peripheral, didCompletePairing error: Error?) {}
}
