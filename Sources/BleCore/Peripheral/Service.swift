import BleDBus

// @unchecked: an any-thread facade (see ThreadingModel.md). Its mutable state is @BleLoop-
// isolated or behind a lock; the class cannot be @BleLoop itself, because CoreBluetooth-shaped
// code calls it from any thread without `await`.
/// A GATT service of a peripheral (BlueZ `GattService1`), as CoreBluetooth's `CBService`.
public final class Service: @unchecked Sendable {
    /// What the service is, from BlueZ's `UUID`; match it against the UUIDs you discover for.
    public let uuid: BluetoothUUID
    /// Whether it is a primary service.
    public let isPrimary: Bool
    let path: ObjectPath
    @BleLoop weak var owner: Peripheral?
    @BleLoop var discoveredCharacteristics: [Characteristic]?

    @BleLoop init(path: ObjectPath, uuid: BluetoothUUID, isPrimary: Bool, owner: Peripheral) {
        self.path = path
        self.uuid = uuid
        self.isPrimary = isPrimary
        self.owner = owner
    }

    /// The peripheral it belongs to (nil once that was released).
    public var peripheral: Peripheral? { LoopBridge.sync { self.owner } }
    /// The characteristics found by `discoverCharacteristics`, nil before.
    public var characteristics: [Characteristic]? { LoopBridge.sync { self.discoveredCharacteristics } }
}
