import BleDBus
import BlueZVocabulary

/// One client's `SetDiscoveryFilter`, validated as bluetoothd does: any problem is
/// `InvalidArguments "Invalid arguments in method call"`.
struct DiscoveryFilter: Equatable {
    var uuids: [String] = []
    var rssi: Int16?
    var pathloss: UInt16?
    var transport = "auto"
    var duplicateData = false
    var discoverable = false
    var pattern: String?

    /// The keys `GetDiscoveryFilters` lists, in bluetoothd's order.
    static let supportedKeys = BlueZ.Adapter1.DiscoveryFilterKey.all

    /// Parses the `a{sv}`; nil when invalid.
    init?(_ value: DBusValue) {
        guard let map = try? BlueZShapes.propertyMap(value) else { return nil }
        for (key, raw) in map {
            switch key {
            case BlueZ.Adapter1.DiscoveryFilterKey.uuids:
                guard let list = raw.as([String].self) else { return nil }
                var uuids: [String] = []
                for item in list {
                    guard let full = SimUUID.full(item) else { return nil }
                    uuids.append(full)
                }
                self.uuids = uuids
            case BlueZ.Adapter1.DiscoveryFilterKey.rssi:
                guard let number = raw.as(Int16.self) else { return nil }
                rssi = number
            case BlueZ.Adapter1.DiscoveryFilterKey.pathloss:
                guard let number = raw.as(UInt16.self) else { return nil }
                pathloss = number
            case BlueZ.Adapter1.DiscoveryFilterKey.transport:
                guard let text = raw.as(String.self), ["auto", "bredr", "le"].contains(text) else { return nil }
                transport = text
            case BlueZ.Adapter1.DiscoveryFilterKey.duplicateData:
                guard let flag = raw.as(Bool.self) else { return nil }
                duplicateData = flag
            case BlueZ.Adapter1.DiscoveryFilterKey.discoverable:
                guard let flag = raw.as(Bool.self) else { return nil }
                discoverable = flag
            case BlueZ.Adapter1.DiscoveryFilterKey.pattern:
                guard let text = raw.as(String.self) else { return nil }
                pattern = text
            default:
                return nil
            }
        }
        // bluetoothd refuses RSSI and Pathloss together.
        if rssi != nil && pathloss != nil { return nil }
    }

    init() {}

    /// True when this filter lets `report` create or update a device.
    func admits(_ report: AdvertisingReport) -> Bool {
        if transport == "bredr" { return false }
        if !uuids.isEmpty && !report.serviceUUIDs.contains(where: uuids.contains) && !report.serviceData.keys.contains(where: uuids.contains) {
            return false
        }
        if let rssi, report.rssi < rssi { return false }
        if let pathloss {
            guard let txPower = report.txPower, Int(txPower) - Int(report.rssi) <= Int(pathloss) else { return false }
        }
        if let pattern, !pattern.isEmpty {
            let matchesAddress = report.address.hasPrefix(pattern.uppercased())
            let matchesName = report.name?.hasPrefix(pattern) ?? false
            if !matchesAddress && !matchesName { return false }
        }
        return true
    }
}
