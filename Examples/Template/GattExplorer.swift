import BleCore
import Foundation

/// The app: finds a peripheral by name, connects, prints its GATT tree, disconnects.
///
/// A `@MainActor` class, as a Swift 6 iOS view model is: its conformance to the delegate
/// protocols is isolated to the main actor (no unsafe annotations), and the manager delivers
/// on `queue: .main`, which `BleProgram.run` serves.
@MainActor
final class GattExplorer {
    private let wanted: String
    private let finish: @Sendable (Int32) -> Void
    private var central: CentralManager?
    private var target: Peripheral?
    private var pendingServices = 0

    init(name: String, finish: @escaping @Sendable (Int32) -> Void) {
        wanted = name
        self.finish = finish
    }

    /// Starts the manager; everything else happens in its callbacks.
    func start() {
        central = CentralManager(delegate: self, queue: .main)
    }

    private func fail(_ text: String) {
        print("FAILED: \(text)")
        finish(1)
    }
}

extension GattExplorer: @MainActor CentralManagerDelegate {
    func centralManagerDidUpdateState(_ central: CentralManager) {
        switch central.state {
        case .poweredOn:
            print("scanning for \(wanted)")
            central.scanForPeripherals(withServices: nil, options: nil)
        case .unknown, .resetting:
            break
        default:
            // The manager knows why (no bus, no bluetoothd, no permission, no adapter).
            fail("Bluetooth is \(central.state): \(central.stateError.map { "\($0)" } ?? "no adapter")")
        }
    }

    func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard target == nil, advertisementData[CBAdvertisementDataLocalNameKey] as? String == wanted else { return }
        // The main actor's executor is the main queue (on Linux, `dispatchMain` serves it from a
        // libdispatch thread, so `Thread.isMainThread` may be false: isolation is what counts).
        dispatchPrecondition(condition: .onQueue(.main))
        print("found \(wanted), RSSI \(RSSI) dBm, on the main actor")
        target = peripheral
        central.stopScan()
        peripheral.delegate = self
        central.connect(peripheral)
    }

    func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) {
        print("connected: \(peripheral)")
        peripheral.discoverServices(nil)
    }

    func centralManager(_ central: CentralManager, didFailToConnect peripheral: Peripheral, error: Error?) {
        fail("connecting failed: \(error?.localizedDescription ?? "unknown error")")
    }

    func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, error: Error?) {
        if let error { return fail("link lost: \(error.localizedDescription)") }
        print("disconnected")
        finish(0)
    }
}

extension GattExplorer: @MainActor PeripheralDelegate {
    func peripheral(_ peripheral: Peripheral, didDiscoverServices error: Error?) {
        if let error { return fail("discovering services failed: \(error.localizedDescription)") }
        let services = peripheral.services ?? []
        pendingServices = services.count
        if services.isEmpty {
            central?.cancelPeripheralConnection(peripheral)
            return
        }
        for service in services { peripheral.discoverCharacteristics(nil, for: service) }
    }

    func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: Service, error: Error?) {
        if let error { return fail("discovering characteristics failed: \(error.localizedDescription)") }
        print(service)
        for characteristic in service.characteristics ?? [] { print("  \(characteristic.uuid) \(characteristic.properties)") }
        pendingServices -= 1
        if pendingServices == 0 { central?.cancelPeripheralConnection(peripheral) }
    }
}
