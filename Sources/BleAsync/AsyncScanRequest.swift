import BleCore
import Foundation

/// What to scan for (FXBlueToothAsync's request, whose `matcher` is honoured here: defect 29).
public struct AsyncScanRequest: Sendable {
    /// Only peripherals advertising one of these services (nil or empty: all).
    public var serviceUUIDs: [CBUUID]?
    /// Duplicates, RSSI threshold, name pattern, transport.
    public var scanOptions: ScanOptions
    /// Only discoveries it accepts are reported (runs on BleKit's loop, so it must be Sendable).
    public var matcher: (@Sendable (AsyncDiscoveredPeripheral) -> Bool)?
    /// The deadline of the connect that `.connect` starts inside `scan` (seconds; nil: none).
    public var connectTimeout: TimeInterval?

    /// A request with BleKit's options.
    public init(serviceUUIDs: [CBUUID]? = nil, scanOptions: ScanOptions = ScanOptions(),
                matcher: (@Sendable (AsyncDiscoveredPeripheral) -> Bool)? = nil, connectTimeout: TimeInterval? = 15) {
        self.serviceUUIDs = serviceUUIDs
        self.scanOptions = scanOptions
        self.matcher = matcher
        self.connectTimeout = connectTimeout
    }

    /// FXBlueToothAsync's spelling, with CoreBluetooth's options dictionary
    /// (`CBCentralManagerScanOptionAllowDuplicatesKey`).
    public init(serviceUUIDs: [CBUUID]? = nil, options: [String: Any]?,
                matcher: (@Sendable (AsyncDiscoveredPeripheral) -> Bool)? = nil) {
        self.init(serviceUUIDs: serviceUUIDs, scanOptions: ScanOptions(dictionary: options), matcher: matcher)
    }

    /// True when `discovered` is one this request asks for.
    func accepts(_ discovered: AsyncDiscoveredPeripheral) -> Bool {
        if let services = serviceUUIDs, !services.isEmpty {
            let offered = Set(discovered.advertisement.serviceUUIDs).union(discovered.advertisement.serviceData.keys)
            guard services.contains(where: offered.contains) else { return false }
        }
        if let threshold = scanOptions.rssiThreshold, discovered.rssiValue < threshold { return false }
        if let pattern = scanOptions.pattern {
            let name = discovered.advertisement.localName ?? ""
            guard discovered.peripheral.address.uppercased().hasPrefix(pattern.uppercased()) || name.hasPrefix(pattern) else { return false }
        }
        return matcher?(discovered) ?? true
    }
}
