import Foundation

/// Fans a `CentralManager`'s events out to several listeners, as FXBlueTooth's class of that name.
///
/// Listeners are held weakly (keep them alive elsewhere), dead ones are purged, a listener
/// added twice is called once, calls go in insertion order, and listeners may add or remove
/// listeners during a callback (the change applies from the next event). Each manager has one
/// in `CentralManager.multiDelegate`, called after `delegate`; you may also make one your
/// manager's `delegate`.
public final class CentralManagerMultiDelegate: CentralManagerDelegate, @unchecked Sendable {
    private let listeners = WeakListeners()

    /// An empty fan-out.
    public init() {}

    /// Adds `delegate` unless it is already there.
    public func addDelegate(_ delegate: CentralManagerDelegate) { listeners.add(delegate) }
    /// True while it has no listeners (dead ones may count until the next change).
    var isEmpty: Bool { listeners.isEmpty }
    /// Stops forwarding to `delegate`; listeners that were released drop out on their own.
    public func removeDelegate(_ delegate: CentralManagerDelegate) { listeners.remove(delegate) }
    /// The live listeners, in order.
    public var delegates: [CentralManagerDelegate] { listeners.snapshot().compactMap { $0 as? CentralManagerDelegate } }

    /// Forwards to every listener.
    public func centralManagerDidUpdateState(_ central: CentralManager) {
        for delegate in delegates { delegate.centralManagerDidUpdateState(central) }
    }
    /// Forwards to every listener.
    public func centralManager(_ central: CentralManager, willRestoreState dict: [String: Any]) {
        for delegate in delegates { delegate.centralManager(central, willRestoreState: dict) }
    }
    /// Forwards to every listener.
    public func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: AdvertisementData, rssi RSSI: Int) {
        for delegate in delegates { delegate.centralManager(central, didDiscover: peripheral, advertisementData: advertisementData, rssi: RSSI) }
    }
    /// Forwards to every listener.
    public func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) {
        for delegate in delegates { delegate.centralManager(central, didConnect: peripheral) }
    }
    /// Forwards to every listener.
    public func centralManager(_ central: CentralManager, didFailToConnect peripheral: Peripheral, error: Error?) {
        for delegate in delegates { delegate.centralManager(central, didFailToConnect: peripheral, error: error) }
    }
    /// Forwards to every listener.
    public func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, error: Error?) {
        for delegate in delegates { delegate.centralManager(central, didDisconnectPeripheral: peripheral, error: error) }
    }
    /// Forwards to every listener.
    public func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, timestamp: CFAbsoluteTime,
                               isReconnecting: Bool, error: Error?) {
        for delegate in delegates {
            delegate.centralManager(central, didDisconnectPeripheral: peripheral, timestamp: timestamp, isReconnecting: isReconnecting, error: error)
        }
    }
    /// Forwards to every listener.
    public func centralManager(_ central: CentralManager, didFailToScan error: Error) {
        for delegate in delegates { delegate.centralManager(central, didFailToScan: error) }
    }
}
