import Foundation

/// Fans a `Peripheral`'s events out to several listeners (`peripheral.multiDelegate`), with the
/// same rules as `CentralManagerMultiDelegate`: weak, purged, no duplicates, insertion order,
/// safe to change during a callback.
public final class PeripheralMultiDelegate: PeripheralDelegate, @unchecked Sendable {
    private let listeners = WeakListeners()

    /// An empty fan-out.
    public init() {}

    /// Adds `delegate` unless it is already there.
    public func addDelegate(_ delegate: PeripheralDelegate) { listeners.add(delegate) }
    /// True while it has no listeners (dead ones may count until the next change).
    var isEmpty: Bool { listeners.isEmpty }
    /// Stops forwarding to `delegate`; listeners that were released drop out on their own.
    public func removeDelegate(_ delegate: PeripheralDelegate) { listeners.remove(delegate) }
    /// The live listeners, in order.
    public var delegates: [PeripheralDelegate] { listeners.snapshot().compactMap { $0 as? PeripheralDelegate } }

    /// Forwards to every listener.
    public func peripheralDidUpdateName(_ peripheral: Peripheral) { for d in delegates { d.peripheralDidUpdateName(peripheral) } }
    /// Forwards to every listener.
    public func peripheral(_ peripheral: Peripheral, didModifyServices invalidatedServices: [Service]) {
        for d in delegates { d.peripheral(peripheral, didModifyServices: invalidatedServices) }
    }
    /// Forwards to every listener.
    public func peripheral(_ peripheral: Peripheral, didReadRSSI RSSI: Int, error: Error?) {
        for d in delegates { d.peripheral(peripheral, didReadRSSI: RSSI, error: error) }
    }
    /// Forwards to every listener.
    public func peripheral(_ peripheral: Peripheral, didDiscoverServices error: Error?) {
        for d in delegates { d.peripheral(peripheral, didDiscoverServices: error) }
    }
    /// Forwards to every listener.
    public func peripheral(_ peripheral: Peripheral, didDiscoverIncludedServicesFor service: Service, error: Error?) {
        for d in delegates { d.peripheral(peripheral, didDiscoverIncludedServicesFor: service, error: error) }
    }
    /// Forwards to every delegate.
    public func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: Service, error: Error?) {
        for d in delegates { d.peripheral(peripheral, didDiscoverCharacteristicsFor: service, error: error) }
    }
    /// Forwards to every listener.
    public func peripheral(_ peripheral: Peripheral, didDiscoverDescriptorsFor characteristic: Characteristic, error: Error?) {
        for d in delegates { d.peripheral(peripheral, didDiscoverDescriptorsFor: characteristic, error: error) }
    }
    /// Forwards to every listener.
    public func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: Characteristic, error: Error?) {
        for d in delegates { d.peripheral(peripheral, didUpdateValueFor: characteristic, error: error) }
    }
    /// Forwards to every listener.
    public func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: Characteristic, error: Error?) {
        for d in delegates { d.peripheral(peripheral, didWriteValueFor: characteristic, error: error) }
    }
    /// Forwards to every listener.
    public func peripheral(_ peripheral: Peripheral, didUpdateNotificationStateFor characteristic: Characteristic, error: Error?) {
        for d in delegates { d.peripheral(peripheral, didUpdateNotificationStateFor: characteristic, error: error) }
    }
    /// Forwards to every listener.
    public func peripheral(_ peripheral: Peripheral, didUpdateValueFor descriptor: Descriptor, error: Error?) {
        for d in delegates { d.peripheral(peripheral, didUpdateValueFor: descriptor, error: error) }
    }
    /// Forwards to every listener.
    public func peripheral(_ peripheral: Peripheral, didWriteValueFor descriptor: Descriptor, error: Error?) {
        for d in delegates { d.peripheral(peripheral, didWriteValueFor: descriptor, error: error) }
    }
    /// Forwards to every listener.
    public func peripheralIsReady(toSendWriteWithoutResponse peripheral: Peripheral) {
        for d in delegates { d.peripheralIsReady(toSendWriteWithoutResponse: peripheral) }
    }
    /// Forwards to every listener.
    public func peripheral(_ peripheral: Peripheral, didCompletePairing error: Error?) {
        for d in delegates { d.peripheral(peripheral, didCompletePairing: error) }
    }
}
