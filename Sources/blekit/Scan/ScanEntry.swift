import BleAssignedNumbers
import BleCore
import Foundation

/// One device in `blekit scan`'s table: the latest of what it advertised.
struct ScanEntry {
    let address: String
    /// BleKit's `Peripheral.identifier`, which `read`, `write` and the others accept too.
    let identifier: UUID
    var name: String?
    var rssi: Int
    var manufacturers: [UInt16]
    var services: [BluetoothUUID]
    var firstSeen: Date
    var lastSeen: Date

    /// The manufacturer names, joined.
    var manufacturerText: String { manufacturers.map { Names.company($0) }.joined(separator: ", ") }

    /// The advertised services by short name, joined.
    var servicesText: String { services.map { Names.shortService($0) }.joined(separator: ", ") }
}
