import BleRuntime
import Foundation
import Synchronization

/// A discovered peripheral with its latest advertisement and RSSI (present from the first
/// sighting, unlike FXBlueTooth). A reference type: the list handed to `DiscoverPeripheral` is
/// updated in place as advertisements arrive.
public final class PeripheralInfo: Equatable, Sendable {
    /// The peripheral to connect to or inspect.
    public let peripheral: Peripheral
    private let state: LoopLock<(AdvertisementData, NSNumber?)>

    /// An info; filters may build modified copies.
    public init(peripheral: Peripheral, advertisement: AdvertisementData, rssi: NSNumber?) {
        self.peripheral = peripheral
        state = LoopLock((advertisement, rssi))
    }

    /// The advertisement in CoreBluetooth's dictionary form (`CBAdvertisementData…Key`).
    public var advertisementData: [String: Any] { state.withLock { $0.0.dictionary } }
    /// The advertisement, typed.
    public var advertisement: AdvertisementData { state.withLock { $0.0 } }
    /// The RSSI of the latest advertisement, in dBm.
    public var rssi: NSNumber? { state.withLock { $0.1 } }

    func update(advertisement: AdvertisementData, rssi: NSNumber?) {
        state.withLock { $0 = (advertisement, rssi) }
    }

    /// Same peripheral.
    public static func == (lhs: PeripheralInfo, rhs: PeripheralInfo) -> Bool {
        lhs.peripheral.identifier == rhs.peripheral.identifier
    }
}
