import BleCore
import Dispatch
import Foundation

/// What a client process measures: the same modes as `ble_roundtrip` (the libdbus baseline).
enum ClientMode: String, CaseIterable, Sendable {
    /// StartNotify; each round trip is WriteValue + the PropertiesChanged(Value) signal.
    case signal
    /// AcquireNotify; each round trip is WriteValue + one packet on the socket.
    case acquire
    /// StartNotify; one write makes the simulator push a burst of notifications, counted.
    /// (No AcquireNotify variant: like bluetoothd, BleSim drops packets a slow reader's full
    /// socket cannot take, so a burst there measures loss, not cost.)
    case ingest

    var isIngest: Bool { self == .ingest }
    var usesAcquire: Bool { self == .acquire }
}

/// The benchmark's GATT layout (see `BenchmarkScenario`).
enum BenchmarkUUIDs {
    static let service = BluetoothUUID(UInt16(0xff00))
    static let write = BluetoothUUID(UInt16(0xff01))
    static let notify = BluetoothUUID(UInt16(0xff02))
}

/// A BleCore client written as an app would write it: CoreBluetooth-shaped delegates only, each
/// callback starting the next step. Callbacks run on BleKit's loop (queue nil). It measures its
/// own CPU time (getrusage) from the first measured write to the last notification.
///
/// Its state is loop-isolated, as a Swift 6 app that keeps the default (loop) delivery would
/// write it: the conformances are `@preconcurrency`, so each callback's isolation is checked.
@BleLoop
final class BleCoreClient: @preconcurrency CentralManagerDelegate, @preconcurrency PeripheralDelegate {
    private nonisolated let mode: ClientMode
    private nonisolated let count: Int
    private nonisolated let warmup: Int
    private nonisolated let done = DispatchSemaphore(value: 0)
    /// The outcome, read by the waiting thread after `done` is signalled.
    private nonisolated let outcome = LoopLock<Result<String, ClientFailure>>(.failure(ClientFailure("did not finish")))
    private var manager: CentralManager?
    private var peripheral: Peripheral?
    private var writeCharacteristic: Characteristic?
    private var notifyCharacteristic: Characteristic?
    // Round trips: the index of the write in flight, and which of its two halves arrived.
    private var index = 0
    private var replied = false
    private var notified = false
    private var expected = Data()
    // Ingest: the phase (0 warm-up, 1 measured) and the notifications counted in it.
    private var phase = 0
    private var received = 0
    private var startCPU = 0.0
    private var startWall = ContinuousClock.now

    nonisolated init(mode: ClientMode, count: Int, warmup: Int) {
        self.mode = mode
        self.count = count
        self.warmup = warmup
    }

    /// Runs to completion (or `timeout`) and returns the `ops=… seconds=… cpu_seconds=…` line.
    nonisolated func run(timeout: Double) -> Result<String, ClientFailure> {
        BleLoop.perform { [self] in
            manager = CentralManager(delegate: self, queue: nil, options: CentralManagerOptions(bus: .system))
        }
        if done.wait(timeout: .now() + timeout) == .timedOut { return .failure(ClientFailure("timed out after \(timeout) s")) }
        return outcome.value
    }

    private func finish(_ result: Result<String, ClientFailure>) {
        outcome.value = result
        done.signal()
    }

    private func fail(_ text: String) { finish(.failure(ClientFailure(text))) }

    private func startMeasuring() {
        startWall = ContinuousClock.now
        startCPU = processCPUSeconds()
    }

    private func stopMeasuring() {
        let cpu = processCPUSeconds() - startCPU
        let wall = ContinuousClock.now - startWall
        let seconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18
        finish(.success(String(format: "ops=%d seconds=%.6f cpu_seconds=%.6f", count, seconds, cpu)))
    }

    // MARK: Setup (not measured)

    func centralManagerDidUpdateState(_ central: CentralManager) {
        guard central.state == .poweredOn else {
            if central.state != .unknown && central.state != .resetting { fail("state \(central.state)") }
            return
        }
        central.scanForPeripherals(withServices: [BenchmarkUUIDs.service], options: ScanOptions())
    }

    func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: AdvertisementData, rssi RSSI: Int) {
        guard self.peripheral == nil else { return }
        central.stopScan()
        self.peripheral = peripheral
        peripheral.delegate = self
        central.connect(peripheral)
    }

    func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) {
        peripheral.discoverServices([BenchmarkUUIDs.service])
    }

    func centralManager(_ central: CentralManager, didFailToConnect peripheral: Peripheral, error: Error?) {
        fail("connect failed: \(error.map { "\($0)" } ?? "no error")")
    }

    func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, error: Error?) {
        fail("disconnected: \(error.map { "\($0)" } ?? "no error")")
    }

    func peripheral(_ peripheral: Peripheral, didDiscoverServices error: Error?) {
        guard error == nil, let service = peripheral.services?.first(where: { $0.uuid == BenchmarkUUIDs.service }) else {
            return fail("service discovery: \(error.map { "\($0)" } ?? "service missing")")
        }
        peripheral.discoverCharacteristics(nil, for: service)
    }

    func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: Service, error: Error?) {
        let characteristics = service.characteristics ?? []
        guard error == nil,
              let write = characteristics.first(where: { $0.uuid == BenchmarkUUIDs.write }),
              let notify = characteristics.first(where: { $0.uuid == BenchmarkUUIDs.notify }) else {
            return fail("characteristic discovery: \(error.map { "\($0)" } ?? "characteristics missing")")
        }
        writeCharacteristic = write
        notifyCharacteristic = notify
        notify.prefersStartNotify = !mode.usesAcquire
        peripheral.setNotifyValue(true, for: notify)
    }

    func peripheral(_ peripheral: Peripheral, didUpdateNotificationStateFor characteristic: Characteristic, error: Error?) {
        guard error == nil, characteristic.isNotifying else { return fail("setNotifyValue: \(error.map { "\($0)" } ?? "not notifying")") }
        if mode.isIngest {
            startBurst()
        } else {
            if warmup == 0 { startMeasuring() }
            sendNext()
        }
    }

    // MARK: Round trips

    private func sendNext() {
        guard let peripheral, let writeCharacteristic else { return fail("lost the peripheral") }
        let value = UInt32(index)
        expected = Data([0x01, UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)])
        replied = false
        notified = false
        peripheral.writeValue(expected, for: writeCharacteristic, type: .withResponse)
    }

    private func roundTripHalfDone() {
        guard replied && notified else { return }
        index += 1
        if index == warmup { startMeasuring() }
        if index == warmup + count { return stopMeasuring() }
        sendNext()
    }

    func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: Characteristic, error: Error?) {
        if let error { return fail("write failed: \(error)") }
        if mode.isIngest { return }
        replied = true
        roundTripHalfDone()
    }

    func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: Characteristic, error: Error?) {
        if let error { return fail("notification error: \(error)") }
        guard characteristic.uuid == BenchmarkUUIDs.notify else { return }
        if mode.isIngest {
            received += 1
            if received == (phase == 0 ? warmup : count) {
                phase += 1
                if phase == 2 { return stopMeasuring() }
                startBurst()
            }
            return
        }
        guard characteristic.value == expected else {
            return fail("notification \(characteristic.value.map { "\($0 as NSData)" } ?? "nil") is not the value written \(expected as NSData)")
        }
        notified = true
        roundTripHalfDone()
    }

    // MARK: Ingest

    private func startBurst() {
        if phase == 0 && warmup == 0 { phase = 1 }
        guard let peripheral, let writeCharacteristic else { return fail("lost the peripheral") }
        received = 0
        if phase == 1 { startMeasuring() }
        peripheral.writeValue(Data([phase == 0 ? 0xfe : 0xff, 0, 0, 0]), for: writeCharacteristic, type: .withResponse)
    }
}

/// Why a client gave up.
struct ClientFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// This process's CPU time, every thread, user plus system.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}
