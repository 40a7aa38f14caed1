import BleDBus
import Foundation

// @unchecked: an any-thread facade (see ThreadingModel.md). Its mutable state is @BleLoop-
// isolated or behind a lock; the class cannot be @BleLoop itself, because CoreBluetooth-shaped
// code calls it from any thread without `await`.
/// A GATT characteristic (BlueZ `GattCharacteristic1`), as CoreBluetooth's `CBCharacteristic`:
/// a remote one, discovered on a ``Peripheral``, or (as its subclass ``MutableCharacteristic``)
/// one this machine serves. Its `uuid` comes from BlueZ's `UUID`.
public class Characteristic: Attribute, @unchecked Sendable {
    /// What it supports (from BlueZ's `Flags`).
    public let properties: CharacteristicProperties
    /// BlueZ's object; "/" for a local characteristic.
    let path: ObjectPath
    /// The queue of this attribute's operations, hashed once.
    let operationKey: OperationKey
    /// `NotifyAcquired` exists: BlueZ offers `AcquireNotify` (5.46+, notify but not indicate-only).
    let offersAcquireNotify: Bool
    /// `WriteAcquired` exists: BlueZ offers `AcquireWrite` (write-without-response only).
    let offersAcquireWrite: Bool
    private let forceStartNotify = Locked(false)

    @BleLoop weak var ownerService: Service?
    @BleLoop var cachedValue: Data?
    @BleLoop var discoveredDescriptors: [Descriptor]?
    /// This link's subscription, nil when notifications are off. It ends with the link.
    @BleLoop var subscription: NotifySubscription?
    /// The app asked for notifications and has not turned them off: a reconnect re-arms them.
    @BleLoop var notifyWanted = false
    /// Enables and disables queued or running: while one is, `isNotifyingOnLoop` may be about
    /// to change (an "on" now can be followed by a queued disable and then an enable).
    @BleLoop package internal(set) var pendingNotifyChanges = 0
    /// We hold a StartNotify session in bluetoothd. It outlives disconnects and bluetoothd
    /// re-arms it on reconnect (bleak #2002), so it is reused while wanted and released
    /// (StopNotify) when not.
    @BleLoop var holdsStartSession = false
    /// The process's shared AcquireNotify socket this characteristic owns or rides.
    @BleLoop var notifyShare: AcquiredNotifyShare?
    /// AcquireNotify's socket closed while the link stayed up (bleak #1885): StartNotify from now.
    @BleLoop var acquireFailed = false
    @BleLoop var writer = WriteChannel()
    /// Reads sent whose `PropertiesChanged(Value)` has not arrived yet: bluetoothd emits it
    /// before the ReadValue reply, and it must not be reported as a notification (bleak #1343).
    @BleLoop var readsAwaitingSignal = 0
    /// `PropertiesChanged(Value)`s that arrived while a read was out, with whether they came
    /// from our own subscription; the read's reply sorts them.
    @BleLoop var signalsDuringRead: [(value: Data, ours: Bool)] = []

    @BleLoop init(path: ObjectPath, uuid: BluetoothUUID, properties: CharacteristicProperties, offersAcquireNotify: Bool,
                  offersAcquireWrite: Bool, service: Service) {
        self.path = path
        operationKey = OperationKey(path)
        self.properties = properties
        self.offersAcquireNotify = offersAcquireNotify
        self.offersAcquireWrite = offersAcquireWrite
        super.init(uuid: uuid)
        self.ownerService = service
    }

    /// A characteristic this machine serves (``MutableCharacteristic``): no BlueZ object.
    init(localType uuid: BluetoothUUID, properties: CharacteristicProperties) {
        path = "/"
        operationKey = OperationKey(path)
        self.properties = properties
        offersAcquireNotify = false
        offersAcquireWrite = false
        super.init(uuid: uuid)
    }

    /// The service it belongs to.
    public var service: Service? { LoopBridge.sync { self.ownerService } }
    /// The latest value read or notified. Inside a `didUpdateValueFor` callback for this
    /// characteristic, on whatever queue, it is that callback's value.
    public var value: Data? {
        if let delivered = DeliveredValue.value(for: self) { return delivered }
        return LoopBridge.sync { self.cachedValue }
    }
    /// True while notifications or indications are enabled on the current link. Link loss
    /// turns it false; a reconnect re-arms what the app asked for, and it turns true again.
    public var isNotifying: Bool { LoopBridge.sync { self.isNotifyingOnLoop } }

    @BleLoop package var isNotifyingOnLoop: Bool { subscription?.isOn ?? false }
    /// The descriptors found by `discoverDescriptors`, nil before.
    public var descriptors: [Descriptor]? { LoopBridge.sync { self.discoveredDescriptors } }

    /// Forces `StartNotify` instead of `AcquireNotify` for this characteristic. Some peripherals
    /// notify before the CCCD write response, which BlueZ's AcquireNotify path turns into fd EOF
    /// and a disconnect (bleak #1885); BleKit also switches by itself on EOF.
    public var prefersStartNotify: Bool {
        get { forceStartNotify.value }
        set { forceStartNotify.value = newValue }
    }
}
