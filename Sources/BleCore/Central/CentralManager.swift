import BleDBus
import Dispatch
import Foundation

// @unchecked: an any-thread facade (see ThreadingModel.md). Its mutable state is @BleLoop-
// isolated or behind a lock; the class cannot be @BleLoop itself, because CoreBluetooth-shaped
// code calls it from any thread without `await`.
/// The central role over BlueZ, shaped like CoreBluetooth's `CBCentralManager`.
///
/// Methods may be called from any thread: from another thread they are queued onto BleKit's
/// loop (`BleLoop`), where all state lives; on the loop (inside a callback) they run at once.
/// Delegate callbacks arrive in order on the loop, or on `queue` when one is given, never from
/// inside the call that caused them. The manager and its peripherals share one BlueZ session:
/// one cache of BlueZ's objects, kept current from its signals; the
/// manager follows adapters appearing, powering and disappearing, and bluetoothd leaving and
/// returning on the bus (pending operations fail, peripherals disconnect, the cache is rebuilt
/// and a requested scan resumes).
public final class CentralManager: Manager, @unchecked Sendable {
    /// The options it was made with.
    public let options: CentralManagerOptions
    /// Receives every event after `delegate`, for components that listen side by side.
    public let multiDelegate = CentralManagerMultiDelegate()
    /// The BlueZ session this manager and its peripherals share.
    let session: BlueZSession
    var callbacks: CallbackQueue { session.callbacks }
    private let delegateBox = Locked<WeakDelegate>(WeakDelegate())

    private struct WeakDelegate { weak var value: CentralManagerDelegate? }

    /// The primary delegate (held weakly, as CoreBluetooth does).
    public var delegate: CentralManagerDelegate? {
        get { delegateBox.value.value }
        set { delegateBox.value = WeakDelegate(value: newValue) }
    }

    /// The adapter and bluetoothd as this manager sees them (shared with the peripheral role).
    let adapterWatch: AdapterWatch

    // Loop-confined state.
    @BleLoop var cache: ObjectCache? { session.cache }
    @BleLoop var adapterPath: ObjectPath? { adapterWatch.adapterPath }
    @BleLoop var currentState: ManagerState = .unknown
    @BleLoop var currentStateError: BleError? { adapterWatch.stateError }
    @BleLoop var peripheralsByAddress: [String: Peripheral] = [:]
    @BleLoop var scan: ScanRequest?
    /// This client's discovery session on the adapter (see `DiscoveryPhase`).
    @BleLoop var discovery = DiscoveryPhase.idle
    @BleLoop var restoredOnce = false
    @BleLoop var closed = false
    /// `removeBond` completions waiting for their device object to go (bluetoothd replies to
    /// RemoveDevice of a connected device before it removes the object).
    @BleLoop var removalWaiters: [ObjectPath: [@BleLoop () -> Void]] = [:]

    struct ScanRequest {
        var services: [BluetoothUUID]?
        var options: ScanOptions
        var reported: Set<String> = []
    }

    /// Starts a manager; `centralManagerDidUpdateState` follows once bluetoothd has answered.
    ///
    /// - Parameters:
    ///   - delegate: the primary delegate (weak).
    ///   - queue: where callbacks run; nil means BleKit's loop thread.
    ///   - options: bus, adapter, timeouts and retry policy.
    public init(delegate: CentralManagerDelegate?, queue: DispatchQueue?, options: CentralManagerOptions = CentralManagerOptions()) {
        self.options = options
        let session = BlueZSession(options: options, callbacks: CallbackQueue(queue: queue))
        self.session = session
        adapterWatch = AdapterWatch(session: session, configuration: AdapterWatch.Configuration(
            wanted: options.adapter, powerOn: options.powerOnAdapter, returnTimeout: options.bluetoothdReturnTimeout, role: .central))
        super.init()
        delegateBox.value = WeakDelegate(value: delegate)
        LoopBridge.async { [self] in
            Task { @BleLoop in await self.open() }
        }
    }

    deinit {
        // Released by the app: what is still pending on its peripherals ends with a typed error
        // (their delegates hear it) instead of never ending.
        let session = self.session
        LoopBridge.async { session.close(.managerReleased) }
    }

    /// A manager with `CentralManagerOptions.defaults`, as `CBCentralManager(delegate:queue:)`.
    public convenience init(delegate: CentralManagerDelegate?, queue: DispatchQueue?) {
        self.init(delegate: delegate, queue: queue, options: CentralManagerOptions.defaults)
    }

    // MARK: Public state

    /// The adapter's state as seen by this manager.
    public override var state: ManagerState { LoopBridge.sync { self.currentState } }
    /// Why `state` is `unsupported` or `unauthorized` (no bus, access denied, no bluetoothd), if known.
    public override var stateError: BleError? { LoopBridge.sync { self.currentStateError } }
    /// True between `scanForPeripherals` and `stopScan` (also while waiting for the daemon to return).
    public var isScanning: Bool { LoopBridge.sync { self.scan != nil } }
    /// The adapter in use (`hci0`), when one is.
    public var adapterName: String? { LoopBridge.sync { self.adapterPath.map { String($0.lastElement) } } }
    /// The adapter's address, when one is in use.
    public var adapterAddress: String? { LoopBridge.sync { self.currentAdapterAddress } }

    // MARK: Scanning

    /// Starts discovery; `didDiscover` reports matching peripherals.
    ///
    /// BlueZ ORs the discovery filters of every client, so BleKit checks services, RSSI and
    /// pattern itself before reporting. A scan requested while bluetoothd is away starts when it returns.
    public func scanForPeripherals(withServices services: [BluetoothUUID]?, options: ScanOptions = ScanOptions()) {
        LoopBridge.async { self.startScan(services: services, options: options) }
    }

    /// CoreBluetooth's spelling, with its options dictionary.
    public func scanForPeripherals(withServices services: [BluetoothUUID]?, options: [String: Any]?) {
        scanForPeripherals(withServices: services, options: ScanOptions(dictionary: options))
    }

    /// Stops discovery. `NotReady` (adapter off) and "No discovery started" are not errors here.
    public func stopScan() {
        LoopBridge.async { self.endScan() }
    }

    // MARK: Connections

    /// Connects, then waits for `Connected` and `ServicesResolved`; `didConnect` or
    /// `didFailToConnect` follows (after `options.connectTimeout` at the latest).
    public func connect(_ peripheral: Peripheral, options: [String: Any]? = nil) {
        LoopBridge.async { self.startConnect(peripheral) }
    }

    /// Disconnects (or cancels a pending connect). Pending operations fail with `.disconnected`
    /// at once; `didDisconnectPeripheral` (error nil) follows, or `didFailToConnect(.cancelled)` for a pending connect.
    public func cancelPeripheralConnection(_ peripheral: Peripheral) {
        LoopBridge.async { self.cancelConnection(peripheral) }
    }

    /// Connected peripherals on this adapter offering any of `serviceUUIDs` (all when empty).
    public func retrieveConnectedPeripherals(withServices serviceUUIDs: [BluetoothUUID]) -> [Peripheral] {
        LoopBridge.sync { self.connectedPeripherals(serviceUUIDs) }
    }

    /// Peripherals this adapter knows with these identifiers (see `Peripheral.identifier`).
    public func retrievePeripherals(withIdentifiers identifiers: [UUID]) -> [Peripheral] {
        LoopBridge.sync { self.knownPeripherals(identifiers) }
    }

    /// Stops using the bus: scans end, links stay as BlueZ has them.
    public func close() {
        LoopBridge.async { self.shutDown() }
    }

    // MARK: Escape hatch

    /// The underlying D-Bus connection, for BlueZ features BleCore does not wrap. Loop-isolated.
    @BleLoop public var dbusConnection: Connection? { session.connection }

    // MARK: - Loop side

    @BleLoop var currentAdapterAddress: String? { adapterWatch.adapterAddress }

    @BleLoop private func open() async {
        guard !closed else { return }
        session.central = self
        adapterWatch.onEvent = { [weak self] event in self?.adapterEvent(event) }
        session.onObjectEvent = { [weak self] event in self?.cacheEvent(event) }
        session.onBusLost = { [weak self] in
            guard let self, !self.closed else { return }
            self.adapterWatch.busFailed(.noBus("the D-Bus connection closed"), lost: true)
        }
        do {
            try await session.open()
        } catch {
            BleLog.error("cannot open the D-Bus bus: \(error)")
            adapterWatch.busFailed(error, lost: false)
        }
    }

    @BleLoop private func shutDown() {
        guard !closed else { return }
        if scan != nil { endScan() }
        closed = true
        adapterWatch.stop()
        for peripheral in peripheralsByAddress.values { peripheral.linkLost(error: .cancelled, report: false) }
        session.close(.cancelled)
    }

    @BleLoop func setState(_ newState: ManagerState) {
        guard newState != currentState else { return }
        BleLog.info("central state \(currentState) → \(newState)")
        currentState = newState
        AuthorizationProbe.learned(state: newState, error: currentStateError)
        emit { $0.centralManagerDidUpdateState(self) }
    }

    /// Calls every delegate, on the callback queue.
    @BleLoop func emit(_ body: @escaping @Sendable (CentralManagerDelegate) -> Void) {
        // Delegates are the app's objects, called only on the queue the app chose (as
        // CoreBluetooth does); the box carries them there and nothing else touches them.
        let primary = Unchecked(delegate)
        let multi = multiDelegate.isEmpty ? nil : multiDelegate
        callbacks.deliver {
            if let delegate = primary.value { body(delegate) }
            if let multi { body(multi) }
        }
    }

    /// Calls a BlueZ method through the session; `completion` runs on the loop.
    @BleLoop func callBlueZ(_ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = [],
                            timeout: Duration? = nil, address: String? = nil,
                            completion: @escaping @BleLoop (Result<[DBusValue], BleError>) -> Void) {
        session.call(path, interface, member, arguments, timeout: timeout, address: address, completion: completion)
    }
}
