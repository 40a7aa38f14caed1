import BleDBus
import BlueZVocabulary

/// A central's discovery filter, as BlueZ's `SetDiscoveryFilter` takes it.
///
/// bluetoothd keeps one filter per D-Bus sender, and every manager of a process is one sender:
/// the filters of several scans are merged into one that lets through everything any of them
/// wants (`merged`). Each central still checks its own services, RSSI and pattern on what comes.
struct DiscoveryFilter: Equatable {
    var transport: String
    var duplicateData: Bool
    /// 128-bit UUID strings; nil for any.
    var uuids: [String]?
    var rssi: Int16?
    var pattern: String?

    /// The filter as a `SetDiscoveryFilter` argument (keys in this order, as BleKit always sent them).
    var dbusValue: DBusValue {
        var pairs: [(String, DBusValue)] = [
            (BlueZ.Adapter1.DiscoveryFilterKey.transport, .string(transport)),
            // 5.66's code default is false despite the docs (bluez doc fix 5f901b537): say it.
            (BlueZ.Adapter1.DiscoveryFilterKey.duplicateData, .boolean(duplicateData)),
        ]
        if let uuids { pairs.append((BlueZ.Adapter1.DiscoveryFilterKey.uuids, .array(element: .string, uuids.map { .string($0) }))) }
        if let rssi { pairs.append((BlueZ.Adapter1.DiscoveryFilterKey.rssi, .int16(rssi))) }
        if let pattern { pairs.append((BlueZ.Adapter1.DiscoveryFilterKey.pattern, .string(pattern))) }
        return BlueZShapes.propertyDictionary(pairs)
    }

    /// The narrowest filter that passes everything each of `filters` passes; nil for none.
    static func merged(_ filters: [DiscoveryFilter]) -> DiscoveryFilter? {
        guard var result = filters.first else { return nil }
        for filter in filters.dropFirst() {
            if filter.transport != result.transport { result.transport = BlueZ.Adapter1.Transport.auto }
            result.duplicateData = result.duplicateData || filter.duplicateData
            if let wanted = filter.uuids, let current = result.uuids {
                result.uuids = current + wanted.filter { !current.contains($0) }
            } else {
                result.uuids = nil
            }
            if let rssi = filter.rssi, let current = result.rssi { result.rssi = min(rssi, current) } else { result.rssi = nil }
            if filter.pattern != result.pattern { result.pattern = nil }
        }
        return result
    }
}
