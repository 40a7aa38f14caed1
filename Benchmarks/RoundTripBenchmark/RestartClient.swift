import BleCore
import Dispatch
import Foundation

/// The restart-recovery client: connected to the round-trip peripheral and subscribed to ff02
/// (StartNotify), scanning on, it prints `ready` and waits for bluetoothd (BleSim) to be killed
/// and started again. Its reconnect policy is the app's own, written with the public API: on
/// `poweredOn` again, scan (unless BleKit already does), connect to the peripheral when it is
/// discovered, re-discover, subscribe, and write once; the echo is the next notification.
/// Prints the CLOCK_MONOTONIC times (seconds) of each step, for the run to subtract its kill time.
@BleLoop
final class RestartClient: @preconcurrency CentralManagerDelegate, @preconcurrency PeripheralDelegate {
    private nonisolated let done = DispatchSemaphore(value: 0)
    private nonisolated let outcome = LoopLock<Result<String, ClientFailure>>(.failure(ClientFailure("did not finish")))
    private var manager: CentralManager?
    private var peripheral: Peripheral?
    private var write: Characteristic?
    private var ready = false
    private var restarted = false
    private var times: [String: Double] = [:]
    private let probe = Data([0x01, 0x52, 0x53, 0x54])

    nonisolated init() {}

    nonisolated func run(timeout: Double) -> Result<String, ClientFailure> {
        BleLoop.perform { [self] in
            manager = CentralManager(delegate: self, queue: nil, options: CentralManagerOptions(bus: .system))
        }
        if done.wait(timeout: .now() + timeout) == .timedOut { return .failure(ClientFailure("timed out after \(timeout) s, steps seen: \(outcome.value)")) }
        return outcome.value
    }

    private func finish(_ result: Result<String, ClientFailure>) {
        outcome.value = result
        done.signal()
    }

    private func mark(_ step: String) {
        guard restarted, times[step] == nil else { return }
        times[step] = monotonicSeconds()
    }

    func centralManagerDidUpdateState(_ central: CentralManager) {
        if central.state != .poweredOn {
            if ready { restarted = true; mark("gone") }
            return
        }
        mark("powered")
        if !central.isScanning { central.scanForPeripherals(withServices: [BenchmarkUUIDs.service(.signal)], options: ScanOptions()) }
    }

    func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: AdvertisementData, rssi RSSI: Int) {
        mark("scanning")
        guard peripheral.state == .disconnected, self.peripheral == nil || self.peripheral === peripheral || restarted else { return }
        self.peripheral = peripheral
        peripheral.delegate = self
        central.connect(peripheral)
    }

    func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) {
        mark("reconnected")
        peripheral.discoverServices([BenchmarkUUIDs.service(.signal)])
    }

    func centralManager(_ central: CentralManager, didFailToConnect peripheral: Peripheral, error: Error?) {
        // The app's policy: try again while the peripheral advertises.
        central.connect(peripheral)
    }

    func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, error: Error?) {
        if ready { restarted = true; mark("gone") }
    }

    func peripheral(_ peripheral: Peripheral, didDiscoverServices error: Error?) {
        guard let service = peripheral.services?.first(where: { $0.uuid == BenchmarkUUIDs.service(.signal) }) else { return }
        peripheral.discoverCharacteristics(nil, for: service)
    }

    func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: Service, error: Error?) {
        let characteristics = service.characteristics ?? []
        guard let write = characteristics.first(where: { $0.uuid == BenchmarkUUIDs.write(.signal) }),
              let notify = characteristics.first(where: { $0.uuid == BenchmarkUUIDs.notify(.signal) }) else { return }
        self.write = write
        notify.prefersStartNotify = true
        if notify.isNotifying { return written(peripheral) }
        peripheral.setNotifyValue(true, for: notify)
    }

    func peripheral(_ peripheral: Peripheral, didUpdateNotificationStateFor characteristic: Characteristic, error: Error?) {
        guard error == nil, characteristic.isNotifying else { return }
        written(peripheral)
    }

    private func written(_ peripheral: Peripheral) {
        guard let write else { return }
        peripheral.writeValue(probe, for: write, type: .withResponse)
    }

    func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: Characteristic, error: Error?) {
        guard error == nil, characteristic.uuid == BenchmarkUUIDs.notify(.signal), characteristic.value == probe else { return }
        if !ready {
            ready = true
            FileHandle.standardOutput.write(Data("ready\n".utf8))
            return
        }
        guard restarted else { return }
        mark("notified")
        let text = ["gone", "powered", "scanning", "reconnected", "notified"].map { String(format: "%@=%.6f", $0, times[$0] ?? -1) }
        finish(.success("ops=1 seconds=0 cpu_seconds=0 " + text.joined(separator: " ")))
    }
}

/// CLOCK_MONOTONIC in seconds: the same clock in every process of the machine.
func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
