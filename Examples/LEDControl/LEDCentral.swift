import BleCore
import ExampleSupport
import Foundation

// @unchecked: callbacks arrive on the main queue only, as in the iOS app.
/// The central app: finds the LED by its service, subscribes, switches it on and off, and
/// checks each switch comes back as a notification.
final class LEDCentral: CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    static let steps = ["powered on", "found the LED", "connected", "LED characteristic", "read state", "subscribed",
                        "switched on", "switched off", "disconnected"]
    let log: StepLog
    let finished = Completion()
    private var manager: CBCentralManager?
    private var led: CBPeripheral?
    private var state: CBCharacteristic?
    private var phase = "powered on"
    /// Writes whose response has not come yet: a notification can overtake its write's
    /// response (so the second write can start before the first one's response), and leaving
    /// before the last response makes that write fail with the disconnect.
    private var pendingWrites = 0

    init(prefix: String = "LED central") { log = StepLog(prefix, steps: LEDCentral.steps) }

    func start(options: CentralManagerOptions) {
        manager = CBCentralManager(delegate: self, queue: .main, options: options)
    }

    func stop() {
        phase = "over"
        manager?.close()
    }

    private func fail(_ detail: String) {
        guard phase != "over" else { return }
        log.step(phase, passed: false, detail)
        phase = "over"
        finished.signal()
    }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        guard phase == "powered on" else { return }
        switch central.state {
        case .poweredOn:
            log.step("powered on", passed: true, "adapter \(central.adapterName ?? "?")")
            phase = "found the LED"
            // Filter by the advertised service, then by name (seed 000's advice).
            central.scanForPeripherals(withServices: [LEDProtocol.service], options: nil)
        case .unknown, .resetting: break
        default: fail("state \(central.state): \(central.stateError?.description ?? "")")
        }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: AdvertisementData, rssi RSSI: Int) {
        guard phase == "found the LED", advertisementData.localName == LEDProtocol.name || peripheral.name == LEDProtocol.name else { return }
        central.stopScan()
        log.step("found the LED", passed: true, "\(peripheral.address) at \(RSSI) dBm")
        led = peripheral
        phase = "connected"
        central.connect(peripheral, options: nil)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        log.step("connected", passed: true, peripheral.address)
        peripheral.delegate = self
        phase = "LED characteristic"
        peripheral.discoverServices([LEDProtocol.service])
    }

    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: Error?) {
        fail("could not connect: \(error.map { "\($0)" } ?? "")")
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: Error?) {
        guard phase != "over" else { return }
        if phase == "disconnected" {
            log.step("disconnected", passed: true, "cleanly")
            phase = "over"
            finished.signal()
        } else {
            fail("the link dropped: \(error.map { "\($0)" } ?? "")")
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: Error?) {
        guard let service = peripheral.services?.first(where: { $0.uuid == LEDProtocol.service }) else {
            return fail("no LED service: \(error.map { "\($0)" } ?? "not offered")")
        }
        peripheral.discoverCharacteristics([LEDProtocol.state], for: service)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: Error?) {
        guard let characteristic = service.characteristics?.first(where: { $0.uuid == LEDProtocol.state }) else {
            return fail("no LED state characteristic")
        }
        state = characteristic
        log.step("LED characteristic", passed: true, "\(characteristic.uuid) [read, write, notify]")
        phase = "read state"
        peripheral.readValue(for: characteristic)
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: Error?) {
        if let error { return fail("\(error)") }
        let value = characteristic.value?.first
        switch phase {
        case "read state":
            log.step("read state", passed: value != nil, "the LED is \(LEDProtocol.describe(value))")
            phase = "subscribed"
            peripheral.setNotifyValue(true, for: characteristic)
        case "switched on":
            log.step("switched on", passed: value == 1, "the LED says it is \(LEDProtocol.describe(value))")
            phase = "switched off"
            pendingWrites += 1
            peripheral.writeValue(Data([0x00]), for: characteristic, type: .withResponse)
        case "switched off":
            log.step("switched off", passed: value == 0, "the LED says it is \(LEDProtocol.describe(value))")
            phase = "disconnected"
            if pendingWrites == 0 { manager?.cancelPeripheralConnection(peripheral) }
        default:
            break
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: Error?) {
        guard phase == "subscribed" else { return }
        if let error { return fail("subscribing failed: \(error)") }
        log.step("subscribed", passed: characteristic.isNotifying, "notifications on")
        phase = "switched on"
        pendingWrites += 1
        peripheral.writeValue(Data([0x01]), for: characteristic, type: .withResponse)
    }

    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: Error?) {
        pendingWrites = max(0, pendingWrites - 1)
        if let error { return fail("the write failed: \(error)") }
        if phase == "disconnected", pendingWrites == 0 { manager?.cancelPeripheralConnection(peripheral) }
    }
}
