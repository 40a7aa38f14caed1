import BleCore
import Dispatch
import Foundation

/// Scans a crowd of `expected` advertisers with BleCore's public API (no service filter, default
/// options, as `BleakScanner` with its defaults): the time until 95 % are discovered, then the
/// CPU time over `window` seconds of steady scanning, and the resident memory the discovered
/// devices added.
@BleLoop
final class ScanClient: @preconcurrency CentralManagerDelegate {
    private nonisolated let expected: Int
    private nonisolated let window: Double
    private nonisolated let done = DispatchSemaphore(value: 0)
    private nonisolated let outcome = LoopLock<Result<String, ClientFailure>>(.failure(ClientFailure("did not finish")))
    private var manager: CentralManager?
    private var seen: Set<ObjectIdentifier> = []
    private var peripherals: [Peripheral] = []
    private var started = ContinuousClock.now
    private var residentBefore = 0
    private var discoveredAfter: Double?
    private var timer: LoopTimer?

    nonisolated init(expected: Int, window: Double) {
        self.expected = expected
        self.window = window
    }

    nonisolated func run(timeout: Double) -> Result<String, ClientFailure> {
        BleLoop.perform { [self] in
            manager = CentralManager(delegate: self, queue: nil, options: CentralManagerOptions(bus: .system))
        }
        if done.wait(timeout: .now() + timeout) == .timedOut { return .failure(ClientFailure("timed out after \(timeout) s")) }
        return outcome.value
    }

    func centralManagerDidUpdateState(_ central: CentralManager) {
        guard central.state == .poweredOn else {
            if central.state != .unknown && central.state != .resetting { finish(.failure(ClientFailure("state \(central.state)"))) }
            return
        }
        guard discoveredAfter == nil, seen.isEmpty else { return }
        residentBefore = residentBytes()
        started = ContinuousClock.now
        central.scanForPeripherals(withServices: nil, options: ScanOptions())
        // Give up if 95 % never show: the report says how many did.
        timer = LoopTimer.scheduled(after: .seconds(60)) { [weak self] in
            guard let self, self.discoveredAfter == nil else { return }
            self.finish(.failure(ClientFailure("only \(self.seen.count) of \(self.expected) advertisers discovered in 60 s")))
        }
    }

    func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: AdvertisementData, rssi RSSI: Int) {
        guard seen.insert(ObjectIdentifier(peripheral)).inserted else { return }
        peripherals.append(peripheral)
        guard discoveredAfter == nil, seen.count * 100 >= expected * 95 else { return }
        discoveredAfter = microseconds(ContinuousClock.now - started) / 1e6
        timer?.cancel()
        let cpuBefore = processCPUSeconds()
        let wallBefore = ContinuousClock.now
        timer = LoopTimer.scheduled(after: .milliseconds(Int64(window * 1000))) { [weak self] in
            guard let self else { return }
            let cpu = processCPUSeconds() - cpuBefore
            let wall = microseconds(ContinuousClock.now - wallBefore) / 1e6
            let resident = residentBytes()
            self.manager?.stopScan()
            self.finish(.success(String(format: "ops=%d seconds=%.6f cpu_seconds=%.6f discovered95_seconds=%.6f discovered=%d rss_delta=%d",
                                        self.expected, wall, cpu, self.discoveredAfter ?? 0, self.seen.count, resident - self.residentBefore)))
        }
    }

    private func finish(_ result: Result<String, ClientFailure>) {
        outcome.value = result
        done.signal()
    }
}

/// This process's resident set, bytes (/proc/self/statm).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}
