// The central walk-through of seed 004 (an Objective-C CoreBluetooth tutorial) in Swift on
// BleKit: the same delegate methods in the same order — scan, connect, services,
// characteristics, descriptors, read, write, notify, disconnect — each step printed.
import BleCore
import ExampleSupport
import Foundation

// @unchecked: every callback arrives on the main queue (the `queue:` given to the manager),
// as in the iOS original, so its state is only touched there.
final class CentralWalkthrough: CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    static let steps = ["powered on", "scan", "connect", "services", "characteristics", "descriptors", "read", "write", "notify", "disconnect"]

    let log = StepLog("CentralWalkthrough", steps: CentralWalkthrough.steps)
    let finished = Completion()
    private let namePrefix: String
    private var manager: CBCentralManager?
    private var peripheral: CBPeripheral?
    private var pendingServices = 0
    private var pendingDescriptors = 0
    private var target: CBCharacteristic?
    private var phase = "powered on"

    init(namePrefix: String) {
        self.namePrefix = namePrefix
    }

    func start(options: CentralManagerOptions) {
        // 1. The central manager; nothing may be done before its state is poweredOn.
        manager = CBCentralManager(delegate: self, queue: .main, options: options)
    }

    /// Releases the manager once the walk-through is over (later state changes are not steps).
    func stop() {
        phase = "over"
        manager?.close()
    }

    private func fail(_ detail: String) {
        guard phase != "over" else { return }
        log.step(phase, passed: false, detail)
        if let peripheral { manager?.cancelPeripheralConnection(peripheral) }
        finished.signal()
    }

    // MARK: CBCentralManagerDelegate

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        guard phase != "over" else { return }
        switch central.state {
        case .poweredOn:
            guard phase == "powered on" else { return }
            log.step("powered on", passed: true, "adapter \(central.adapterName ?? "?") is on")
            // 2. Scan for every peripheral (nil services, as the original).
            phase = "scan"
            central.scanForPeripherals(withServices: nil, options: nil)
        case .unknown, .resetting:
            log.note("state \(central.state), waiting")
        default:
            fail("state \(central.state): \(central.stateError?.description ?? "Bluetooth is not usable")")
        }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: AdvertisementData, rssi RSSI: Int) {
        let name = advertisementData.localName ?? peripheral.name ?? ""
        guard phase == "scan", name.hasPrefix(namePrefix) else { return }
        log.step("scan", passed: true, "found \(name) \(peripheral.address) at \(RSSI) dBm")
        central.stopScan()
        // 3. Keep a strong reference, then connect.
        self.peripheral = peripheral
        phase = "connect"
        central.connect(peripheral, options: nil)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        log.step("connect", passed: true, "connected to \(peripheral.name ?? peripheral.address)")
        peripheral.delegate = self
        // 4. Discover every service.
        phase = "services"
        peripheral.discoverServices(nil)
    }

    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: Error?) {
        fail("could not connect: \(error.map { "\($0)" } ?? "no reason given")")
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        guard phase != "over" else { return }
        if phase == "disconnect" {
            log.step("disconnect", passed: error == nil, error.map { "\($0)" } ?? "disconnected cleanly")
        } else {
            log.step(phase, passed: false, "the link dropped: \(error.map { "\($0)" } ?? "no reason")")
        }
        finished.signal()
    }

    // MARK: CBPeripheralDelegate

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        if let error { return fail("service discovery failed: \(error)") }
        let services = peripheral.services ?? []
        log.step("services", passed: !services.isEmpty, services.map { "\($0.uuid)" }.joined(separator: ", "))
        // 5. Characteristics of each service.
        phase = "characteristics"
        pendingServices = services.count
        for service in services { peripheral.discoverCharacteristics(nil, for: service) }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        if let error { return fail("characteristic discovery failed: \(error)") }
        for characteristic in service.characteristics ?? [] {
            log.note("  service \(service.uuid): characteristic \(characteristic.uuid) properties 0x\(String(characteristic.properties.rawValue, radix: 16))")
            if target == nil && characteristic.properties.contains(.read) && characteristic.properties.contains(.write) && characteristic.properties.contains(.notify) {
                target = characteristic
            }
        }
        pendingServices -= 1
        guard pendingServices == 0 else { return }
        let all = (peripheral.services ?? []).flatMap { $0.characteristics ?? [] }
        log.step("characteristics", passed: target != nil, "\(all.count) characteristic(s); the read/write/notify one is \(target.map { "\($0.uuid)" } ?? "missing")")
        guard target != nil else { return fail("no characteristic with read, write and notify") }
        // 6. Descriptors of each characteristic.
        phase = "descriptors"
        pendingDescriptors = all.count
        for characteristic in all { peripheral.discoverDescriptors(for: characteristic) }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverDescriptorsFor characteristic: CBCharacteristic, error: Error?) {
        if let error { return fail("descriptor discovery failed: \(error)") }
        for descriptor in characteristic.descriptors ?? [] {
            log.note("  characteristic \(characteristic.uuid): descriptor \(descriptor.uuid)")
        }
        pendingDescriptors -= 1
        guard pendingDescriptors == 0, let target else { return }
        log.step("descriptors", passed: target.descriptors?.isEmpty == false, "\(target.uuid) has \(target.descriptors?.count ?? 0) descriptor(s)")
        // 7. Read the value.
        phase = "read"
        peripheral.readValue(for: target)
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        if let error { return fail("\(phase) failed: \(error)") }
        let value = characteristic.value ?? Data()
        let hex = value.map { String(format: "%02x", $0) }.joined()
        switch phase {
        case "read":
            log.step("read", passed: true, "\(characteristic.uuid) = \(hex)")
            // 8. Write with response.
            phase = "write"
            peripheral.writeValue(Data("hello".utf8), for: characteristic, type: .withResponse)
        case "notify":
            log.step("notify", passed: value == Data("ping".utf8), "notification \(hex) (\"\(String(decoding: value, as: UTF8.self))\")")
            peripheral.setNotifyValue(false, for: characteristic)
            // 10. Disconnect.
            phase = "disconnect"
            manager?.cancelPeripheralConnection(peripheral)
        default:
            break
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: Error?) {
        if let error { return fail("write failed: \(error)") }
        guard phase == "write" else { return }
        log.step("write", passed: true, "wrote \"hello\" to \(characteristic.uuid), acknowledged")
        // 9. Subscribe, then make the device notify.
        phase = "notify"
        peripheral.setNotifyValue(true, for: characteristic)
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: Error?) {
        if let error { return fail("subscribing failed: \(error)") }
        guard phase == "notify", characteristic.isNotifying else { return }
        log.note("  subscribed to \(characteristic.uuid); asking the device to notify")
        peripheral.writeValue(Data("ping".utf8), for: characteristic, type: .withResponse)
    }
}
