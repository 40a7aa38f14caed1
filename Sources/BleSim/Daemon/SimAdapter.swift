import BleDBus
import BlueZVocabulary
import Foundation

/// A simulated controller: `org.bluez.Adapter1` and its managers at `/org/bluez/hciN`, with
/// per-client discovery sessions and the devices it has heard.
@BleLoop
public final class SimAdapter {
    /// `hci0`, …
    public let name: String
    /// Its address.
    public let address: String
    /// Its object path.
    public let path: ObjectPath
    /// Powered now.
    public private(set) var powered: Bool
    /// Discovering now (any client's session).
    public var discovering: Bool { !sessions.isEmpty }
    /// The devices it exports, by address.
    public private(set) var devices: [String: SimDevice] = [:]
    /// Path loss from this adapter to peripherals, by address: added to the RSSI this adapter
    /// hears, so adapters of one simulator can stand in different places (fleet scenarios).
    public var rssiOffsets: [String: Int16] = [:]

    unowned let simulator: Simulator
    let systemName: String
    private var alias: String?
    private var discoverable = false
    /// Whether the adapter is discoverable (then bluetoothd adds Flags to every connectable advertisement).
    var isDiscoverable: Bool { discoverable }
    private var discoverableTimeout: UInt32 = 180
    private(set) var pairable = false
    private var pairableTimeout: UInt32 = 0
    private var powerChangeInFlight = false
    /// Discovery sessions and filters by client unique name.
    private var sessions: [String: DiscoveryFilter] = [:]
    /// Clients whose StopDiscovery waits for a slow controller (`FaultInjector.slowDiscoveryStop`):
    /// still in `sessions` until it completes, as in bluetoothd 5.66's `discovery_stop`.
    private var stoppingSessions: Set<String> = []
    /// Filters set before a client's StartDiscovery.
    private var pendingFilters: [String: DiscoveryFilter] = [:]
    private var exported = false
    let peripheralRole: PeripheralRoleBridge

    init(spec: Simulator.AdapterSpec, simulator: Simulator) {
        name = spec.name
        address = spec.address.uppercased()
        path = BlueZ.Paths.adapter(named: spec.name) ?? ObjectPath(built: BlueZ.rootPath.rawValue + "/" + spec.name)
        powered = spec.powered
        systemName = spec.systemName
        self.simulator = simulator
        peripheralRole = PeripheralRoleBridge()
        peripheralRole.adapter = self
        pairable = simulator.agents.hasAgents
    }

    var objects: ObjectRegistry? { simulator.connection?.objects }

    // MARK: Export

    func export() {
        guard let objects else { return }
        exported = true
        objects.register(path, interfaces: [
            adapterInterface(),
            peripheralRole.gattManagerInterface(),
            ExportedInterface(BlueZ.Media1.interface, methods: [
                ExportedMethod(BlueZ.Media1.Method.registerEndpoint, in: [ArgumentDescription("endpoint", .objectPath),
                                                        ArgumentDescription("properties", .dictionary(key: .string, value: .variant))]) { BlueZError.notSupported($0) },
                ExportedMethod(BlueZ.Media1.Method.unregisterEndpoint, in: [ArgumentDescription("endpoint", .objectPath)]) { BlueZError.doesNotExist($0) },
                ExportedMethod(BlueZ.Media1.Method.registerPlayer, in: [ArgumentDescription("player", .objectPath),
                                                      ArgumentDescription("properties", .dictionary(key: .string, value: .variant))]) { BlueZError.notSupported($0) },
                ExportedMethod(BlueZ.Media1.Method.unregisterPlayer, in: [ArgumentDescription("player", .objectPath)]) { BlueZError.doesNotExist($0) },
                ExportedMethod(BlueZ.Media1.Method.registerApplication, in: [ArgumentDescription("application", .objectPath),
                                                           ArgumentDescription("options", .dictionary(key: .string, value: .variant))]) { BlueZError.notSupported($0) },
                ExportedMethod(BlueZ.Media1.Method.unregisterApplication, in: [ArgumentDescription("application", .objectPath)]) { BlueZError.doesNotExist($0) },
            ], properties: [
                ExportedProperty(BlueZ.Media1.supportedUUIDs) {
                    .array(element: .string, SimAdapter.mediaSupportedUUIDs.map { .string($0) })
                },
            ]),
            ExportedInterface(BlueZ.NetworkServer1.interface, methods: [
                ExportedMethod(BlueZ.NetworkServer1.Method.register, in: [ArgumentDescription("uuid", .string), ArgumentDescription("bridge", .string)]) { BlueZError.notSupported($0) },
                ExportedMethod(BlueZ.NetworkServer1.Method.unregister, in: [ArgumentDescription("uuid", .string)]) { BlueZError.doesNotExist($0) },
            ]),
            peripheralRole.advertisingManagerInterface(),
        ])
    }

    private var currentAlias: String { alias ?? systemName }

    private func adapterInterface() -> ExportedInterface {
        ExportedInterface(BlueZ.Adapter1.interface, methods: [
            ExportedMethod(BlueZ.Adapter1.Method.startDiscovery) { [weak self] call in self?.startDiscovery(call) },
            ExportedMethod(BlueZ.Adapter1.Method.setDiscoveryFilter, in: [ArgumentDescription("properties", .dictionary(key: .string, value: .variant))]) {
                [weak self] call in self?.setDiscoveryFilter(call)
            },
            ExportedMethod(BlueZ.Adapter1.Method.stopDiscovery) { [weak self] call in self?.stopDiscovery(call) },
            ExportedMethod(BlueZ.Adapter1.Method.removeDevice, in: [ArgumentDescription("device", .objectPath)]) { [weak self] call in
                self?.removeDevice(call)
            },
            ExportedMethod(BlueZ.Adapter1.Method.getDiscoveryFilters, out: [ArgumentDescription("filters", .array(.string))]) { call in
                call.reply([.array(element: .string, DiscoveryFilter.supportedKeys.map { .string($0) })])
            },
        ], properties: [
            ExportedProperty(BlueZ.Adapter1.address) { [weak self] in self.map { .string($0.address) } },
            ExportedProperty(BlueZ.Adapter1.addressType) { .string("public") },
            ExportedProperty(BlueZ.Adapter1.name) { [weak self] in self.map { .string($0.systemName) } },
            ExportedProperty(BlueZ.Adapter1.alias, access: .readwrite, get: { [weak self] in self.map { .string($0.currentAlias) } },
                             set: { [weak self] value, call in
                                 guard let self, case .string(let text) = value else { return }
                                 let before = self.currentAlias
                                 self.alias = text.isEmpty ? nil : text
                                 call.reply()
                                 if before != self.currentAlias { self.changed([BlueZ.Adapter1.alias.name]) }
                             }),
            ExportedProperty(BlueZ.Adapter1.deviceClass) { .uint32(0) },
            ExportedProperty(BlueZ.Adapter1.powered, access: .readwrite, get: { [weak self] in self.map { .boolean($0.powered) } },
                             set: { [weak self] value, call in
                                 guard let self, case .boolean(let on) = value else { return }
                                 self.setPowered(on, call: call)
                             }),
            boolProperty(BlueZ.Adapter1.discoverable, get: { $0.discoverable }, set: { $0.discoverable = $1 }),
            uint32Property(BlueZ.Adapter1.discoverableTimeout, get: { $0.discoverableTimeout }, set: { $0.discoverableTimeout = $1 }),
            boolProperty(BlueZ.Adapter1.pairable, get: { $0.pairable }, set: { $0.pairable = $1 }),
            uint32Property(BlueZ.Adapter1.pairableTimeout, get: { $0.pairableTimeout }, set: { $0.pairableTimeout = $1 }),
            ExportedProperty(BlueZ.Adapter1.discovering) { [weak self] in self.map { .boolean($0.discovering) } },
            ExportedProperty(BlueZ.Adapter1.uuids) { [weak self] in
                .array(element: .string, (self?.advertisedUUIDs ?? []).map { .string($0) })
            },
            ExportedProperty(BlueZ.Adapter1.modalias) { .string("usb:v1D6Bp0246d0542") },
            ExportedProperty(BlueZ.Adapter1.roles) { .array(element: .string, [.string("central"), .string("peripheral")]) },
            // Declared but never sent: its "exists" callback is false without experimental features.
            ExportedProperty(BlueZ.Adapter1.experimentalFeatures) { nil },
        ])
    }

    /// What bluetoothd 5.66 lists with no application registered (seen in the VM on both
    /// adapters, in this order): GATT, GAP, PnP Information, A/V Remote Control Target and
    /// Controller, Device Information. They are the records its own services and plugins add.
    static let daemonServiceUUIDs = ["1801", "1800", "1200", "110c", "110e", "180a"].map { "0000" + $0 + SimUUID.baseSuffix }

    /// `Media1.SupportedUUIDs` of bluetoothd 5.66 without experimental features: Audio Source
    /// and Audio Sink (seen in the VM on both adapters).
    static let mediaSupportedUUIDs = ["110a", "110b"].map { "0000" + $0 + SimUUID.baseSuffix }

    /// A registered application's services come before the daemon's own (seen in the VM with one
    /// application of one service).
    private var advertisedUUIDs: [String] {
        peripheralRole.applicationServiceUUIDs + Self.daemonServiceUUIDs
    }

    private func boolProperty(_ key: PropertyKey<Bool>, get: @escaping @BleLoop @Sendable (SimAdapter) -> Bool,
                              set: @escaping @BleLoop @Sendable (SimAdapter, Bool) -> Void) -> ExportedProperty {
        ExportedProperty(key, access: .readwrite, get: { [weak self] in self.map { .boolean(get($0)) } },
                         set: { [weak self] value, call in
                             guard let self, case .boolean(let flag) = value else { return }
                             let before = get(self)
                             set(self, flag)
                             // Adapter1: the reply comes before the signal.
                             call.reply()
                             if before != flag { self.changed([key.name]) }
                         })
    }

    private func uint32Property(_ key: PropertyKey<UInt32>, get: @escaping @BleLoop @Sendable (SimAdapter) -> UInt32,
                                set: @escaping @BleLoop @Sendable (SimAdapter, UInt32) -> Void) -> ExportedProperty {
        ExportedProperty(key, access: .readwrite, get: { [weak self] in self.map { .uint32(get($0)) } },
                         set: { [weak self] value, call in
                             guard let self, case .uint32(let number) = value else { return }
                             let before = get(self)
                             set(self, number)
                             call.reply()
                             if before != number { self.changed([key.name]) }
                         })
    }

    func changed(_ names: [String], invalidated: [String] = []) {
        objects?.emitPropertiesChanged(path: path, interface: BlueZ.Adapter1.interface, names: names, invalidated: invalidated)
    }

    func setPairable(_ flag: Bool) {
        guard pairable != flag else { return }
        pairable = flag
        changed([BlueZ.Adapter1.pairable.name])
    }

    // MARK: Power

    /// Powers the adapter on or off from the test side (as rfkill or a user would).
    public func setPowered(_ on: Bool) {
        guard powered != on else { return }
        applyPower(on)
    }

    private func setPowered(_ on: Bool, call: IncomingCall) {
        guard !powerChangeInFlight else {
            // bluetoothd answers a racing second Set with an empty message.
            call.fail(name: BlueZ.ErrorName.busy, message: "")
            return
        }
        guard on != powered else {
            call.reply()
            return
        }
        powerChangeInFlight = true
        simulator.clock.after(simulator.timing.scaled(milliseconds: 50)) { [weak self] in
            guard let self else { return }
            self.powerChangeInFlight = false
            call.reply()
            self.applyPower(on)
        }
    }

    private func applyPower(_ on: Bool) {
        if !on {
            for device in devices.values.sorted(by: { $0.address < $1.address }) where device.isConnectedOrConnecting {
                device.adapterPoweredOff()
            }
            peripheralRole.adapterPoweredOff()
            sessions.removeAll()
            powered = false
            // bluetoothd includes Discovering even when it was already false.
            changed([BlueZ.Adapter1.powered.name, BlueZ.Adapter1.discovering.name])
        } else {
            powered = true
            changed([BlueZ.Adapter1.powered.name])
        }
    }

    // MARK: Discovery

    private func startDiscovery(_ call: IncomingCall) {
        guard powered else { return BlueZError.notReady(call) }
        guard sessions[call.sender] == nil else { return BlueZError.inProgress(call, BlueZ.ErrorMessage.operationAlreadyInProgress) }
        let wasDiscovering = discovering
        sessions[call.sender] = pendingFilters[call.sender] ?? DiscoveryFilter()
        call.reply()
        if !wasDiscovering { changed([BlueZ.Adapter1.discovering.name]) }
        simulator.scanStarted(on: self)
    }

    private func setDiscoveryFilter(_ call: IncomingCall) {
        guard powered else { return BlueZError.notReady(call) }
        guard let filter = DiscoveryFilter(call.arguments[0]) else { return BlueZError.invalidArguments(call) }
        pendingFilters[call.sender] = filter
        if sessions[call.sender] != nil { sessions[call.sender] = filter }
        call.reply()
    }

    private func stopDiscovery(_ call: IncomingCall) {
        guard powered else { return BlueZError.notReady(call) }
        guard !stoppingSessions.contains(call.sender) else {
            return BlueZError.inProgress(call, BlueZ.ErrorMessage.operationAlreadyInProgress)
        }
        if sessions.count == 1, sessions[call.sender] != nil, let delay = simulator.faults.discoveryStopDelay() {
            // The last session, on a slow controller: answered when the controller confirms.
            let sender = call.sender
            stoppingSessions.insert(sender)
            simulator.clock.after(.clampedMilliseconds(delay)) { [weak self] in
                call.reply()
                guard let self, self.stoppingSessions.remove(sender) != nil else { return }
                if self.sessions.removeValue(forKey: sender) != nil, self.sessions.isEmpty { self.endDiscovery() }
            }
            return
        }
        guard sessions.removeValue(forKey: call.sender) != nil else { return BlueZError.failed(call, BlueZ.ErrorMessage.noDiscoveryStarted) }
        call.reply()
        if sessions.isEmpty { endDiscovery() }
    }

    private func endDiscovery() {
        for device in devices.values.sorted(by: { $0.address < $1.address }) { device.discoveryStopped() }
        changed([BlueZ.Adapter1.discovering.name])
    }

    func clientLeft(_ client: String) {
        pendingFilters.removeValue(forKey: client)
        stoppingSessions.remove(client)
        if sessions.removeValue(forKey: client) != nil, sessions.isEmpty { endDiscovery() }
        for device in devices.values { device.clientLeft(client) }
        peripheralRole.clientLeft(client)
    }

    /// True when some session has no filter, or some filter admits `report` (filters are
    /// OR-merged across clients, as in bluetoothd).
    private func admits(_ report: AdvertisingReport) -> Bool {
        sessions.values.contains { $0.admits(report) }
    }

    private var duplicateData: Bool { sessions.values.contains { $0.duplicateData } }
    /// Any filter disables the default 8 dBm RSSI delta threshold.
    private var hasFilter: Bool { sessions.values.contains { $0 != DiscoveryFilter() } }

    /// One advertising report heard while scanning.
    func hear(_ report: AdvertisingReport, from peripheral: AirPeripheral, now: ContinuousClock.Instant) {
        var report = report
        if !rssiOffsets.isEmpty, let offset = rssiOffsets[report.address] { report.rssi = report.rssi &+ offset }
        guard powered, discovering, peripheral.hostAdapter !== self, admits(report) else { return }
        // A bonded peer's resolvable private address resolves to its identity (the IRK).
        if let device = devices[resolvedAddresses[report.address] ?? report.address] {
            device.advertisingReport(report, duplicateData: duplicateData, rssiThreshold: hasFilter ? 0 : 8, now: now)
        } else {
            let device = SimDevice(adapter: self, report: report, now: now)
            devices[report.address] = device
            device.export()
        }
    }

    /// Expires temporary devices TemporaryTimeout after their last report, even while
    /// discovery runs, as the real daemon does.
    func expireDevices(now: ContinuousClock.Instant, timeout: Duration) {
        for device in devices.values where device.isTemporary && now - device.lastSeen >= timeout {
            removeDeviceObject(device)
        }
    }

    /// A device object for an incoming connection from an app's central (peripheral role).
    func deviceForIncoming(address: String) -> SimDevice {
        if let existing = devices[address.uppercased()] { return existing }
        let device = SimDevice(adapter: self, incomingFrom: address.uppercased())
        devices[device.address] = device
        device.export()
        return device
    }

    // MARK: RemoveDevice

    private func removeDevice(_ call: IncomingCall) {
        guard case .objectPath(let target) = call.arguments[0],
              let device = devices.values.first(where: { $0.path == target }) else {
            return BlueZError.doesNotExist(call)
        }
        if device.isConnectedOrConnecting {
            device.disconnectForRemoval { [weak self] in
                call.reply()
                device.finishDisconnect()
                self?.removeDeviceObject(device)
            }
        } else {
            // While discovering bluetoothd removes the object before it replies.
            removeDeviceObject(device)
            call.reply()
        }
    }

    func removeDeviceObject(_ device: SimDevice) {
        guard devices[device.address] === device else { return }
        devices.removeValue(forKey: device.address)
        resolvedAddresses = resolvedAddresses.filter { $0.value != device.address }
        device.unexport()
    }

    /// Advertised (resolvable private) addresses by the identity address pairing revealed.
    private var resolvedAddresses: [String: String] = [:]

    /// A device's address changed to its identity address.
    func rekey(_ device: SimDevice, from old: String, to identity: String) {
        guard devices[old] === device else { return }
        devices.removeValue(forKey: old)
        devices[identity] = device
        resolvedAddresses[device.airAddress] = identity
    }

    // MARK: Daemon lifetime

    /// The first half of a SIGTERM-style teardown: links down, apps told, power off; no
    /// object is removed yet (bluetoothd does this for every adapter before removing any).
    func powerDownForShutdown() {
        guard exported, !poweringDown else { return }
        poweringDown = true
        for device in devices.values.sorted(by: { $0.address < $1.address }) where device.isConnectedOrConnecting {
            device.adapterPoweredOff()
        }
        peripheralRole.daemonStopping()
        if powered || discovering {
            sessions.removeAll()
            powered = false
            changed([BlueZ.Adapter1.powered.name, BlueZ.Adapter1.discovering.name])
        }
    }

    private var poweringDown = false

    /// SIGTERM-style teardown: links down, power off, objects removed.
    func shutDown() {
        guard exported else { return }
        powerDownForShutdown()
        for device in devices.values.sorted(by: { $0.address < $1.address }) { device.unexport() }
        devices.removeAll()
        objects?.unregister(path)
        exported = false
    }

    /// Drops all state without emitting anything (SIGKILL, or after shutDown).
    func forget() {
        for device in devices.values { device.forget() }
        devices.removeAll()
        sessions.removeAll()
        peripheralRole.forget()
        exported = false
    }
}
