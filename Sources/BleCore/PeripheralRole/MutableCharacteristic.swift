import Foundation

// @unchecked: a Sendable class cannot inherit from `Characteristic`; its own state is behind `Locked`.
/// A characteristic served by this machine, as CoreBluetooth's `CBMutableCharacteristic`.
///
/// With a `value`, it is static: bluetoothd's reads are answered from it without a delegate
/// call (and it cannot be written, as in CoreBluetooth). Without one, reads and writes reach
/// `PeripheralManagerDelegate` as requests. The properties say what centrals may do, the
/// permissions what link they need; both become BlueZ flags (`encrypt-read`, …).
///
/// It is a ``Characteristic``, as on iOS, so the subscription callbacks written with Apple's
/// signatures (`didSubscribeTo characteristic: CBCharacteristic`) are the ones BleKit calls.
public final class MutableCharacteristic: Characteristic, @unchecked Sendable {
    /// What link each access needs.
    public let permissions: AttributePermissions
    private let state: Locked<State>

    private struct State {
        var value: Data?
        var descriptors: [Descriptor]
        var subscribedCentrals: [Central] = []
        weak var service: MutableService?
    }

    /// The static value, or nil for a dynamic characteristic.
    public override var value: Data? {
        get { state.value.value }
        set { state.value.value = newValue }
    }
    /// Its descriptors (set before the service is added). Each must be a
    /// ``MutableDescriptor``: `add(_:)` refuses the service otherwise.
    public override var descriptors: [Descriptor]? {
        get { state.value.descriptors }
        set { state.value.descriptors = newValue ?? [] }
    }
    /// The centrals subscribed to it, as far as BlueZ tells (see `PeripheralManager`).
    public var subscribedCentrals: [Central]? { state.value.subscribedCentrals }
    /// The service it belongs to, once it is in one's `characteristics`.
    public override var service: Service? { state.value.service }

    /// The descriptors that are ``MutableDescriptor``s.
    var mutableDescriptors: [MutableDescriptor] { state.value.descriptors.compactMap { $0 as? MutableDescriptor } }

    /// A characteristic; CoreBluetooth's argument order.
    public init(type uuid: BluetoothUUID, properties: CharacteristicProperties, value: Data?,
                permissions: AttributePermissions) {
        self.permissions = permissions
        state = Locked(State(value: value, descriptors: []))
        super.init(localType: uuid, properties: properties)
    }

    func setService(_ service: MutableService?) { state.value.service = service }
    func setSubscribers(_ centrals: [Central]) { state.value.subscribedCentrals = centrals }

    /// True for a characteristic whose reads are answered from `value`.
    var isStatic: Bool { value != nil }

    /// The BlueZ `Flags`: the properties, with read and write raised to the level the
    /// permissions ask for (bluetoothd then checks the link before it calls BleKit).
    var bluezFlags: [String] {
        var flags: [String] = []
        if properties.contains(.broadcast) { flags.append(BlueZ.GattFlag.broadcast) }
        if properties.contains(.read) { flags.append(permissions.readFlag() ?? BlueZ.GattFlag.read) }
        if properties.contains(.writeWithoutResponse) { flags.append(BlueZ.GattFlag.writeWithoutResponse) }
        if properties.contains(.write) { flags.append(permissions.writeFlag() ?? BlueZ.GattFlag.write) }
        if properties.contains(.notify) {
            flags.append(properties.contains(.notifyEncryptionRequired) ? BlueZ.GattFlag.encryptNotify : BlueZ.GattFlag.notify)
        }
        if properties.contains(.indicate) {
            flags.append(properties.contains(.indicateEncryptionRequired) ? BlueZ.GattFlag.encryptIndicate : BlueZ.GattFlag.indicate)
        }
        if properties.contains(.authenticatedSignedWrites) { flags.append(BlueZ.GattFlag.authenticatedSignedWrites) }
        if properties.contains(.reliableWrite) { flags.append(BlueZ.GattFlag.reliableWrite) }
        if mutableDescriptors.contains(where: { $0.uuid == BluetoothUUID(UInt16(0x2901)) && $0.permissions.allowsWrite }) {
            flags.append(BlueZ.GattFlag.writableAuxiliaries)
        }
        if permissions.contains(.authorizationRequired) { flags.append(BlueZ.GattFlag.authorize) }
        return flags
    }
}
