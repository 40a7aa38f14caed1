import Foundation

/// A characteristic served by this machine, as CoreBluetooth's `CBMutableCharacteristic`.
///
/// With a `value`, it is static: bluetoothd's reads are answered from it without a delegate
/// call (and it cannot be written, as in CoreBluetooth). Without one, reads and writes reach
/// `PeripheralManagerDelegate` as requests. The properties say what centrals may do, the
/// permissions what link they need; both become BlueZ flags (`encrypt-read`, …).
public final class MutableCharacteristic: Sendable {
    /// The characteristic's type.
    public let uuid: BluetoothUUID
    /// What centrals may do (read, write, notify, …).
    public let properties: CharacteristicProperties
    /// What link each access needs.
    public let permissions: AttributePermissions
    private let state: Locked<State>

    private struct State {
        var value: Data?
        var descriptors: [MutableDescriptor]
        var subscribedCentrals: [Central] = []
        weak var service: MutableService?
    }

    /// The static value, or nil for a dynamic characteristic.
    public var value: Data? {
        get { state.value.value }
        set { state.value.value = newValue }
    }
    /// Its descriptors (set before the service is added).
    public var descriptors: [MutableDescriptor]? {
        get { state.value.descriptors }
        set { state.value.descriptors = newValue ?? [] }
    }
    /// The centrals subscribed to it, as far as BlueZ tells (see `PeripheralManager`).
    public var subscribedCentrals: [Central]? { state.value.subscribedCentrals }
    /// The service it belongs to, once added to one.
    public var service: MutableService? { state.value.service }

    /// A characteristic; CoreBluetooth's argument order.
    public init(type uuid: BluetoothUUID, properties: CharacteristicProperties, value: Data?,
                permissions: AttributePermissions) {
        self.uuid = uuid
        self.properties = properties
        self.permissions = permissions
        state = Locked(State(value: value, descriptors: []))
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
        if state.value.descriptors.contains(where: { $0.uuid == BluetoothUUID(UInt16(0x2901)) && $0.permissions.allowsWrite }) {
            flags.append(BlueZ.GattFlag.writableAuxiliaries)
        }
        if permissions.contains(.authorizationRequired) { flags.append(BlueZ.GattFlag.authorize) }
        return flags
    }
}
