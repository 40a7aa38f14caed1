import Foundation

// @unchecked: a Sendable class must be final or have only NSObject above it, and CoreBluetooth's
// shape needs subclasses (a `MutableService` is a `Service` is an `Attribute`). The one stored
// property here is a `let` of a Sendable type; subclasses say why their own state is safe.
/// What services, characteristics and descriptors share, local or remote, as CoreBluetooth's
/// `CBAttribute`: their type.
///
/// The classes are related as on iOS, so that delegate methods written with Apple's signatures
/// are the ones BleKit calls: a ``MutableService`` is a ``Service``, a ``MutableCharacteristic``
/// a ``Characteristic``, a ``MutableDescriptor`` a ``Descriptor``, and all are attributes.
public class Attribute: @unchecked Sendable {
    /// The attribute's type.
    public let uuid: BluetoothUUID

    init(uuid: BluetoothUUID) {
        self.uuid = uuid
    }
}
