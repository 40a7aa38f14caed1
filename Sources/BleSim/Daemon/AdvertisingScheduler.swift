import BleDBus

/// Delivers advertising reports from everything in the air to the adapters that scan, and
/// expires temporary devices: one repeating tick for all advertisers, so a thousand of them at
/// 100 ms cost one timer, not a thousand.
@BleLoop
final class AdvertisingScheduler {
    /// The tick; reports are due on multiples of their own interval, checked every tick.
    static let tick: Duration = .milliseconds(10)

    private unowned let simulator: Simulator
    private var timer: LoopTimer?
    private var due: [ObjectIdentifier: ContinuousClock.Instant] = [:]
    private var lastExpiryCheck = ContinuousClock.now
    private let clock = ContinuousClock()
    /// The worst lateness of a report seen, for the benchmark.
    private(set) var maximumLag: Duration = .zero
    /// Reports delivered.
    private(set) var reportsDelivered = 0

    init(simulator: Simulator) {
        self.simulator = simulator
    }

    func start() {
        guard timer == nil else { return }
        timer = LoopTimer.scheduled(after: AdvertisingScheduler.tick, repeating: AdvertisingScheduler.tick) { [weak self] in
            self?.run()
        }
    }

    func stop() {
        timer?.cancel()
        timer = nil
    }

    /// A scan just started on `adapter`: the controller hears every advertiser at once.
    func scanStarted(on adapter: SimAdapter) {
        let now = clock.now
        for peripheral in simulator.air where peripheral.isAdvertising {
            adapter.hear(peripheral.nextReport(), from: peripheral, now: now)
            due[ObjectIdentifier(peripheral)] = now + .clampedMilliseconds(peripheral.advertisingInterval)
        }
    }

    private func run() {
        let now = clock.now
        let scanning = simulator.adapters.filter { $0.powered && $0.discovering }
        // (With the btvirt fault, `scanStarted` delivered this scan's only reports.)
        if !scanning.isEmpty, !simulator.faults.reportsOnlyAtScanStart {
            for peripheral in simulator.air where peripheral.isAdvertising {
                let key = ObjectIdentifier(peripheral)
                let interval = Duration.clampedMilliseconds(peripheral.advertisingInterval)
                guard let next = due[key] else {
                    due[key] = now + interval
                    continue
                }
                guard next <= now else { continue }
                let lag = now - next
                if lag > maximumLag { maximumLag = lag }
                let report = peripheral.nextReport()
                for adapter in scanning { adapter.hear(report, from: peripheral, now: now) }
                reportsDelivered += 1
                var following = next + interval
                // A loop that fell far behind resynchronises instead of bursting.
                if following <= now { following = now + interval }
                due[key] = following
            }
        }
        if now - lastExpiryCheck >= .milliseconds(50) {
            lastExpiryCheck = now
            let timeout = Duration.clampedMilliseconds(simulator.configuration.temporaryTimeoutSeconds * 1000)
            for adapter in simulator.adapters { adapter.expireDevices(now: now, timeout: timeout) }
        }
    }

    /// Resets the lag statistics.
    func resetStatistics() {
        maximumLag = .zero
        reportsDelivered = 0
    }
}

extension Simulator {
    func scanStarted(on adapter: SimAdapter) {
        advertisingScheduler?.scanStarted(on: adapter)
    }

    /// How the simulated air keeps up: advertising reports delivered to scanning adapters since
    /// the last reset, and the worst lateness of a report behind its schedule.
    public var advertisingStatistics: (reports: Int, maximumLag: Duration) {
        (advertisingScheduler?.reportsDelivered ?? 0, advertisingScheduler?.maximumLag ?? .zero)
    }

    /// Starts counting `advertisingStatistics` afresh.
    public func resetAdvertisingStatistics() {
        advertisingScheduler?.resetStatistics()
    }
}
