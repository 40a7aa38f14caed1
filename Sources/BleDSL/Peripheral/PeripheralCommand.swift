/// Told when characteristics of a service were discovered (e.g. `PeripheralDevice.Characteristic`).
public protocol DiscoverCharacteristic: AnyObject {
    /// The characteristics of `service` are known.
    func didDiscoverCharacteristicsFor(service: Service)
    /// Discovery failed; FXBlueTooth ignored these, BleKit reports them.
    func didFailToDiscover(error: Error)
    /// The link dropped: what was discovered is stale until the next discovery.
    func peripheralDidDisconnect()
    /// Every wanted service's characteristics are discovered: what the listener needs and did
    /// not find (nil when all is there). `PeripheralDevice` reports it.
    func discoveryDidFinish() -> MissingAttribute?
}

extension DiscoverCharacteristic {
    /// Needs nothing in particular.
    public func discoveryDidFinish() -> MissingAttribute? { nil }
    /// Does nothing.
    public func didFailToDiscover(error: Error) {}
    /// Does nothing.
    public func peripheralDidDisconnect() {}
}

/// Receives characteristic events forwarded by a `PeripheralDevice` (FXBlueTooth's shape).
public protocol CharacteristicValue: AnyObject {
    /// A write with response completed.
    func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: Characteristic, error: Error?)
    /// A value arrived (read reply or notification).
    func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: Characteristic, error: Error?)
    /// Notifications were turned on or off.
    func peripheral(_ peripheral: Peripheral, didUpdateNotificationStateFor characteristic: Characteristic, error: Error?)
    /// The link dropped (a BleKit addition: FXBlueTooth's engine never heard of disconnects).
    func peripheralDidDisconnect(error: Error?)
}

extension CharacteristicValue {
    /// Does nothing.
    public func peripheralDidDisconnect(error: Error?) {}
}

/// One item of a peripheral command, as in FXBlueTooth.
public enum PeripheralCommandItem {
    /// Which services to discover (empty: all).
    case discoverServices([BluetoothUUID])
    /// Who wants to see discovered characteristics.
    case discoverCharacteristics([DiscoverCharacteristic])
    /// Who wants characteristic events.
    case characteristicValues([CharacteristicValue])
}

/// Peripheral command items folded into one value; order does not matter, the last of a kind wins.
public struct PeripheralCommand {
    /// Services to discover.
    public var discoverServices: [BluetoothUUID]?
    /// Characteristic discovery listeners.
    public var discoverCharacteristics: [DiscoverCharacteristic]?
    /// Characteristic event listeners.
    public var characteristicValues: [CharacteristicValue]?

    /// Folds `items`.
    public init(_ items: [PeripheralCommandItem]? = nil) {
        for item in items ?? [] {
            switch item {
            case .discoverServices(let uuids): discoverServices = uuids
            case .discoverCharacteristics(let listeners): discoverCharacteristics = listeners
            case .characteristicValues(let listeners): characteristicValues = listeners
            }
        }
    }
}
