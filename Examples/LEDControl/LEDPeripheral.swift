import BleCore
import ExampleSupport
import Foundation

// @unchecked: callbacks arrive on the main queue only, as in the iOS app.
/// The peripheral app: serves the LED, switches it on writes, notifies subscribers.
final class LEDPeripheral: CBPeripheralManagerDelegate, @unchecked Sendable {
    let log: StepLog
    let finished = Completion()
    private var manager: CBPeripheralManager?
    private let characteristic = CBMutableCharacteristic(type: LEDProtocol.state, properties: [.read, .write, .notify],
                                                         value: nil, permissions: [.readable, .writeable])
    private var led: UInt8 = 0
    private var switches: [UInt8] = []
    private let once: Bool

    static let steps = ["powered on", "service added", "advertising", "central connected", "LED switched on", "LED switched off", "central left"]

    init(prefix: String = "LED peripheral", once: Bool) {
        log = StepLog(prefix, steps: once ? LEDPeripheral.steps : Array(LEDPeripheral.steps.prefix(3)))
        self.once = once
    }

    func start(options: PeripheralManagerOptions) {
        manager = CBPeripheralManager(delegate: self, queue: .main, options: options)
    }

    func stop() {
        manager?.stopAdvertising()
        manager?.close()
    }

    func peripheralManagerDidUpdateState(_ peripheral: CBPeripheralManager) {
        guard peripheral.state == .poweredOn else {
            if peripheral.state != .unknown { log.step("powered on", passed: false, "state \(peripheral.state): \(peripheral.stateError?.description ?? "")") ; finished.signal() }
            return
        }
        log.step("powered on", passed: true, "adapter \(peripheral.adapterName ?? "?")")
        let service = CBMutableService(type: LEDProtocol.service, primary: true)
        service.characteristics = [characteristic]
        peripheral.add(service)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didAdd service: CBService, error: Error?) {
        log.step("service added", passed: error == nil, error.map { "\($0)" } ?? "LED service \(service.uuid)")
        guard error == nil else { return finished.signal() }
        peripheral.startAdvertising([CBAdvertisementDataLocalNameKey: LEDProtocol.name, CBAdvertisementDataServiceUUIDsKey: [LEDProtocol.service]])
    }

    func peripheralManagerDidStartAdvertising(_ peripheral: CBPeripheralManager, error: Error?) {
        log.step("advertising", passed: error == nil, error.map { "\($0)" } ?? "as \(LEDProtocol.name)")
        if error != nil || !once { finished.signal() }
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, centralDidConnect central: CBCentral) {
        log.step("central connected", passed: true, central.address)
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, centralDidDisconnect central: CBCentral) {
        guard switches.count >= 2 else { return }
        log.step("central left", passed: true, "\(central.address) disconnected after \(switches.count) switch(es)")
        finished.signal()
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveRead request: CBATTRequest) {
        request.value = Data([led])
        peripheral.respond(to: request, withResult: .success)
        log.note("read by \(request.central.address): LED is \(LEDProtocol.describe(led))")
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, didReceiveWrite requests: [CBATTRequest]) {
        for request in requests {
            guard let value = request.value, value.count == 1, value[0] <= 1 else {
                peripheral.respond(to: request, withResult: .invalidAttributeValueLength)
                log.note("refused a write of \(request.value?.count ?? 0) byte(s): the LED takes 00 or 01")
                continue
            }
            led = value[0]
            switches.append(led)
            peripheral.respond(to: request, withResult: .success)
            log.step(led == 1 ? "LED switched on" : "LED switched off", passed: true, "by \(request.central.address); 💡 \(LEDProtocol.describe(led))")
            _ = peripheral.updateValue(Data([led]), for: characteristic, onSubscribedCentrals: nil)
        }
    }

    func peripheralManager(_ peripheral: CBPeripheralManager, central: CBCentral, didSubscribeTo characteristic: CBCharacteristic) {
        log.note("\(central.address) subscribed to the LED state")
    }
}
