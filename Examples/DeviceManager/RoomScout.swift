import BleCore
import ExampleSupport
import Foundation

// @unchecked: its state is behind `lock`; BleKit calls it on its loop.
/// Learns the device's identifier the way the README's user does, from a scan, and counts
/// what else is in the room (the README's own scan shows only what passed its filter).
final class RoomScout: CentralManagerDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var heard: Set<String> = []
    private var identifier: String?
    private let found = Completion()
    /// After the device turns up, the scan goes on this long to hear the rest of the room.
    private let listen = 1.0

    func centralManagerDidUpdateState(_ central: CentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: nil, options: nil) }
    }

    func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: AdvertisementData, rssi RSSI: Int) {
        lock.lock()
        heard.insert(peripheral.address)
        let ours = identifier == nil && (advertisementData.localName ?? peripheral.name ?? "").hasPrefix("MyDevice")
            && advertisementData.serviceUUIDs.contains(CBUUID(string: "FFE0"))
        if ours { identifier = peripheral.identifier.uuidString }
        lock.unlock()
        if ours { found.signal() }
    }

    /// The device's identifier and how many devices were heard, or nil after `seconds`.
    func find(options: CentralManagerOptions, seconds: Double) async -> (String, Int)? {
        let central = CentralManager(delegate: self, queue: nil, options: options)
        defer { central.close() }
        guard await found.wait(seconds: seconds) else { return nil }
        _ = await Completion().wait(seconds: listen)
        return snapshot()
    }

    private func snapshot() -> (String, Int)? {
        lock.lock()
        defer { lock.unlock() }
        return identifier.map { ($0, heard.count) }
    }
}
