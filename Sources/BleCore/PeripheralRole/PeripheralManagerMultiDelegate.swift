import Foundation

/// Fans a `PeripheralManager`'s events out to several listeners (the server-side DSL listens
/// this way beside the app's own delegate). Listeners are held weakly and called in insertion
/// order; the first to answer a request wins, later answers are ignored.
public final class PeripheralManagerMultiDelegate: PeripheralManagerDelegate, Sendable {
    private let listeners = WeakListeners()

    /// An empty fan-out.
    public init() {}

    /// Adds `delegate` unless it is already there.
    public func addDelegate(_ delegate: PeripheralManagerDelegate) { listeners.add(delegate) }
    /// Stops forwarding to `delegate`; listeners that were released drop out on their own.
    public func removeDelegate(_ delegate: PeripheralManagerDelegate) { listeners.remove(delegate) }
    /// The live listeners, in order.
    public var delegates: [PeripheralManagerDelegate] { listeners.snapshot().compactMap { $0 as? PeripheralManagerDelegate } }
    var isEmpty: Bool { listeners.isEmpty }

    /// Forwards to every listener.
    public func peripheralManagerDidUpdateState(_ peripheral: PeripheralManager) {
        for delegate in delegates { delegate.peripheralManagerDidUpdateState(peripheral) }
    }
    /// Forwards to every listener.
    public func peripheralManager(_ peripheral: PeripheralManager, willRestoreState dict: [String: Any]) {
        for delegate in delegates { delegate.peripheralManager(peripheral, willRestoreState: dict) }
    }
    /// Forwards to every listener.
    public func peripheralManager(_ peripheral: PeripheralManager, didAdd service: Service, error: Error?) {
        for delegate in delegates { delegate.peripheralManager(peripheral, didAdd: service, error: error) }
    }
    /// Forwards to every listener.
    public func peripheralManagerDidStartAdvertising(_ peripheral: PeripheralManager, error: Error?) {
        for delegate in delegates { delegate.peripheralManagerDidStartAdvertising(peripheral, error: error) }
    }
    /// Forwards to every listener.
    public func peripheralManager(_ peripheral: PeripheralManager, central: Central, didSubscribeTo characteristic: Characteristic) {
        for delegate in delegates { delegate.peripheralManager(peripheral, central: central, didSubscribeTo: characteristic) }
    }
    /// Forwards to every listener.
    public func peripheralManager(_ peripheral: PeripheralManager, central: Central, didUnsubscribeFrom characteristic: Characteristic) {
        for delegate in delegates { delegate.peripheralManager(peripheral, central: central, didUnsubscribeFrom: characteristic) }
    }
    /// Forwards to every listener.
    public func peripheralManagerIsReady(toUpdateSubscribers peripheral: PeripheralManager) {
        for delegate in delegates { delegate.peripheralManagerIsReady(toUpdateSubscribers: peripheral) }
    }
    /// Forwards to every listener.
    public func peripheralManager(_ peripheral: PeripheralManager, didReceiveRead request: ATTRequest) {
        for delegate in delegates { delegate.peripheralManager(peripheral, didReceiveRead: request) }
    }
    /// Forwards to every listener.
    public func peripheralManager(_ peripheral: PeripheralManager, didReceiveWrite requests: [ATTRequest]) {
        for delegate in delegates { delegate.peripheralManager(peripheral, didReceiveWrite: requests) }
    }
    /// Forwards to every listener.
    public func peripheralManager(_ peripheral: PeripheralManager, centralDidConnect central: Central) {
        for delegate in delegates { delegate.peripheralManager(peripheral, centralDidConnect: central) }
    }
    /// Forwards to every listener.
    public func peripheralManager(_ peripheral: PeripheralManager, centralDidDisconnect central: Central) {
        for delegate in delegates { delegate.peripheralManager(peripheral, centralDidDisconnect: central) }
    }
    /// Forwards to every listener.
    public func peripheralManager(_ peripheral: PeripheralManager, didReceiveConfirmationFor characteristic: Characteristic) {
        for delegate in delegates { delegate.peripheralManager(peripheral, didReceiveConfirmationFor: characteristic) }
    }
    /// Forwards to every listener.
    public func peripheralManager(_ peripheral: PeripheralManager, advertisementDidUpdate registration: AdvertisementRegistration) {
        for delegate in delegates { delegate.peripheralManager(peripheral, advertisementDidUpdate: registration) }
    }
    /// Forwards to every listener.
    public func peripheralManager(_ peripheral: PeripheralManager, didDiscardWriteTo characteristic: Characteristic, from central: Central, error: BleError) {
        for delegate in delegates { delegate.peripheralManager(peripheral, didDiscardWriteTo: characteristic, from: central, error: error) }
    }
}
