import BleDBus
import Dispatch
import Foundation

/// The central role over BlueZ, shaped like CoreBluetooth's `CBCentralManager`.
///
/// Methods may be called from any thread; they hop onto BleKit's loop (`BleLoop`), where all
/// state lives. Delegate callbacks arrive in order on the loop, or on `queue` when one is
/// given. Everything reads one cache of BlueZ's objects, kept current from its signals; the
/// manager follows adapters appearing, powering and disappearing, and bluetoothd leaving and
/// returning on the bus (pending operations fail, peripherals disconnect, the cache is rebuilt
/// and a requested scan resumes).
public final class CentralManager: @unchecked Sendable {
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

    // Loop-confined state.
    /// Retries a failed GetManagedObjects.
    @BleLoop private var loadRetry: LoopTimer?
    /// Runs while bluetoothd is away: `resetting` turns into `unsupported` when it fires.
    @BleLoop private var daemonAbsence: LoopTimer?
    @BleLoop var cache: ObjectCache? { session.cache }
    @BleLoop var adapterPath: ObjectPath?
    @BleLoop var currentState: ManagerState = .unknown
    @BleLoop var currentStateError: BleError?
    @BleLoop var peripheralsByAddress: [String: Peripheral] = [:]
    @BleLoop var scan: ScanRequest?
    @BleLoop var discoveryActive = false
    @BleLoop var restoredOnce = false
    @BleLoop var closed = false

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
        self.session = BlueZSession(options: options, callbacks: CallbackQueue(queue: queue))
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

    /// A manager with default options, as `CBCentralManager(delegate:queue:)`.
    public convenience init(delegate: CentralManagerDelegate?, queue: DispatchQueue?) {
        self.init(delegate: delegate, queue: queue, options: CentralManagerOptions())
    }

    // MARK: Public state

    /// The adapter's state as seen by this manager.
    public var state: ManagerState { LoopBridge.sync { self.currentState } }
    /// Why `state` is `unsupported` or `unauthorized` (no bus, access denied, no bluetoothd), if known.
    public var stateError: BleError? { LoopBridge.sync { self.currentStateError } }
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

    @BleLoop var currentAdapterAddress: String? {
        adapterPath.flatMap { cache?.properties($0, BlueZ.adapter)?.string("Address") }
    }

    @BleLoop private func open() async {
        guard !closed else { return }
        session.onCentralEvent = { [weak self] event in self?.cacheEvent(event) }
        session.onBusLost = { [weak self] in self?.busLost() }
        do {
            try await session.open()
        } catch {
            BleLog.error("cannot open the D-Bus bus: \(error)")
            currentStateError = error
            setState(.unsupported)
        }
    }

    @BleLoop private func busLost() {
        guard !closed else { return }
        daemonLost(error: .noBus("the D-Bus connection closed"))
        daemonAbsence?.cancel()
        currentStateError = .noBus("the D-Bus connection closed")
        setState(.unsupported)
    }

    @BleLoop private func shutDown() {
        guard !closed else { return }
        if scan != nil { endScan() }
        closed = true
        daemonAbsence?.cancel()
        loadRetry?.cancel()
        for peripheral in peripheralsByAddress.values { peripheral.linkLost(error: .cancelled, report: false) }
        session.close(.cancelled)
    }

    @BleLoop func setState(_ newState: ManagerState) {
        guard newState != currentState else { return }
        BleLog.info("central state \(currentState) → \(newState)")
        currentState = newState
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

    // MARK: Cache events

    @BleLoop private func cacheEvent(_ event: CacheEvent) {
        switch event {
        case .loaded:
            currentStateError = nil
            daemonAbsence?.cancel()
            daemonAbsence = nil
            chooseAdapter()
            adoptKnownDevices()
        case .loadFailed(let error):
            currentStateError = error
            if case .accessDenied = error { return setState(.unauthorized) }
            setState(.unsupported)
            // A daemon that just claimed its name may not answer GetManagedObjects yet; try
            // again while it is on the bus.
            loadRetry = LoopTimer.scheduled(after: .seconds(1)) { [weak self] in self?.cache?.reload() }
        case .daemonLost:
            daemonLost(error: .bluetoothRestarted)
            watchDaemonAbsence()
        case .added(let path, let interfaces):
            if interfaces.contains(BlueZ.adapter) { chooseAdapter() }
            if interfaces.contains(BlueZ.device) { deviceAppeared(path) }
        case .removed(let path, let interfaces, let last):
            if interfaces.contains(BlueZ.adapter), path == adapterPath {
                adapterPath = nil
                for peripheral in peripheralsByAddress.values { peripheral.linkLost(error: .poweredOff, report: true) }
                chooseAdapter()
            }
            if interfaces.contains(BlueZ.device), let address = last[BlueZ.device]?.string("Address") {
                peripheralsByAddress[address]?.deviceRemoved()
            }
        case .changed(let path, let interface, let changed, _):
            switch interface {
            case BlueZ.adapter where path == adapterPath:
                if changed["Powered"] != nil || changed["PowerState"] != nil { updateStateFromAdapter() }
                if changed["Discovering"] == .boolean(false), discoveryActive, scan != nil, currentState == .poweredOn {
                    // Another client or a power cycle ended discovery; our request still stands.
                    discoveryActive = false
                    beginDiscovery()
                }
            case BlueZ.device:
                // The session already gave the change to the device's peripheral, if any.
                guard path.parent == adapterPath else { break }
                if session.peripheral(at: path) == nil { deviceAppeared(path) }
                if scan != nil, Self.advertisingKeys.contains(where: { changed[$0] != nil }) {
                    considerDiscovery(path)
                }
            default:
                break
            }
        }
    }

    static let advertisingKeys = ["RSSI", "ManufacturerData", "ServiceData", "Name", "Alias", "UUIDs", "TxPower"]

    @BleLoop private func chooseAdapter() {
        guard let cache, cache.isLoaded else { return }
        let adapters = cache.all(with: BlueZ.adapter)
        if let current = adapterPath, adapters.contains(current) { return updateStateFromAdapter() }
        let wanted = options.adapter?.uppercased()
        if let wanted {
            adapterPath = adapters.first {
                $0.lastElement.uppercased() == wanted || cache.properties($0, BlueZ.adapter)?.string("Address")?.uppercased() == wanted
            }
        } else {
            adapterPath = adapters.first { cache.properties($0, BlueZ.adapter)?.bool("Powered") == true } ?? adapters.first
        }
        if let adapterPath { BleLog.info("using adapter \(adapterPath)") }
        updateStateFromAdapter()
    }

    @BleLoop private func updateStateFromAdapter() {
        guard let cache, cache.isLoaded else { return }
        guard let adapterPath, let properties = cache.properties(adapterPath, BlueZ.adapter) else {
            currentStateError = nil
            return setState(.unsupported)
        }
        // PowerState exists only with experimental features (5.66 has none); Powered decides otherwise.
        let powerState = properties.string("PowerState")
        let powered = properties.bool("Powered") == true && (powerState == nil || powerState == "on")
        if !powered, options.powerOnAdapter, powerState != "off-blocked" {
            callBlueZ(adapterPath, BlueZ.properties, "Set", [.string(BlueZ.adapter), .string("Powered"), .variant(.boolean(true))]) { result in
                if case .failure(let error) = result { BleLog.warning("could not power on \(adapterPath): \(error)") }
            }
        }
        let previous = currentState
        setState(powered ? .poweredOn : .poweredOff)
        if powered, previous != .poweredOn, scan != nil { beginDiscovery() }
        if !powered, previous == .poweredOn {
            discoveryActive = false
            for peripheral in peripheralsByAddress.values { peripheral.linkLost(error: .poweredOff, report: true) }
        }
    }

    /// bluetoothd left: fail everything, report disconnections, wait for its return.
    @BleLoop private func daemonLost(error: BleError) {
        discoveryActive = false
        adapterPath = nil
        // The new daemon's devices are new objects: report them again when the scan resumes.
        scan?.reported.removeAll()
        setState(.resetting)
        for peripheral in peripheralsByAddress.values { peripheral.linkLost(error: error, report: true) }
        for peripheral in peripheralsByAddress.values { peripheral.forgetObjects() }
    }

    /// bluetoothd does not come back on its own (not restarted, not installed): after
    /// `options.bluetoothdReturnTimeout` the state says so instead of `resetting` forever.
    @BleLoop private func watchDaemonAbsence() {
        daemonAbsence?.cancel()
        let limit = options.bluetoothdReturnTimeout
        daemonAbsence = LoopTimer.scheduled(after: limit) { [weak self] in
            guard let self, !self.closed, self.currentState == .resetting else { return }
            self.daemonAbsence = nil
            self.currentStateError = .serviceUnknown("bluetoothd left the bus and has not returned within \(limit)")
            self.setState(.unsupported)
        }
    }

    @BleLoop private func adoptKnownDevices() {
        guard let cache, let adapterPath else { return }
        var restored: [Peripheral] = []
        for path in cache.children(of: adapterPath, with: BlueZ.device) where path.parent == adapterPath {
            guard let peripheral = deviceAppeared(path) else { continue }
            let properties = cache.properties(path, BlueZ.device)
            if options.restoreConnectedPeripherals, !restoredOnce, properties?.bool("Connected") == true {
                peripheral.adoptConnection()
                restored.append(peripheral)
            }
        }
        if options.restoreConnectedPeripherals, !restoredOnce {
            restoredOnce = true
            let dict: [String: Any] = [CBCentralManagerRestoredStatePeripheralsKey: restored]
            let box = Unchecked(dict)
            emit { $0.centralManager(self, willRestoreState: box.value) }
        }
    }

    /// The Peripheral for a device object of our adapter, created on first sight.
    @BleLoop @discardableResult func deviceAppeared(_ path: ObjectPath) -> Peripheral? {
        guard let cache, path.parent == adapterPath, let properties = cache.properties(path, BlueZ.device),
              let address = properties.string("Address"), let adapterAddress = currentAdapterAddress else { return nil }
        if let existing = peripheralsByAddress[address] {
            existing.attach(path: path)
            session.route(path, to: existing)
            return existing
        }
        let peripheral = Peripheral(manager: self, path: path, address: address,
                                    identifier: PeripheralIdentifier.make(adapterAddress: adapterAddress, deviceAddress: address))
        peripheralsByAddress[address] = peripheral
        session.route(path, to: peripheral)
        if scan != nil { considerDiscovery(path) }
        return peripheral
    }

    @BleLoop func peripheral(at path: ObjectPath) -> Peripheral? {
        session.peripheral(at: path) ?? peripheralsByAddress.values.first { $0.devicePath == path }
    }

    // MARK: Scan on the loop

    @BleLoop private func startScan(services: [BluetoothUUID]?, options: ScanOptions) {
        let restart = scan != nil
        scan = ScanRequest(services: services?.isEmpty == true ? nil : services, options: options)
        guard currentState == .poweredOn else {
            BleLog.info("scan requested while \(currentState); it starts when the adapter is powered on")
            return
        }
        if restart && discoveryActive {
            setDiscoveryFilter()
        } else {
            beginDiscovery()
        }
        // Devices BlueZ already knows and hears are reported from their next advertisement.
    }

    @BleLoop private func discoveryFilter() -> DBusValue {
        guard let scan else { return BlueZShapes.propertyDictionary([]) }
        var pairs: [(String, DBusValue)] = [
            ("Transport", .string(scan.options.transport.rawValue)),
            // 5.66's code default is false despite the docs (bluez doc fix 5f901b537): say it.
            ("DuplicateData", .boolean(scan.options.allowDuplicates)),
        ]
        if let services = scan.services {
            pairs.append(("UUIDs", .array(element: .string, services.map { .string($0.uuidString128) })))
        }
        if let rssi = scan.options.rssiThreshold { pairs.append(("RSSI", .int16(Int16(clamping: rssi)))) }
        if let pattern = scan.options.pattern { pairs.append(("Pattern", .string(pattern))) }
        return BlueZShapes.propertyDictionary(pairs)
    }

    @BleLoop private func setDiscoveryFilter(then next: (@BleLoop () -> Void)? = nil) {
        guard let adapterPath else { return }
        callBlueZ(adapterPath, BlueZ.adapter, "SetDiscoveryFilter", [discoveryFilter()]) { result in
            if case .failure(let error) = result { BleLog.warning("SetDiscoveryFilter failed: \(error); scanning unfiltered") }
            next?()
        }
    }

    @BleLoop private func beginDiscovery() {
        guard let adapterPath, scan != nil, !discoveryActive else { return }
        discoveryActive = true
        setDiscoveryFilter { [weak self] in
            guard let self, self.scan != nil, self.adapterPath == adapterPath else { return }
            self.callBlueZ(adapterPath, BlueZ.adapter, "StartDiscovery") { [weak self] result in
                guard let self else { return }
                switch result {
                case .success, .failure(.inProgress):
                    // InProgress: this client already has a session on the adapter (bleak #859).
                    BleLog.info("discovery started on \(adapterPath)")
                case .failure(.notReady):
                    // The adapter went off on the way: the request stands and resumes at poweredOn.
                    BleLog.info("StartDiscovery: adapter not ready; the scan resumes when it is powered on")
                    self.discoveryActive = false
                case .failure(let error):
                    BleLog.warning("StartDiscovery failed: \(error)")
                    self.discoveryActive = false
                    self.scan = nil
                    self.emit { $0.centralManager(self, didFailToScan: error) }
                }
            }
        }
    }

    @BleLoop private func endScan() {
        scan = nil
        guard discoveryActive, let adapterPath else { return }
        discoveryActive = false
        callBlueZ(adapterPath, BlueZ.adapter, "StopDiscovery") { result in
            switch result {
            case .success, .failure(.notReady), .failure(.failed), .failure(.bluetoothRestarted), .failure(.noBus):
                // NotReady: the adapter went off, discovery is over anyway (HA #83673). No bus:
                // our connection closed (close()), and bluetoothd ends a leaving client's session.
                break
            case .failure(let error):
                BleLog.warning("StopDiscovery failed: \(error)")
            }
        }
    }

    @BleLoop private func considerDiscovery(_ path: ObjectPath) {
        guard var request = scan, let cache, let properties = cache.properties(path, BlueZ.device),
              let address = properties.string("Address"), let peripheral = peripheralsByAddress[address] else { return }
        // Without RSSI the device was not heard in this discovery (RSSI is invalidated when it stops).
        guard let rssi = properties[ "RSSI"]?.as(Int16.self) else { return }
        let advertisement = Self.advertisement(from: properties)
        if let services = request.services {
            let offered = Set(advertisement.serviceUUIDs).union(advertisement.serviceData.keys)
            guard services.contains(where: offered.contains) else { return }
        }
        if let threshold = request.options.rssiThreshold, Int(rssi) < threshold { return }
        if let pattern = request.options.pattern {
            let name = advertisement.localName ?? ""
            guard address.uppercased().hasPrefix(pattern.uppercased()) || name.hasPrefix(pattern) else { return }
        }
        if !request.options.allowDuplicates {
            guard !request.reported.contains(address) else { return }
            request.reported.insert(address)
            scan = request
        }
        emit { $0.centralManager(self, didDiscover: peripheral, advertisementData: advertisement, rssi: Int(rssi)) }
    }

    static func advertisement(from properties: PropertyMap) -> AdvertisementData {
        let manufacturer = properties["ManufacturerData"].flatMap { try? BlueZShapes.manufacturerData($0) } ?? [:]
        var serviceData: [BluetoothUUID: Data] = [:]
        let rawServiceData: [String: Data] = properties["ServiceData"].flatMap { try? BlueZShapes.serviceData($0) } ?? [:]
        for (key, value) in rawServiceData {
            if let uuid = BluetoothUUID(key) { serviceData[uuid] = value }
        }
        return AdvertisementData(localName: properties.string("Name") ?? properties.string("Alias").flatMap { alias in
                                     // bluetoothd shows the address with dashes as the alias of a nameless device.
                                     alias == properties.string("Address")?.replacingOccurrences(of: ":", with: "-") ? nil : alias
                                 },
                                 manufacturerData: manufacturer, serviceData: serviceData,
                                 serviceUUIDs: (properties.strings("UUIDs") ?? []).compactMap(BluetoothUUID.init),
                                 txPowerLevel: properties["TxPower"]?.as(Int16.self).map(Int.init))
    }

    // MARK: Retrieval

    @BleLoop private func connectedPeripherals(_ services: [BluetoothUUID]) -> [Peripheral] {
        guard let cache, let adapterPath else { return [] }
        return cache.children(of: adapterPath, with: BlueZ.device).compactMap { path -> Peripheral? in
            guard let properties = cache.properties(path, BlueZ.device), properties.bool("Connected") == true else { return nil }
            if !services.isEmpty {
                let offered = Set((properties.strings("UUIDs") ?? []).compactMap(BluetoothUUID.init))
                guard services.contains(where: offered.contains) else { return nil }
            }
            return deviceAppeared(path)
        }
    }

    @BleLoop private func knownPeripherals(_ identifiers: [UUID]) -> [Peripheral] {
        if let cache, let adapterPath {
            for path in cache.children(of: adapterPath, with: BlueZ.device) { deviceAppeared(path) }
        }
        return identifiers.compactMap { id in peripheralsByAddress.values.first { $0.identifier == id } }
    }

    // MARK: Connect on the loop

    @BleLoop private func startConnect(_ peripheral: Peripheral) {
        guard currentState == .poweredOn else {
            return emit { $0.centralManager(self, didFailToConnect: peripheral, error: BleError.poweredOff) }
        }
        peripheral.beginConnect()
    }

    @BleLoop private func cancelConnection(_ peripheral: Peripheral) {
        peripheral.cancelConnection()
    }
}
