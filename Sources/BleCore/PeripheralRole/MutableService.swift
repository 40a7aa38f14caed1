import Foundation

// @unchecked: a Sendable class cannot inherit from `Service`; its own state is behind `Locked`.
/// A service served by this machine, as CoreBluetooth's `CBMutableService`. Add it with
/// `PeripheralManager.add(_:)` once its characteristics are set.
///
/// It is a ``Service``, as on iOS, so `peripheralManager(_:didAdd:error:)` written with
/// Apple's signature (`didAdd service: CBService`) is the method BleKit calls.
public final class MutableService: Service, @unchecked Sendable {
    private let state = Locked<(characteristics: [Characteristic], included: [Service])>(([], []))

    /// Its characteristics, in the order they are served. Each must be a
    /// ``MutableCharacteristic``: `add(_:)` refuses the service (`didAdd` with
    /// `BleError.invalidLocalAttribute`) otherwise.
    public override var characteristics: [Characteristic]? {
        get { state.value.characteristics }
        set {
            state.value.characteristics = newValue ?? []
            for case let characteristic as MutableCharacteristic in newValue ?? [] { characteristic.setService(self) }
        }
    }

    /// The services it includes (GATT's Include declaration), served as BlueZ's `Includes`.
    /// Each must be a ``MutableService`` added to the same peripheral manager, before or with
    /// this one.
    public override var includedServices: [Service]? {
        get { state.value.included }
        set { state.value.included = newValue ?? [] }
    }

    /// Always nil: the service is this machine's own.
    public override var peripheral: Peripheral? { nil }

    /// The characteristics that are ``MutableCharacteristic``s.
    var mutableCharacteristics: [MutableCharacteristic] {
        state.value.characteristics.compactMap { $0 as? MutableCharacteristic }
    }

    /// A service; CoreBluetooth's spelling.
    public init(type uuid: BluetoothUUID, primary isPrimary: Bool) {
        super.init(localType: uuid, primary: isPrimary)
    }
}
