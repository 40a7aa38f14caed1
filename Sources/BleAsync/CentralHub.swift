import BleCore
import Foundation

/// The loop side of an `AsyncBleManager`: it hears the central's events (as one listener of its
/// `multiDelegate`, so other listeners keep working) and keeps every waiting call and every
/// stream subscriber in its own table entry, keyed by call, never by UUID (defect 28).
///
/// Streams have any number of subscribers, each receiving every value (defect 27); the radio
/// scan is reference-counted: the first scan subscriber starts it, the last one stops it.
@BleLoop
final class CentralHub {
    typealias Discoveries = AsyncThrowingStream<AsyncDiscoveredPeripheral, any Error>

    private struct ScanSubscriber {
        let request: AsyncScanRequest
        let continuation: Discoveries.Continuation
        var seen: Set<String> = []
        var deadline: LoopTimer?
    }

    /// The merged filter the radio scans with.
    private struct RadioScan: Equatable {
        var services: [BluetoothUUID]?
        var options: ScanOptions
    }

    let central: CentralManager
    private var nextID: UInt64 = 0
    private var stateSubscribers: [UInt64: AsyncStream<ManagerState>.Continuation] = [:]
    private let stateWaiters = PoweredOnWaiters()
    private var eventSubscribers: [UInt64: AsyncStream<AsyncConnectionEvent>.Continuation] = [:]
    private var scanSubscribers: [UInt64: ScanSubscriber] = [:]
    private var radioScan: RadioScan?
    private var connectWaiters: [ObjectIdentifier: [UInt64: PendingCall<AsyncPeripheral>]] = [:]
    private var disconnectWaiters: [ObjectIdentifier: [UInt64: PendingCall<Void>]] = [:]
    private var links: [ObjectIdentifier: PeripheralLink] = [:]
    private var lastState: ManagerState = .unknown

    nonisolated init(central: CentralManager) {
        self.central = central
    }

    func makeID() -> UInt64 {
        nextID += 1
        return nextID
    }

    /// Calls and subscribers still registered, for tests: zero once everything ended.
    var pendingCount: Int {
        stateWaiters.count + scanSubscribers.count + connectWaiters.values.reduce(0) { $0 + $1.count }
            + disconnectWaiters.values.reduce(0) { $0 + $1.count } + links.values.reduce(0) { $0 + $1.pendingCount }
    }

    /// The one `AsyncPeripheral` of `peripheral` in this manager.
    func link(for peripheral: Peripheral) -> PeripheralLink {
        let key = ObjectIdentifier(peripheral)
        if let link = links[key] { return link }
        let link = PeripheralLink(peripheral: peripheral, hub: self)
        links[key] = link
        peripheral.addLoopObserver(link)
        return link
    }

    // MARK: State

    func subscribeState(_ continuation: AsyncStream<ManagerState>.Continuation) {
        let id = makeID()
        stateSubscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in LoopWork.run { self?.stateSubscribers[id] = nil } }
        continuation.yield(central.state)
    }

    /// Resolves at poweredOn, fails at a state that is not transitional (defect 30).
    func waitForPoweredOn(_ call: PendingCall<ManagerState>) {
        stateWaiters.wait(call, in: central.state)
    }

    private func stateChanged(_ state: ManagerState) {
        let wasOn = lastState == .poweredOn
        lastState = state
        for continuation in stateSubscribers.values { continuation.yield(state) }
        stateWaiters.stateChanged(state)
        if wasOn, state != .poweredOn {
            // bluetoothd left or the adapter went off: a scan stream says so instead of going quiet.
            endScans(AsyncBleClientError.bluetoothUnavailable(state))
        }
    }

    // MARK: Connection events

    func subscribeEvents(_ continuation: AsyncStream<AsyncConnectionEvent>.Continuation) {
        let id = makeID()
        eventSubscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in LoopWork.run { self?.eventSubscribers[id] = nil } }
    }

    // MARK: Scanning

    func subscribeScan(_ request: AsyncScanRequest, timeout: TimeInterval?, _ continuation: Discoveries.Continuation) {
        switch central.state {
        case .unsupported, .unauthorized:
            return continuation.finish(throwing: AsyncBleClientError.bluetoothUnavailable(central.state))
        default:
            break
        }
        let id = makeID()
        var subscriber = ScanSubscriber(request: request, continuation: continuation)
        if let timeout, timeout > 0 {
            subscriber.deadline = LoopTimer.scheduled(after: .seconds(timeout)) { [weak self] in
                self?.endScan(id, AsyncBleClientError.timeout(.scan))
            }
        }
        scanSubscribers[id] = subscriber
        continuation.onTermination = { [weak self] _ in LoopWork.run { self?.endScan(id, nil) } }
        updateRadioScan(restart: true)
    }

    private func endScan(_ id: UInt64, _ error: (any Error)?) {
        guard let subscriber = scanSubscribers.removeValue(forKey: id) else { return }
        subscriber.deadline?.cancel()
        subscriber.continuation.finish(throwing: error)
        updateRadioScan(restart: false)
    }

    /// Ends every scan stream (and with it every `scan` call) with `error`.
    func endScans(_ error: any Error) {
        for id in scanSubscribers.keys.sorted() { endScan(id, error) }
    }

    /// Scans with what every subscriber asks for together; each one filters for itself. A new
    /// subscriber restarts it, so it hears peripherals an earlier one already saw.
    private func updateRadioScan(restart: Bool) {
        let requests = scanSubscribers.values.map(\.request)
        guard !requests.isEmpty else {
            if radioScan != nil {
                radioScan = nil
                central.stopScan()
            }
            return
        }
        var services: [BluetoothUUID]? = []
        for request in requests {
            guard let wanted = request.serviceUUIDs, !wanted.isEmpty else { services = nil; break }
            for uuid in wanted where !(services?.contains(uuid) ?? true) { services?.append(uuid) }
        }
        let options = requests.map(\.scanOptions)
        let thresholds = options.map(\.rssiThreshold)
        let merged = RadioScan(services: services, options: ScanOptions(
            allowDuplicates: options.contains { $0.allowDuplicates },
            rssiThreshold: thresholds.contains { $0 == nil } ? nil : thresholds.compactMap { $0 }.min(),
            pattern: Set(options.map(\.pattern)).count == 1 ? options[0].pattern : nil,
            transport: Set(options.map(\.transport)).count == 1 ? options[0].transport : .auto))
        guard restart || merged != radioScan else { return }
        radioScan = merged
        central.scanForPeripherals(withServices: merged.services, options: merged.options)
    }

    /// `stopScan()`: the scan calls and streams end with `.scanStopped` (defect 24: they hung).
    func stopAllScans() {
        endScans(AsyncBleClientError.scanStopped)
    }

    // MARK: Connect and disconnect

    func startConnect(_ peripheral: Peripheral, _ call: PendingCall<AsyncPeripheral>) {
        if peripheral.state == .connected { return call.succeed(link(for: peripheral).asyncPeripheral).ignored }
        let key = ObjectIdentifier(peripheral)
        let id = makeID()
        let registered = call.onEnd(settled: { [weak self] in
            self?.connectWaiters[key]?[id] = nil
            if self?.connectWaiters[key]?.isEmpty == true { self?.connectWaiters[key] = nil }
        }, abandoned: { [weak self] in
            // Cancelled or timed out: nobody else waits for this link, so BlueZ's attempt (or
            // the link it just made) is ended with Disconnect (defect 25).
            guard let self, self.connectWaiters[key] == nil else { return }
            self.central.cancelPeripheralConnection(peripheral)
        })
        guard registered else { return }
        connectWaiters[key, default: [:]][id] = call
        central.connect(peripheral)
    }

    func startDisconnect(_ peripheral: Peripheral, _ call: PendingCall<Void>) {
        guard peripheral.state != .disconnected else { return call.succeed(()).ignored }
        let key = ObjectIdentifier(peripheral)
        let id = makeID()
        guard call.onEnd(settled: { [weak self] in
            self?.disconnectWaiters[key]?[id] = nil
            if self?.disconnectWaiters[key]?.isEmpty == true { self?.disconnectWaiters[key] = nil }
        }) else { return }
        disconnectWaiters[key, default: [:]][id] = call
        central.cancelPeripheralConnection(peripheral)
    }

    private func connected(_ peripheral: Peripheral) {
        let key = ObjectIdentifier(peripheral)
        let asyncPeripheral = link(for: peripheral).asyncPeripheral
        // Only the calls waiting for this peripheral (defect 25: any didConnect resolved it).
        for call in connectWaiters[key]?.values.map({ $0 }) ?? [] { call.succeed(asyncPeripheral) }
        for continuation in eventSubscribers.values { continuation.yield(.connected(peripheral)) }
    }

    private func failedToConnect(_ peripheral: Peripheral, _ error: BleError?) {
        let key = ObjectIdentifier(peripheral)
        for call in connectWaiters[key]?.values.map({ $0 }) ?? [] { call.fail(AsyncBleClientError.connectFailed(peripheral, error)) }
        // A disconnect that ended a pending attempt is done.
        for call in disconnectWaiters[key]?.values.map({ $0 }) ?? [] { call.succeed(()) }
    }

    private func disconnected(_ peripheral: Peripheral, _ error: BleError?) {
        let key = ObjectIdentifier(peripheral)
        for call in disconnectWaiters[key]?.values.map({ $0 }) ?? [] { call.succeed(()) }
        for continuation in eventSubscribers.values { continuation.yield(.disconnected(peripheral, error)) }
    }

    /// The manager was closed: everything waiting ends.
    func close() {
        let failure = AsyncBleClientError.bluetoothUnavailable(.unsupported)
        endScans(failure)
        stateWaiters.fail(failure)
        // A closed manager reports no more link events: nothing may wait for one.
        for waiters in connectWaiters.values { for call in waiters.values { call.fail(failure) } }
        for waiters in disconnectWaiters.values { for call in waiters.values { call.fail(failure) } }
        for continuation in stateSubscribers.values { continuation.finish() }
        for continuation in eventSubscribers.values { continuation.finish() }
        stateSubscribers.removeAll()
        eventSubscribers.removeAll()
    }
}

extension CentralHub: @preconcurrency CentralManagerDelegate {
    func centralManagerDidUpdateState(_ central: CentralManager) { stateChanged(central.state) }

    func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: AdvertisementData, rssi RSSI: Int) {
        let discovered = AsyncDiscoveredPeripheral(peripheral: peripheral, advertisement: advertisementData, rssi: RSSI)
        for id in scanSubscribers.keys.sorted() {
            guard var subscriber = scanSubscribers[id], subscriber.request.accepts(discovered) else { continue }
            if !subscriber.request.scanOptions.allowDuplicates {
                guard subscriber.seen.insert(peripheral.address).inserted else { continue }
                scanSubscribers[id] = subscriber
            }
            subscriber.continuation.yield(discovered)
        }
    }

    func centralManager(_ central: CentralManager, didConnect peripheral: Peripheral) { connected(peripheral) }

    func centralManager(_ central: CentralManager, didFailToConnect peripheral: Peripheral, error: Error?) {
        failedToConnect(peripheral, error.map(BleError.wrapping))
    }

    func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, error: Error?) {
        disconnected(peripheral, error.map(BleError.wrapping))
    }

    func centralManager(_ central: CentralManager, didFailToScan error: Error) {
        radioScan = nil
        endScans(AsyncBleClientError.operationFailed(.scan, BleError.wrapping(error)))
    }
}

extension BleError {
    /// BleCore reports `BleError`s; anything else is carried as `.failed`.
    static func wrapping(_ error: any Error) -> BleError {
        (error as? BleError) ?? .failed(String(describing: error))
    }
}

extension Bool {
    /// Drops a `finish` verdict where it does not matter.
    var ignored: Void { () }
}
