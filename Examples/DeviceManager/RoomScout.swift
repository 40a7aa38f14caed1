import BleCore
import ExampleSupport
import Foundation

// @unchecked: its state is behind `lock`; BleKit calls it on its loop.
/// Learns the device's identifier the way the README's user does, from a scan, and counts
/// what else is in the room (the README's own scan shows only what passed its filter).
final class RoomScout: CentralManagerDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var heard: Set<String> = []
    private var lastNewDevice = ContinuousClock.now
    private var identifier: String?
    private let found = Completion()
    /// After the device turns up, the scan goes on until no new device was heard for this long
    /// (a fixed window heard half a crowd of 152 on a slow machine, all of it on a fast one).
    private let quiet: Duration = .seconds(1)

    func centralManagerDidUpdateState(_ central: CentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: nil, options: nil) }
    }

    func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: AdvertisementData, rssi RSSI: Int) {
        lock.lock()
        if heard.insert(peripheral.address).inserted { lastNewDevice = .now }
        let ours = identifier == nil && (advertisementData.localName ?? peripheral.name ?? "").hasPrefix("MyDevice")
            && advertisementData.serviceUUIDs.contains(CBUUID(string: "FFE0"))
        if ours { identifier = peripheral.identifier.uuidString }
        lock.unlock()
        if ours { found.signal() }
    }

    /// The device's identifier and how many devices were heard, or nil after `seconds`. Once
    /// the device is found the room is heard until it goes quiet, within `seconds` in all.
    func find(options: CentralManagerOptions, seconds: Double) async -> (String, Int)? {
        let started = ContinuousClock.now
        let central = CentralManager(delegate: self, queue: nil, options: options)
        defer { central.close() }
        guard await found.wait(seconds: seconds) else { return nil }
        let end = started + .milliseconds(Int(seconds * 1000))
        // Each wait lasts until the quiet time after the newest device would be over.
        while true {
            let now = ContinuousClock.now
            let wait = min(lastHeard() + quiet, end) - now
            guard wait > .zero else { break }
            let parts = wait.components
            _ = await Completion().wait(seconds: Double(parts.seconds) + Double(parts.attoseconds) / 1e18)
        }
        return snapshot()
    }

    private func lastHeard() -> ContinuousClock.Instant {
        lock.lock()
        defer { lock.unlock() }
        return lastNewDevice
    }

    private func snapshot() -> (String, Int)? {
        lock.lock()
        defer { lock.unlock() }
        return identifier.map { ($0, heard.count) }
    }
}
