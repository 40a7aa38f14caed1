import BleCore
import Foundation

/// A peripheral heard while scanning, with what it advertised.
public struct AsyncDiscoveredPeripheral: Sendable {
    /// The peripheral (pass it to `connect`).
    public let peripheral: CBPeripheral
    /// What it advertised, typed.
    public let advertisement: AdvertisementData
    /// The signal strength in dBm.
    public let rssiValue: Int

    /// A discovery.
    public init(peripheral: CBPeripheral, advertisement: AdvertisementData, rssi: Int) {
        self.peripheral = peripheral
        self.advertisement = advertisement
        self.rssiValue = rssi
    }

    /// CoreBluetooth's dictionary form (`CBAdvertisementData…Key`), as FXBlueToothAsync gave it.
    public var advertisementData: [String: Any] { advertisement.dictionary }
    /// The signal strength as CoreBluetooth's `NSNumber`.
    public var rssi: NSNumber { NSNumber(value: rssiValue) }
}
