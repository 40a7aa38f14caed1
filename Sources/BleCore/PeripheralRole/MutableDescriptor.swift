import Foundation

// @unchecked: a Sendable class cannot inherit from `Descriptor`; its own state is behind `Locked`.
/// A descriptor of a local characteristic, as CoreBluetooth's `CBMutableDescriptor`.
///
/// Its value is static: bluetoothd reads it from BleKit without a delegate call. Do not add a
/// Client Characteristic Configuration (2902) or Extended Properties (2900) descriptor:
/// bluetoothd adds those itself from the characteristic's properties.
///
/// It is a ``Descriptor``, as on iOS, so it goes into a characteristic's `descriptors`.
public final class MutableDescriptor: Descriptor, @unchecked Sendable {
    private let state: Locked<(value: Data, permissions: AttributePermissions)>

    /// The value served to centrals (never nil for a local descriptor).
    public override var value: Data? { state.value.value }

    /// The value served, which a central's write to a writable descriptor replaces.
    var servedValue: Data {
        get { state.value.value }
        set { state.value.value = newValue }
    }
    /// Read-only by default; `.writeable` lets centrals change it (a writable User
    /// Description becomes BlueZ's `writable-auxiliaries`).
    public var permissions: AttributePermissions {
        get { state.value.permissions }
        set { state.value.permissions = newValue }
    }

    /// A descriptor with raw bytes.
    public init(type uuid: BluetoothUUID, value: Data, permissions: AttributePermissions = .readable) {
        state = Locked((value, permissions))
        super.init(localType: uuid)
    }

    /// CoreBluetooth's spelling: a `String` value becomes UTF-8 (for User Description), `Data`
    /// stays bytes, anything else is empty.
    public convenience init(type uuid: BluetoothUUID, value: Any?) {
        let bytes: Data
        switch value {
        case let text as String: bytes = Data(text.utf8)
        case let data as Data: bytes = data
        default: bytes = Data()
        }
        self.init(type: uuid, value: bytes)
    }

    /// A Characteristic User Description (2901): a human-readable name.
    public static func userDescription(_ text: String, writable: Bool = false) -> MutableDescriptor {
        MutableDescriptor(type: BluetoothUUID(UInt16(0x2901)), value: Data(text.utf8),
                          permissions: writable ? [.readable, .writeable] : .readable)
    }

    /// A Characteristic Presentation Format (2904): the value's format, exponent, unit,
    /// namespace and description, little-endian as the specification lays them out.
    public static func presentationFormat(format: UInt8, exponent: Int8 = 0, unit: UInt16, namespace: UInt8 = 1,
                                          description: UInt16 = 0) -> MutableDescriptor {
        let bytes: [UInt8] = [format, UInt8(bitPattern: exponent), UInt8(unit & 0xff), UInt8(unit >> 8), namespace,
                              UInt8(description & 0xff), UInt8(description >> 8)]
        return MutableDescriptor(type: BluetoothUUID(UInt16(0x2904)), value: Data(bytes))
    }

    /// Readable as its flags say: with a read permission, or with none at all (then served
    /// read-only, as CoreBluetooth's descriptors are).
    var canRead: Bool { permissions.allowsRead || !permissions.allowsWrite }

    /// The BlueZ flags of this descriptor.
    var bluezFlags: [String] {
        var flags: [String] = []
        if let read = permissions.readFlag() { flags.append(read) }
        if let write = permissions.writeFlag() { flags.append(write) }
        return flags.isEmpty ? [BlueZ.GattFlag.read] : flags
    }
}
