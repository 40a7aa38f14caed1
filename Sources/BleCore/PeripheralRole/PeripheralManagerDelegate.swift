import Foundation

/// Receives a `PeripheralManager`'s events, as CoreBluetooth's `CBPeripheralManagerDelegate`,
/// plus the central connections BlueZ reports. Calls arrive in order, on the loop or on the
/// manager's queue. Every method has an empty default.
///
/// The requirements are Apple's signatures (`didAdd service: CBService`, `didSubscribeTo
/// characteristic: CBCharacteristic`, …): iOS code that implements them, unchanged, is called.
/// The objects passed are BleKit's own: `service` is the ``MutableService`` you added,
/// `characteristic` the ``MutableCharacteristic`` you served. The L2CAP methods fail to compile
/// (their types are unavailable, with a message); docs/PORTING.md lists every method.
public protocol PeripheralManagerDelegate: AnyObject {
    /// `peripheral.state` changed.
    func peripheralManagerDidUpdateState(_ peripheral: PeripheralManager)
    /// Before the first state update, for a manager made with
    /// `CBPeripheralManagerOptionRestoreIdentifierKey`: what BlueZ still serves for this process
    /// (its advertisements and GATT applications end with the process, so on Linux the
    /// dictionary names the restore identifier under `CBPeripheralManagerOptionRestoreIdentifierKey`
    /// and holds no services or advertisement data — see `PeripheralManager` for why).
    func peripheralManager(_ peripheral: PeripheralManager, willRestoreState dict: [String: Any])
    /// `add(_:)` ended: the application holding `service` (the ``MutableService`` added) is
    /// registered with bluetoothd, or `error` says why not.
    func peripheralManager(_ peripheral: PeripheralManager, didAdd service: Service, error: Error?)
    /// An advertisement started (`error` nil) or was refused.
    func peripheralManagerDidStartAdvertising(_ peripheral: PeripheralManager, error: Error?)
    /// A central subscribed to notifications or indications of `characteristic`.
    func peripheralManager(_ peripheral: PeripheralManager, central: Central, didSubscribeTo characteristic: Characteristic)
    /// A central unsubscribed (or, for bluetoothd, the last one did).
    func peripheralManager(_ peripheral: PeripheralManager, central: Central, didUnsubscribeFrom characteristic: Characteristic)
    /// `updateValue` returned false earlier and may be called again.
    func peripheralManagerIsReady(toUpdateSubscribers peripheral: PeripheralManager)
    /// A central reads a dynamic characteristic: set `request.value` and `respond(to:withResult:)`.
    func peripheralManager(_ peripheral: PeripheralManager, didReceiveRead request: ATTRequest)
    /// Centrals wrote; answer the first request once for all of them (as CoreBluetooth).
    func peripheralManager(_ peripheral: PeripheralManager, didReceiveWrite requests: [ATTRequest])
    /// A central's link came up (its `Device1` on the serving adapter turned `Connected`).
    func peripheralManager(_ peripheral: PeripheralManager, centralDidConnect central: Central)
    /// A central's link went down.
    func peripheralManager(_ peripheral: PeripheralManager, centralDidDisconnect central: Central)
    /// A central confirmed an indication of `characteristic`.
    func peripheralManager(_ peripheral: PeripheralManager, didReceiveConfirmationFor characteristic: Characteristic)
    /// An advertisement's registration changed (registered, refused, released by bluetoothd,
    /// registered again after a bluetoothd restart).
    func peripheralManager(_ peripheral: PeripheralManager, advertisementDidUpdate registration: AdvertisementRegistration)
    /// A write to `characteristic` could not be delivered whole, so it was not delivered:
    /// `error` is `BleError.valueTooLong(length:maximum:)` for a datagram on its `AcquireWrite`
    /// socket longer than the MTU bluetoothd was given (bluetoothd never sends one; something
    /// else owning `org.bluez` or a broken daemon did). BleKit-only; CoreBluetooth has none.
    func peripheralManager(_ peripheral: PeripheralManager, didDiscardWriteTo characteristic: Characteristic, from central: Central, error: BleError)
}

extension PeripheralManagerDelegate {
    /// Does nothing.
    public func peripheralManagerDidUpdateState(_ peripheral: PeripheralManager) {}
    /// Does nothing.
    public func peripheralManager(_ peripheral: PeripheralManager, willRestoreState dict: [String: Any]) {}
    /// Does nothing.
    public func peripheralManager(_ peripheral: PeripheralManager, didAdd service: Service, error: Error?) {}
    /// Does nothing.
    public func peripheralManagerDidStartAdvertising(_ peripheral: PeripheralManager, error: Error?) {}
    /// Does nothing.
    public func peripheralManager(_ peripheral: PeripheralManager, central: Central, didSubscribeTo characteristic: Characteristic) {}
    /// Does nothing.
    public func peripheralManager(_ peripheral: PeripheralManager, central: Central, didUnsubscribeFrom characteristic: Characteristic) {}
    /// Does nothing.
    public func peripheralManagerIsReady(toUpdateSubscribers peripheral: PeripheralManager) {}
    /// Does nothing: another listener may answer; an unanswered request ends at its deadline.
    public func peripheralManager(_ peripheral: PeripheralManager, didReceiveRead request: ATTRequest) {}
    /// Does nothing: another listener may answer; an unanswered request ends at its deadline.
    public func peripheralManager(_ peripheral: PeripheralManager, didReceiveWrite requests: [ATTRequest]) {}
    /// Does nothing.
    public func peripheralManager(_ peripheral: PeripheralManager, centralDidConnect central: Central) {}
    /// Does nothing.
    public func peripheralManager(_ peripheral: PeripheralManager, centralDidDisconnect central: Central) {}
    /// Does nothing.
    public func peripheralManager(_ peripheral: PeripheralManager, didReceiveConfirmationFor characteristic: Characteristic) {}
    /// Does nothing.
    public func peripheralManager(_ peripheral: PeripheralManager, advertisementDidUpdate registration: AdvertisementRegistration) {}
    /// Does nothing (the discard is logged as an error and counted in `diagnostics`).
    public func peripheralManager(_ peripheral: PeripheralManager, didDiscardWriteTo characteristic: Characteristic, from central: Central, error: BleError) {}
}
