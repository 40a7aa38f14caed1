import BleCore
import BleDBus
import BleTestSupport
import BlueZVocabulary
import Foundation

/// What a scenario works with: the backend, BleKit's central on `hci1`, the peer on `hci0`,
/// a raw D-Bus connection for what BleKit's API does not cover (agents, adapter power), and
/// the transcript it fills in. Every wait has a deadline; nothing sleeps.
@BleLoop
public final class ScenarioContext {
    /// The BlueZ under test.
    public let backend: IntegrationBackend
    let probe = CentralProbe()
    let trace: StateTrace
    private(set) var steps: [String] = []
    private var centrals: [CentralManager] = []
    private var peers: [PeerPeripheral] = []
    /// Advertisements a scenario made with a `PeripheralManager` (not a `PeerPeripheral`), refreshed
    /// as the peers' are once discovery is on (see `discoverPeer`).
    private var advertisementRefreshers: [@BleLoop () -> Void] = []
    private var connections: [Connection] = []
    private var cleanups: [@BleLoop () async -> Void] = []
    private var rawConnection: Connection?

    /// How long one event may take. Generous: the real stack runs under software emulation.
    let eventDeadline: Duration = .seconds(30)

    init(backend: IntegrationBackend) {
        self.backend = backend
        trace = StateTrace(adapter: backend.centralAdapter)
    }

    // MARK: Transcript

    /// Records a step of the transcript.
    func step(_ text: String) {
        steps.append(text)
    }

    /// Fails the scenario unless `condition` holds.
    func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws {
        if !condition { throw ScenarioFailure(message()) }
    }

    /// Runs `work` when the scenario ends, whether it passed or not (latest first).
    func onCleanup(_ work: @escaping @BleLoop () async -> Void) {
        cleanups.append(work)
    }

    func start() async throws {
        try trace.start(on: try await dbus())
    }

    func finish() async {
        for work in cleanups.reversed() { await work() }
        cleanups.removeAll()
        for central in centrals { central.close() }
        centrals.removeAll()
        for peer in peers {
            if peer.isRegistered { await peer.unregister() }
            peer.close()
        }
        peers.removeAll()
        trace.stop()
        for connection in connections { connection.close() }
        connections.removeAll()
        rawConnection = nil
    }

    // MARK: D-Bus

    /// A connection of the scenario's own (not BleKit's), opened once.
    func dbus() async throws -> Connection {
        if let rawConnection { return rawConnection }
        let connection = try await Connection.open(backend.busAddress)
        connections.append(connection)
        rawConnection = connection
        return connection
    }

    /// Calls BlueZ and records the outcome as a step: `<label> ok` or `<label> error <name>: <message>`.
    @discardableResult
    func call(_ label: String, _ path: ObjectPath, _ interface: String, _ member: String,
              _ arguments: [DBusValue] = [], timeout: Duration? = nil) async throws -> Result<[DBusValue], DBusError> {
        let connection = try await dbus()
        do {
            let reply = try await connection.call(destination: BlueZ.busName, path: path, interface: interface, member: member,
                                                  arguments: arguments, timeout: timeout)
            step("\(label) ok")
            return .success(reply)
        } catch {
            step("\(label) \(Self.describe(error))")
            return .failure(error)
        }
    }

    /// Waits until the bus name `name` (a closed BleKit manager's unique name) has no owner.
    ///
    /// The bus daemon announces a leaving connection after it routed every message that
    /// connection sent, so a call made after this reaches bluetoothd after those (an
    /// `UnregisterApplication`, which bluetoothd handles at once).
    func waitForBusNameGone(_ name: String) async throws {
        let connection = try await dbus()
        let gone = EventRecorder<String>()
        let subscription = try connection.signals.subscribe(SignalMatch(
            sender: FreedesktopDBus.busName, interface: FreedesktopDBus.interface,
            member: FreedesktopDBus.Method.nameOwnerChanged, arg0: name)) { message in
            if message.body.count == 3, case .string("") = message.body[2] { gone.append(name) }
        }
        defer { subscription.cancel() }
        // Subscribed first, then asked: a name that left before the subscription is no owner's.
        let owner: Result<[DBusValue], DBusError>
        do {
            owner = .success(try await connection.call(destination: FreedesktopDBus.busName, path: FreedesktopDBus.path,
                                                       interface: FreedesktopDBus.interface, member: FreedesktopDBus.Method.getNameOwner,
                                                       arguments: [.string(name)]))
        } catch {
            owner = .failure(error)
        }
        if case .failure(.remote(let errorName, _)) = owner, errorName == FreedesktopDBus.ErrorName.nameHasNoOwner { return }
        _ = try owner.get()
        try await gone.wait("\(name) to leave the bus", timeout: eventDeadline) { !$0.isEmpty }
    }

    /// Sets an adapter's `Powered` and waits until BlueZ reports the new value.
    func setPowered(_ adapter: String, _ on: Bool) async throws {
        let label = "set \(adapter) Powered=\(on)"
        do {
            try await Self.setPowered(on, adapter: try BlueZ.rootPath.appending(adapter), using: try await dbus(), deadline: eventDeadline)
            step("\(label) ok")
        } catch let error as DBusError {
            step("\(label) \(Self.describe(error))")
            throw error
        }
    }

    /// Sets an adapter's `Powered` and returns once BlueZ reports the new value (at once when
    /// it already holds).
    static func setPowered(_ on: Bool, adapter path: ObjectPath, using connection: Connection, deadline: Duration) async throws {
        let reached = PropertyWait(connection: connection, path: path, interface: BlueZ.Adapter1.interface,
                                   name: BlueZ.Adapter1.powered.name, value: .boolean(on))
        try reached.arm()
        _ = try await connection.call(destination: BlueZ.busName, path: path, interface: FreedesktopDBus.Properties.interface, member: FreedesktopDBus.Properties.set,
                                      arguments: [.string(BlueZ.Adapter1.interface), .string(BlueZ.Adapter1.powered.name), .variant(.boolean(on))])
        try await reached.wait(deadline: deadline)
    }

    static func describe(_ error: DBusError) -> String {
        switch error {
        case .remote(let name, let message):
            return "error \(name): \(message.trimmingCharacters(in: .whitespacesAndNewlines))"
        default:
            return "error \(error)"
        }
    }

    // MARK: The peer

    /// Puts a fresh `PeerPeripheral` on the air from the peripheral adapter.
    func peer() async throws -> PeerPeripheral {
        let connection = try await Connection.open(backend.busAddress)
        connections.append(connection)
        let peer = PeerPeripheral(connection: connection, adapter: try BlueZ.rootPath.appending(backend.peripheralAdapter))
        peers.append(peer)
        try await peer.register()
        step("peer registered on \(backend.peripheralAdapter)")
        return peer
    }

    /// Makes `discoverPeer` refresh `manager`'s advertisement once discovery is on, as it does the
    /// peers': btvirt sends one advertising report per scan start, and the kernel drops a report
    /// it handles before its discovery is on, so a scan restarted while the machine is busy can
    /// miss the report every time (advertising.fieldsAndFit failed so under a CPU hog). A changed
    /// advertisement property makes bluetoothd send the data again, after discovery is on.
    func refreshOnDiscovery(_ manager: PeripheralManager, _ registration: AdvertisementRegistration) {
        advertisementRefreshers.append { [weak manager] in
            guard let manager, registration.state == .active, let path = try? ObjectPath(registration.path) else { return }
            manager.dbusConnection?.objects.emitPropertiesChanged(path: path, interface: BlueZ.LEAdvertisement1.interface,
                                                                 names: [BlueZ.LEAdvertisement1.localName.name])
        }
    }

    /// Every advertisement of the scenario sent again (see `discoverPeer`).
    func refreshAdvertisements() {
        for peer in peers { peer.refreshAdvertisement() }
        for refresh in advertisementRefreshers { refresh() }
    }

    /// For a scan the context does not start itself (BleAsync's): refreshes every advertisement
    /// once the central adapter reports `Discovering=true` (within `window`), as `discoverPeer`
    /// does. Call it just before starting the scan; it returns at once.
    func refreshAdvertisementsWhenDiscovering(within window: Duration = .seconds(4)) async throws {
        let adapter = try BlueZ.rootPath.appending(backend.centralAdapter)
        let discovering = PropertyWait(connection: try await dbus(), path: adapter, interface: BlueZ.Adapter1.interface,
                                       name: BlueZ.Adapter1.discovering.name, value: .boolean(true))
        try discovering.arm()
        Task { @BleLoop [weak self] in
            // A scan already on gives no new `true`: the refresh then comes at the window's end.
            try? await discovering.wait(deadline: window)
            self?.refreshAdvertisements()
        }
    }

    /// Removes every device object the central adapter holds (no step recorded: the transcript
    /// stays the same whether or not a retry needed it). An outside central such as bleak reports
    /// a device only from BlueZ's signals, and a device bluetoothd already knows with unchanged
    /// data gives none when it is heard again: the next attempt must meet it as new.
    ///
    /// The states the failed attempt left in the trace (from `traceMark` on) are forgotten once
    /// each removal is in it, so the BlueZes are compared on the attempt that counted.
    func forgetDevicesOnTheCentralAdapter(rewindingTraceTo traceMark: Int) async throws {
        let connection = try await dbus()
        let adapter = try BlueZ.rootPath.appending(backend.centralAdapter)
        let reply = try await connection.call(destination: BlueZ.busName, path: .root, interface: FreedesktopDBus.ObjectManager.interface,
                                              member: FreedesktopDBus.ObjectManager.getManagedObjects)
        guard let first = reply.first else { return }
        for (path, interfaces) in try BlueZShapes.managedObjects(first) where path.parent == adapter && interfaces[BlueZ.Device1.interface] != nil {
            let removal = trace.mark
            _ = try? await connection.call(destination: BlueZ.busName, path: adapter, interface: BlueZ.Adapter1.interface,
                                           member: BlueZ.Adapter1.Method.removeDevice, arguments: [.objectPath(path)])
            // bluetoothd announces the removal after its reply (gdbus sends InterfacesRemoved from an idle callback).
            let address = String(path.lastElement.dropFirst(BlueZ.Paths.deviceElementPrefix.count)).replacingOccurrences(of: "_", with: ":")
            if !(await trace.waitForEntry("\(address) removed", since: removal, within: eventDeadline)) {
                throw ScenarioFailure("bluetoothd did not announce the removal of \(path) within \(eventDeadline)")
            }
        }
        trace.rewind(to: traceMark)
    }

    // MARK: The central

    /// BleKit's central on the central adapter, once it reports `poweredOn`.
    func central(_ configure: (inout CentralManagerOptions) -> Void = { _ in }) async throws -> CentralManager {
        var options = CentralManagerOptions(bus: backend.bleBus, adapter: backend.centralAdapter,
                                            operationTimeout: .seconds(20), connectTimeout: .seconds(30))
        configure(&options)
        let mark = probe.mark
        let central = CentralManager(delegate: probe, queue: nil, options: options)
        centrals.append(central)
        try await probe.wait(since: mark, timeout: eventDeadline, "central poweredOn") {
            if case .state(.poweredOn) = $0 { return true }
            return false
        }
        step("central state \(central.state)")
        return central
    }

    /// The peer on the air, a central, and the peer discovered, connected and resolved: where
    /// most scenarios start.
    func connectedPeer(_ configure: (inout CentralManagerOptions) -> Void = { _ in })
        async throws -> (PeerPeripheral, CentralManager, Peripheral) {
        let peer = try await peer()
        let central = try await central(configure)
        let peripheral = try await discoverPeer(central)
        try expect(try await connect(central, peripheral) == nil, "connect failed")
        try await resolve(peripheral)
        return (peer, central, peripheral)
    }

    /// Scans until the peer shows up, waiting on events: the central adapter's
    /// `Discovering=true`, then the discovery. btvirt sends each advertisement once per scan
    /// start, and the kernel drops that report when it handles it before its discovery is on
    /// (btmon: the LE Advertising Report comes before MGMT Discovering, and no Device Found
    /// follows), so once discovery is on the peers refresh their advertisements, which btvirt
    /// reports again, now to a discovery that takes it. An advertiser that is not a peer
    /// (BleKit's PeripheralManager, an outside program) cannot be refreshed: a scan that stays
    /// silent for `attempt` is restarted until `within` (default `eventDeadline`) runs out.
    func discoverPeer(_ central: CentralManager, services: [BluetoothUUID]? = [PeerProtocol.service],
                      options: ScanOptions = ScanOptions(), name: String = PeerProtocol.name,
                      within window: Duration? = nil, label: String = "scan") async throws -> Peripheral {
        let deadline = ContinuousClock.now + (window ?? eventDeadline)
        let adapter = try BlueZ.rootPath.appending(backend.centralAdapter)
        let attempt = Duration.seconds(4)
        while true {
            let mark = probe.mark
            let discovering = PropertyWait(connection: try await dbus(), path: adapter, interface: BlueZ.Adapter1.interface,
                                           name: BlueZ.Adapter1.discovering.name, value: .boolean(true))
            try discovering.arm()
            central.scanForPeripherals(withServices: services, options: options)
            do {
                // (A timeout here is the attempt's: the scan is restarted below.)
                try? await discovering.wait(deadline: attempt)
                refreshAdvertisements()
                let event = try await probe.wait(since: mark, timeout: attempt, "discovery of \(name)") {
                    if case .discovered(_, let advertisement) = $0 { return advertisement.localName == name }
                    return false
                }
                central.stopScan()
                guard case .discovered(let peripheral, let advertisement) = event else { throw ScenarioFailure("unexpected \(event)") }
                peripheral.delegate = probe
                let uuids = advertisement.serviceUUIDs.map(\.uuidString)
                step("\(label): discovered \(advertisement.localName ?? "-") services=\(uuids) connectable=\(advertisement.isConnectable)")
                return peripheral
            } catch let timeout as CentralProbe.Timeout {
                central.stopScan()
                if ContinuousClock.now >= deadline { throw timeout }
            }
        }
    }

    /// Connects and waits for BleKit's answer; returns the error of a failed connect.
    @discardableResult
    func connect(_ central: CentralManager, _ peripheral: Peripheral, label: String = "connect") async throws -> BleError? {
        let mark = probe.mark
        central.connect(peripheral)
        let event = try await probe.wait(since: mark, timeout: .seconds(60), "\(label) of \(peripheral.address)") {
            switch $0 {
            case .connected(let other), .failedToConnect(let other, _): return other === peripheral
            default: return false
            }
        }
        switch event {
        case .connected:
            step("\(label) ok")
            return nil
        case .failedToConnect(_, let error):
            step("\(label) \(ProbeEvent.describe(error))")
            return error ?? .failed("no error")
        default:
            throw ScenarioFailure("unexpected \(event)")
        }
    }

    /// Disconnects and waits for the disconnect callback.
    func disconnect(_ central: CentralManager, _ peripheral: Peripheral) async throws {
        let mark = probe.mark
        central.cancelPeripheralConnection(peripheral)
        let event = try await probe.wait(since: mark, timeout: eventDeadline, "disconnect") {
            if case .disconnected(let other, _) = $0 { return other === peripheral }
            return false
        }
        guard case .disconnected(_, let error) = event else { return }
        step("disconnect \(ProbeEvent.describe(error))")
    }

    /// Waits for BleKit to report the peripheral disconnected (without asking for it).
    func waitForDisconnect(_ peripheral: Peripheral, since mark: Int, label: String) async throws {
        let event = try await probe.wait(since: mark, timeout: .seconds(60), label) {
            if case .disconnected(let other, _) = $0 { return other === peripheral }
            return false
        }
        guard case .disconnected(_, let error) = event else { return }
        step("\(label): disconnected \(ProbeEvent.describe(error))")
    }

    /// Discovers every service, characteristic and descriptor, and records the peer's part of
    /// the tree (the daemon's own services are listed by UUID).
    /// Discovers the whole tree. `required` services are asked for first, as an app that
    /// needs them would: BleCore then waits for them when bluetoothd's cached database is stale
    /// and it is still re-discovering after the connect (seen under software emulation).
    func resolve(_ peripheral: Peripheral, recording recorded: [BluetoothUUID] = [PeerProtocol.service],
                 requiring required: [BluetoothUUID] = []) async throws {
        var mark = probe.mark
        if !required.isEmpty {
            peripheral.discoverServices(required)
            let event = try await probe.wait(since: mark, timeout: eventDeadline, "required services") {
                if case .services = $0 { return true }
                return false
            }
            if case .services(let error?) = event { throw ScenarioFailure("required services not found: \(error)") }
            mark = probe.mark
        }
        peripheral.discoverServices(nil)
        let event = try await probe.wait(since: mark, timeout: eventDeadline, "services") {
            if case .services = $0 { return true }
            return false
        }
        if case .services(let error?) = event { throw ScenarioFailure("service discovery failed: \(error)") }
        let services = peripheral.services ?? []
        step("services \(services.map(\.uuid.uuidString))")
        for service in services {
            mark = probe.mark
            peripheral.discoverCharacteristics(nil, for: service)
            try await probe.wait(since: mark, timeout: eventDeadline, "characteristics of \(service.uuid.uuidString)") {
                if case .characteristics(let other, _) = $0 { return other === service }
                return false
            }
            for characteristic in service.characteristics ?? [] {
                mark = probe.mark
                peripheral.discoverDescriptors(for: characteristic)
                try await probe.wait(since: mark, timeout: eventDeadline, "descriptors of \(characteristic.uuid.uuidString)") {
                    if case .descriptors(let other, _) = $0 { return other === characteristic }
                    return false
                }
                guard recorded.contains(service.uuid) else { continue }
                let descriptors = (characteristic.descriptors ?? []).map(\.uuid.uuidString)
                step("characteristic \(characteristic.uuid.uuidString) properties=\(Self.names(of: characteristic.properties)) descriptors=\(descriptors)")
            }
        }
    }

    static func names(of properties: CharacteristicProperties) -> [String] {
        let known: [(CharacteristicProperties, String)] = [
            (.broadcast, "broadcast"), (.read, "read"), (.writeWithoutResponse, "writeWithoutResponse"), (.write, "write"),
            (.notify, "notify"), (.indicate, "indicate"), (.authenticatedSignedWrites, "signedWrite"),
            (.extendedProperties, "extendedProperties"),
        ]
        return known.filter { properties.contains($0.0) }.map(\.1)
    }

    /// The peer's characteristic `uuid`.
    func characteristic(_ peripheral: Peripheral, _ uuid: BluetoothUUID,
                        in serviceUUID: BluetoothUUID = PeerProtocol.service) throws -> Characteristic {
        let service = peripheral.services?.first { $0.uuid == serviceUUID }
        guard let characteristic = service?.characteristics?.first(where: { $0.uuid == uuid }) else {
            throw ScenarioFailure("the peer has no characteristic \(uuid)")
        }
        return characteristic
    }

    /// Reads a characteristic and records the value or error.
    @discardableResult
    func read(_ peripheral: Peripheral, _ characteristic: Characteristic, label: String = "read") async throws -> Result<Data, BleError> {
        let mark = probe.mark
        peripheral.readValue(for: characteristic)
        let event = try await probe.wait(since: mark, timeout: eventDeadline, "\(label) \(characteristic.uuid.uuidString)") {
            if case .value(let other, _, _) = $0 { return other === characteristic }
            return false
        }
        guard case .value(_, let data, let error) = event else { throw ScenarioFailure("unexpected \(event)") }
        if let error {
            step("\(label) \(characteristic.uuid.uuidString) \(ProbeEvent.describe(error))")
            return .failure(error)
        }
        step("\(label) \(characteristic.uuid.uuidString) = \(ProbeEvent.hex(data ?? Data()))")
        return .success(data ?? Data())
    }

    /// Writes with a response and records the outcome.
    @discardableResult
    func write(_ peripheral: Peripheral, _ data: Data, _ characteristic: Characteristic, label: String = "write") async throws -> BleError? {
        let mark = probe.mark
        peripheral.writeValue(data, for: characteristic, type: .withResponse)
        let event = try await probe.wait(since: mark, timeout: eventDeadline, "\(label) \(characteristic.uuid.uuidString)") {
            if case .wrote(let other, _) = $0 { return other === characteristic }
            return false
        }
        guard case .wrote(_, let error) = event else { throw ScenarioFailure("unexpected \(event)") }
        step("\(label) \(characteristic.uuid.uuidString) \(data.count) bytes \(ProbeEvent.describe(error))")
        return error
    }

    /// Turns notifications on or off and records the outcome.
    func setNotify(_ peripheral: Peripheral, _ on: Bool, _ characteristic: Characteristic) async throws {
        let mark = probe.mark
        peripheral.setNotifyValue(on, for: characteristic)
        let event = try await probe.wait(since: mark, timeout: eventDeadline, "notify \(on) \(characteristic.uuid.uuidString)") {
            if case .notifyState(let other, _, _) = $0 { return other === characteristic }
            return false
        }
        guard case .notifyState(_, let state, let error) = event else { throw ScenarioFailure("unexpected \(event)") }
        step("notify \(characteristic.uuid.uuidString) \(state) \(ProbeEvent.describe(error))")
        try expect(error == nil && state == on, "notify \(on) failed: \(event)")
    }

    /// Waits for the next `count` notifications of `characteristic` since `mark`.
    func notifications(of characteristic: Characteristic, since mark: Int, count: Int) async throws -> [Data] {
        try await probe.wait(since: mark, timeout: eventDeadline, "\(count) notifications of \(characteristic.uuid.uuidString)") { [probe] _ in
            probe.events.dropFirst(mark).filter { if case .value(let other, _, nil) = $0 { return other === characteristic }; return false }.count >= count
        }
        return probe.events.dropFirst(mark).compactMap { event -> Data? in
            if case .value(let other, let data, nil) = event, other === characteristic { return data }
            return nil
        }
    }

    /// Adds a BleKit central to those closed when the scenario ends (for DSL managers).
    func adopt(_ central: CentralManager) {
        centrals.append(central)
    }
}

/// Waits for a property to reach a value, armed before the action that changes it.
@BleLoop
final class PropertyWait {
    private let connection: Connection
    private let path: ObjectPath
    private let interface: String
    private let name: String
    private let value: DBusValue
    private var subscription: SignalSubscription?
    private var reached = false
    private var continuation: CheckedContinuation<Bool, Never>?

    private let accepts: (DBusValue) -> Bool

    convenience init(connection: Connection, path: ObjectPath, interface: String, name: String, value: DBusValue) {
        self.init(connection: connection, path: path, interface: interface, name: name, describedAs: value) { $0 == value }
    }

    /// Waits for any value `accepts` approves (`describedAs` names it in the failure).
    init(connection: Connection, path: ObjectPath, interface: String, name: String, describedAs: DBusValue,
         accepts: @escaping (DBusValue) -> Bool) {
        self.connection = connection
        self.path = path
        self.interface = interface
        self.name = name
        self.value = describedAs
        self.accepts = accepts
    }

    func arm() throws {
        subscription = try connection.signals.subscribe(SignalMatch(
            sender: BlueZ.busName, path: path, interface: FreedesktopDBus.Properties.interface, member: FreedesktopDBus.Properties.propertiesChanged)) { [weak self] message in
            guard let self, case .string(let changedInterface)? = message.body.first, changedInterface == self.interface,
                  message.body.count >= 2, let changed = try? BlueZShapes.propertyMap(message.body[1]),
                  let changedValue = changed[self.name], self.accepts(changedValue) else { return }
            self.finish(true)
        }
    }

    func wait(deadline: Duration) async throws {
        if !reached {
            // The value may already hold (nothing to announce).
            let current = try? await connection.call(destination: BlueZ.busName, path: path, interface: FreedesktopDBus.Properties.interface,
                                                     member: FreedesktopDBus.Properties.get, arguments: [.string(interface), .string(name)])
            if case .variant(let inner)? = current?.first, accepts(inner) { reached = true }
        }
        if !reached {
            let timer = LoopTimer.scheduled(after: deadline) { [weak self] in self?.finish(false) }
            let ok = await withCheckedContinuation { continuation in
                if reached { continuation.resume(returning: true) } else { self.continuation = continuation }
            }
            timer.cancel()
            subscription?.cancel()
            if !ok { throw ScenarioFailure("\(path) \(name) did not become \(value) within \(deadline)") }
        }
        subscription?.cancel()
    }

    private func finish(_ ok: Bool) {
        if ok { reached = true }
        if let continuation {
            self.continuation = nil
            continuation.resume(returning: ok)
        }
    }
}
