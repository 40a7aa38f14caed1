import Foundation

/// A service served by this machine, as CoreBluetooth's `CBMutableService`. Add it with
/// `PeripheralManager.add(_:)` once its characteristics are set.
public final class MutableService: Sendable {
    /// The service's type.
    public let uuid: BluetoothUUID
    /// A primary service (the usual) or a secondary one.
    public let isPrimary: Bool
    private let state = Locked<[MutableCharacteristic]>([])

    /// Its characteristics, in the order they are served.
    public var characteristics: [MutableCharacteristic]? {
        get { state.value }
        set {
            state.value = newValue ?? []
            for characteristic in newValue ?? [] { characteristic.setService(self) }
        }
    }

    /// A service; CoreBluetooth's spelling.
    public init(type uuid: BluetoothUUID, primary isPrimary: Bool) {
        self.uuid = uuid
        self.isPrimary = isPrimary
    }
}
