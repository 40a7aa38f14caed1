import BleCore
import Dispatch
import Foundation

/// The benchmark's GATT layout (see `BenchmarkScenario`).
enum BenchmarkUUIDs {
    static func service(_ mode: ClientMode) -> BluetoothUUID { BluetoothUUID(mode.serviceShortUUID) }
    static func write(_ mode: ClientMode) -> BluetoothUUID { BluetoothUUID(mode.serviceShortUUID + 1) }
    static func notify(_ mode: ClientMode) -> BluetoothUUID { BluetoothUUID(mode.serviceShortUUID + 2) }
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
    // Ingest over AcquireNotify may lose packets (a full socket drops them): a burst ends after
    // 2 s without one, and the wall time ends at the last tick that saw one.
    private var watchdog: LoopTimer?
    private var receivedAtLastTick = 0
    private var quietTicks = 0
    private var lastProgress = ContinuousClock.now
    private var lost = 0
    // Round-trip latencies of the measured round trips, µs.
    // Per round trip: GLib's monotonic clock in µs, one clock_gettime as the C client makes, not
    // ContinuousClock (its Instant and Duration arithmetic cost ~500 instructions per trip).
    private var sentAt = MonotonicTime.now
    private var latencies: [Double] = []
    /// The BleDSL modes' driver, once subscribed.
    private var engineDriver: EngineDriver?

    /// Round-trip counts after which the resident set is sampled (the memory measure).
    private nonisolated let residentCheckpoints: Set<Int>
    private var residentAt: [Int: Int] = [:]

    nonisolated init(mode: ClientMode, count: Int, warmup: Int, residentCheckpoints: Set<Int> = []) {
        self.mode = mode
        self.count = count
        self.warmup = warmup
        self.residentCheckpoints = residentCheckpoints
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

    private func stopMeasuring(operations: Int? = nil, endingAt end: ContinuousClock.Instant? = nil) {
        let cpu = processCPUSeconds() - startCPU
        let wall = (end ?? ContinuousClock.now) - startWall
        let seconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18
        watchdog?.cancel()
        let resident = residentAt.keys.sorted().map { " rss_at_\($0)=\(residentAt[$0] ?? 0)" }.joined()
        finish(.success(String(format: "ops=%d seconds=%.6f cpu_seconds=%.6f lost=%d", operations ?? count, seconds, cpu, lost)
                        + latencyFields(residentCheckpoints.isEmpty ? latencies : []) + resident))
    }

    // MARK: Setup (not measured)

    func centralManagerDidUpdateState(_ central: CentralManager) {
        guard central.state == .poweredOn else {
            if central.state != .unknown && central.state != .resetting { fail("state \(central.state)") }
            return
        }
        central.scanForPeripherals(withServices: [BenchmarkUUIDs.service(mode)], options: ScanOptions())
    }

    func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: AdvertisementData, rssi RSSI: Int) {
        guard self.peripheral == nil else { return }
        central.stopScan()
        self.peripheral = peripheral
        peripheral.delegate = self
        central.connect(peripheral)
    }

    func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) {
        peripheral.discoverServices([BenchmarkUUIDs.service(mode)])
    }

    func centralManager(_ central: CentralManager, didFailToConnect peripheral: Peripheral, error: Error?) {
        fail("connect failed: \(error.map { "\($0)" } ?? "no error")")
    }

    func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, error: Error?) {
        fail("disconnected: \(error.map { "\($0)" } ?? "no error")")
    }

    func peripheral(_ peripheral: Peripheral, didDiscoverServices error: Error?) {
        guard error == nil, let service = peripheral.services?.first(where: { $0.uuid == BenchmarkUUIDs.service(mode) }) else {
            return fail("service discovery: \(error.map { "\($0)" } ?? "service missing")")
        }
        peripheral.discoverCharacteristics(nil, for: service)
    }

    func peripheral(_ peripheral: Peripheral, didDiscoverCharacteristicsFor service: Service, error: Error?) {
        let characteristics = service.characteristics ?? []
        guard error == nil,
              let write = characteristics.first(where: { $0.uuid == BenchmarkUUIDs.write(mode) }),
              let notify = characteristics.first(where: { $0.uuid == BenchmarkUUIDs.notify(mode) }) else {
            return fail("characteristic discovery: \(error.map { "\($0)" } ?? "characteristics missing")")
        }
        writeCharacteristic = write
        notifyCharacteristic = notify
        notify.prefersStartNotify = !mode.usesAcquire
        peripheral.setNotifyValue(true, for: notify)
    }

    func peripheral(_ peripheral: Peripheral, didUpdateNotificationStateFor characteristic: Characteristic, error: Error?) {
        guard error == nil, characteristic.isNotifying else { return fail("setNotifyValue: \(error.map { "\($0)" } ?? "not notifying")") }
        guard engineDriver == nil else { return }
        if mode.usesEngine {
            guard let writeCharacteristic, let notifyCharacteristic else { return fail("lost the characteristics") }
            let driver = EngineDriver(mode: mode, count: count, warmup: warmup, peripheral: peripheral,
                                      write: writeCharacteristic, notify: notifyCharacteristic) { [weak self] result in
                self?.finish(result)
            }
            engineDriver = driver
            driver.start()
        } else if mode.isIngest {
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
        sentAt = MonotonicTime.now
        peripheral.writeValue(expected, for: writeCharacteristic, type: .withResponse)
    }

    private func roundTripHalfDone() {
        guard replied && notified else { return }
        if index >= warmup && residentCheckpoints.isEmpty { latencies.append(Double(MonotonicTime.now - sentAt)) }
        index += 1
        if residentCheckpoints.contains(index - warmup) { residentAt[index - warmup] = residentBytes() }
        if index == warmup { startMeasuring() }
        if index == warmup + count { return stopMeasuring() }
        sendNext()
    }

    func peripheral(_ peripheral: Peripheral, didWriteValueFor characteristic: Characteristic, error: Error?) {
        if mode.usesEngine { return }
        if let error { return fail("write failed: \(error)") }
        if mode.isIngest { return }
        replied = true
        roundTripHalfDone()
    }

    func peripheral(_ peripheral: Peripheral, didUpdateValueFor characteristic: Characteristic, error: Error?) {
        if mode.usesEngine { return }
        if let error { return fail("notification error: \(error)") }
        guard characteristic.uuid == BenchmarkUUIDs.notify(mode) else { return }
        if mode.isIngest {
            received += 1
            if received == (phase == 0 ? warmup : count) { burstEnded() }
            return
        }
        guard characteristic.value == expected else {
            return fail("notification \(characteristic.value.map { "\($0 as NSData)" } ?? "nil") is not the value written \(expected as NSData)")
        }
        notified = true
        roundTripHalfDone()
    }

    // MARK: Ingest

    private func burstEnded(lastProgress end: ContinuousClock.Instant? = nil) {
        phase += 1
        if phase == 2 { return stopMeasuring(operations: received, endingAt: end) }
        startBurst()
    }

    /// Every 50 ms: a burst that made no progress for a second has lost the rest.
    private func checkProgress() {
        guard phase < 2 else { return }
        if received != receivedAtLastTick {
            receivedAtLastTick = received
            quietTicks = 0
            lastProgress = ContinuousClock.now
            return
        }
        quietTicks += 1
        // Only a socket loses packets; over signals a pause is the machine's load (20 s).
        guard quietTicks >= (mode.usesAcquire ? 40 : 400) else { return }
        let target = phase == 0 ? warmup : count
        if phase == 1 { lost = target - received }
        guard received > 0 || phase == 0 else { return fail("every notification of the burst was lost") }
        burstEnded(lastProgress: lastProgress)
    }

    private func startBurst() {
        if phase == 0 && warmup == 0 { phase = 1 }
        guard let peripheral, let writeCharacteristic else { return fail("lost the peripheral") }
        received = 0
        receivedAtLastTick = 0
        quietTicks = 0
        lastProgress = ContinuousClock.now
        if watchdog == nil {
            watchdog = LoopTimer.scheduled(after: .milliseconds(50), repeating: .milliseconds(50)) { [weak self] in self?.checkProgress() }
        }
        if phase == 1 { startMeasuring() }
        peripheral.writeValue(Data([phase == 0 ? 0xfe : 0xff, 0, 0, 0]), for: writeCharacteristic, type: .withResponse)
    }
}

/// Why a client gave up.
struct ClientFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// ` p50_us=… p99_us=…` for round-trip latencies (empty when there are none).
func latencyFields(_ latencies: [Double]) -> String {
    guard !latencies.isEmpty else { return "" }
    let sorted = latencies.sorted()
    func at(_ fraction: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))] }
    return String(format: " p50_us=%.1f p99_us=%.1f", at(0.5), at(0.99))
}

func microseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12
}

/// This process's CPU time, every thread, user plus system.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}
