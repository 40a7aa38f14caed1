import BleDBus
import Foundation

// @unchecked: an any-thread facade (see ThreadingModel.md). Its mutable state is @BleLoop-
// isolated or behind a lock; the class cannot be @BleLoop itself, because CoreBluetooth-shaped
// code calls it from any thread without `await`.
/// A GATT descriptor (BlueZ `GattDescriptor1`), as CoreBluetooth's `CBDescriptor`: a remote
/// one, or (as its subclass ``MutableDescriptor``) one this machine serves. Its `uuid` 0x2902 is
/// the CCCD, which BlueZ manages itself: use `setNotifyValue`.
public class Descriptor: Attribute, @unchecked Sendable {
    /// BlueZ's object; "/" for a local descriptor.
    let path: ObjectPath
    /// The queue of this attribute's operations, hashed once.
    let operationKey: OperationKey
    @BleLoop weak var owner: Characteristic?
    @BleLoop var cachedValue: Data?

    @BleLoop init(path: ObjectPath, uuid: BluetoothUUID, owner: Characteristic) {
        self.path = path
        operationKey = OperationKey(path)
        super.init(uuid: uuid)
        self.owner = owner
    }

    /// A descriptor this machine serves (``MutableDescriptor``): no BlueZ object.
    init(localType uuid: BluetoothUUID) {
        path = "/"
        operationKey = OperationKey(path)
        super.init(uuid: uuid)
    }

    /// The characteristic it belongs to.
    public var characteristic: Characteristic? { LoopBridge.sync { self.owner } }
    /// The last value read; inside a `didUpdateValueFor` callback for this descriptor, that
    /// callback's value.
    public var value: Data? {
        if let delivered = DeliveredValue.value(for: self) { return delivered }
        return LoopBridge.sync { self.cachedValue }
    }
}
