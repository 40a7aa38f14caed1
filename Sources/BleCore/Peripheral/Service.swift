import BleDBus

// @unchecked: an any-thread facade (see ThreadingModel.md). Its mutable state is @BleLoop-
// isolated or behind a lock; the class cannot be @BleLoop itself, because CoreBluetooth-shaped
// code calls it from any thread without `await`.
/// A GATT service (BlueZ `GattService1`), as CoreBluetooth's `CBService`: a remote one,
/// discovered on a ``Peripheral``, or (as its subclass ``MutableService``) one this machine serves.
public class Service: Attribute, @unchecked Sendable {
    /// Whether it is a primary service.
    public let isPrimary: Bool
    /// BlueZ's object; "/" for a local service.
    let path: ObjectPath
    @BleLoop weak var owner: Peripheral?
    @BleLoop var discoveredCharacteristics: [Characteristic]?
    /// BlueZ's `Includes`: the objects of the services this one includes, as bluetoothd listed them.
    @BleLoop var includedPaths: [ObjectPath] = []
    /// The included services found by `discoverIncludedServices`, nil before.
    @BleLoop var discoveredIncludedServices: [Service]?

    @BleLoop init(path: ObjectPath, uuid: BluetoothUUID, isPrimary: Bool, owner: Peripheral) {
        self.path = path
        self.isPrimary = isPrimary
        super.init(uuid: uuid)
        self.owner = owner
    }

    /// A service this machine serves (``MutableService``): no BlueZ object, no peripheral.
    init(localType uuid: BluetoothUUID, primary isPrimary: Bool) {
        path = "/"
        self.isPrimary = isPrimary
        super.init(uuid: uuid)
    }

    /// The peripheral it belongs to (nil once that was released, and for a service this
    /// machine serves).
    public var peripheral: Peripheral? { LoopBridge.sync { self.owner } }
    /// The characteristics found by `discoverCharacteristics`, nil before.
    public var characteristics: [Characteristic]? { LoopBridge.sync { self.discoveredCharacteristics } }
    /// The services it includes, found by `discoverIncludedServices(_:for:)`; nil before.
    public var includedServices: [Service]? { LoopBridge.sync { self.discoveredIncludedServices } }
}
