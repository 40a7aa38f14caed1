import BleCore
import Foundation
import Synchronization

/// The central role with async/await, shaped like FXBlueToothAsync's `AsyncBleManager` so that
/// its code ports by changing imports.
///
/// Beyond it: scanning as a stream (`discoveries`), the state as a value and a stream, any
/// number of subscribers to every stream, and no call that can hang — each ends with its
/// result, an `AsyncBleClientError`, its optional timeout, or `CancellationError` as soon as
/// its task is cancelled (and then what BlueZ was doing for it is cancelled too).
///
/// Usable from any actor or none: a `@MainActor` caller needs no annotations, and the scan
/// handler runs on the caller's actor, one discovery at a time.
public final class AsyncBleManager: Sendable {
    /// The BleCore manager underneath (its `multiDelegate` and `delegate` stay yours).
    public let central: CBCentralManager
    let hub: CentralHub

    private static let defaults = Mutex(CentralManagerOptions())

    /// The options `init()` and `init(options:)` use: the system bus unless changed (tests and
    /// tools point it at BleSim's private bus).
    public static var defaultConfiguration: CentralManagerOptions {
        get { defaults.withLock { $0 } }
        set { defaults.withLock { $0 = newValue } }
    }

    /// A manager on the system bus (or `defaultConfiguration`).
    public convenience init() {
        self.init(configuration: Self.defaultConfiguration)
    }

    /// FXBlueToothAsync's spelling; CoreBluetooth's manager options have no BlueZ counterpart
    /// and are ignored.
    public convenience init(options: [String: Any]?) {
        self.init(configuration: Self.defaultConfiguration)
    }

    /// A manager with BleKit's options (bus, adapter, timeouts).
    public init(configuration: CentralManagerOptions) {
        central = CentralManager(delegate: nil, queue: nil, options: configuration)
        hub = CentralHub(central: central)
        // Before the first event: the manager opens its session asynchronously.
        central.multiDelegate.addDelegate(hub)
    }

    // MARK: State

    /// The adapter's state now.
    public var state: CBManagerState { central.state }

    /// Waits until the adapter is powered on and returns `.poweredOn`. Transitional states
    /// (`unknown`, `resetting`) are waited out; `poweredOff`, `unsupported` and `unauthorized`
    /// end it with `.bluetoothUnavailable(state)` (FXBlueToothAsync failed on the first update).
    public func getState(timeout: TimeInterval? = nil) async throws -> CBManagerState {
        let hub = self.hub
        return try await awaitCall(.state, timeout: timeout) { call in hub.waitForPoweredOn(call) }
    }

    /// The state now, then every change, for as many subscribers as you like.
    public func stateUpdates() -> AsyncStream<CBManagerState> {
        let (stream, continuation) = AsyncStream.makeStream(of: CBManagerState.self)
        let hub = self.hub
        LoopBridge.later { hub.subscribeState(continuation) }
        return stream
    }

    // MARK: Scanning

    /// Scanning as a stream: peripherals `request` accepts (its services, options and
    /// `matcher`), each once unless duplicates are allowed. Streams share one radio scan, which
    /// runs while at least one is open. It ends with `.timeout(.scan)` after `timeout`,
    /// `.scanStopped` after `stopScan()`, `.bluetoothUnavailable` when the adapter or
    /// bluetoothd goes away; ending it (cancelling its task) unsubscribes.
    public func discoveries(_ request: AsyncScanRequest = AsyncScanRequest(), timeout: TimeInterval? = nil)
        -> AsyncThrowingStream<AsyncDiscoveredPeripheral, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: AsyncDiscoveredPeripheral.self, throwing: (any Error).self)
        let hub = self.hub
        LoopBridge.later { hub.subscribeScan(request, timeout: timeout, continuation) }
        return stream
    }

    /// Scans and calls `onDiscovered` for each accepted discovery, one at a time, on the
    /// caller's actor; `.connect` stops scanning, connects (within `request.connectTimeout`)
    /// and returns the connected peripheral, `.stop` ends with `.scanStopped`, `.skip` goes on.
    /// An error thrown by the handler ends the scan with that error.
    public func scan(_ request: AsyncScanRequest = AsyncScanRequest(), timeout: TimeInterval? = nil,
                     isolation: isolated (any Actor)? = #isolation,
                     onDiscovered: @escaping (AsyncDiscoveredPeripheral) async throws -> ScanAction) async throws -> AsyncPeripheral {
        let chosen = try await choose(request, timeout: timeout, onDiscovered: onDiscovered)
        // The scan stream is released by now: its radio scan is stopped before the connect
        // starts (both are queued onto the loop, in this order).
        try Task.checkCancellation()
        return try await connect(chosen.peripheral, timeout: request.connectTimeout)
    }

    /// The discovery the handler chose; the scan stream ends when this returns.
    private func choose(_ request: AsyncScanRequest, timeout: TimeInterval?, isolation: isolated (any Actor)? = #isolation,
                        onDiscovered: (AsyncDiscoveredPeripheral) async throws -> ScanAction) async throws -> AsyncDiscoveredPeripheral {
        for try await discovered in discoveries(request, timeout: timeout) {
            try Task.checkCancellation()
            switch try await onDiscovered(discovered) {
            case .skip: continue
            case .stop: throw AsyncBleClientError.scanStopped
            case .connect: return discovered
            }
        }
        // The stream ends without an error only when this task was cancelled.
        try Task.checkCancellation()
        throw CancellationError()
    }

    /// Ends every scan: `scan` calls throw `.scanStopped` and discovery streams end with it
    /// (FXBlueToothAsync left `scan` hanging: defect 24).
    public func stopScan() {
        let hub = self.hub
        LoopBridge.later { hub.stopAllScans() }
    }

    // MARK: Connections

    /// Connects and returns once BlueZ resolved the services. Only this peripheral's
    /// connection resolves it; `timeout` (15 s by default, nil for none) and cancellation end
    /// BlueZ's attempt with `Disconnect`, unless another call still waits for the same link.
    /// CoreBluetooth's connect `options` have no BlueZ counterpart and are ignored.
    public func connect(_ peripheral: CBPeripheral, options: [String: Any]? = nil, timeout: TimeInterval? = 15) async throws -> AsyncPeripheral {
        let hub = self.hub
        let deadline = Deadline(timeout)
        _ = try await awaitCall(.connect, timeout: try deadline.remaining(.connect)) { (call: PendingCall<ManagerState>) in
            hub.waitForPoweredOn(call)
        }
        return try await awaitCall(.connect, timeout: try deadline.remaining(.connect)) { call in hub.startConnect(peripheral, call) }
    }

    /// Connects to a discovered peripheral (FXBlueToothAsync v3's overload, which its README shows).
    public func connect(_ discovered: AsyncDiscoveredPeripheral, timeout: TimeInterval? = 15) async throws -> AsyncPeripheral {
        try await connect(discovered.peripheral, timeout: timeout)
    }

    /// The `AsyncPeripheral` of a peripheral that is already connected (restored, or connected
    /// through BleCore), or nil.
    public func asyncPeripheral(for peripheral: CBPeripheral) async -> AsyncPeripheral? {
        let hub = self.hub
        return await BleLoopAsync.run { peripheral.state == .connected ? hub.link(for: peripheral).asyncPeripheral : nil }
    }

    /// Disconnects (or cancels a pending connect) and returns once the link is down; at once
    /// when it is not connected (FXBlueToothAsync waited forever).
    public func disconnect(_ peripheral: CBPeripheral, timeout: TimeInterval? = nil) async throws {
        let hub = self.hub
        try await awaitCall(.disconnect, timeout: timeout) { (call: PendingCall<Void>) in hub.startDisconnect(peripheral, call) }
    }

    /// Disconnects `peripheral`.
    public func disconnect(_ peripheral: AsyncPeripheral, timeout: TimeInterval? = nil) async throws {
        try await disconnect(peripheral.peripheral, timeout: timeout)
    }

    /// Every link coming up or going down, for as many subscribers as you like.
    public func connectionEvents() -> AsyncStream<AsyncConnectionEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: AsyncConnectionEvent.self)
        let hub = self.hub
        LoopBridge.later { hub.subscribeEvents(continuation) }
        return stream
    }

    /// Stops using the bus: scans and streams end, links stay as BlueZ has them.
    public func close() {
        let hub = self.hub
        LoopBridge.later { hub.close() }
        central.close()
    }

    /// Calls and stream subscribers still registered on the loop (zero when nothing waits).
    public var pendingCallCount: Int {
        get async {
            let hub = self.hub
            return await BleLoopAsync.run { hub.pendingCount }
        }
    }
}

/// Runs loop work from async code and returns its result.
enum BleLoopAsync {
    static func run<T: Sendable>(_ body: @escaping @BleLoop @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            LoopBridge.later { continuation.resume(returning: body()) }
        }
    }
}
