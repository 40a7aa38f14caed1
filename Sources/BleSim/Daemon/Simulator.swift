import BleDBus
import BlueZVocabulary
import Foundation

/// A virtual BlueZ: claims `org.bluez` on a bus and behaves like bluetoothd 5.66 towards its
/// clients, with virtual peripherals in a simulated air and faults on demand.
///
/// ```swift
/// let simulator = Simulator()
/// simulator.addPeripheral(PeripheralSpec(address: "AA:BB:CC:00:00:01", name: "LED"))
/// try await simulator.start(on: bus.busAddress)
/// ```
@BleLoop
public final class Simulator {
    /// How the simulated daemon is set up.
    public struct Configuration: Sendable, Codable, Equatable {
        /// The adapters, in index order.
        public var adapters: [AdapterSpec]
        /// bluetoothd's TemporaryTimeout: unconnected devices vanish this long after their last
        /// advertising report (30 s stock).
        public var temporaryTimeoutSeconds: Double
        /// Operation costs.
        public var timing: TimingModel

        /// The stock configuration with two powered adapters and instant timing.
        public init(adapters: [AdapterSpec] = [AdapterSpec(index: 0), AdapterSpec(index: 1)],
                    temporaryTimeoutSeconds: Double = 30, timing: TimingModel = .instant) {
            self.adapters = adapters
            self.temporaryTimeoutSeconds = temporaryTimeoutSeconds
            self.timing = timing
        }
    }

    /// One simulated controller.
    public struct AdapterSpec: Sendable, Codable, Equatable {
        /// `hci0`, `hci1`, …
        public var name: String
        /// Its public address.
        public var address: String
        /// Its system name.
        public var systemName: String
        /// Powered at start (AutoEnable).
        public var powered: Bool

        /// Adapter `hciN` with address `00:AA:01:00:00:0N`.
        public init(index: Int, powered: Bool = true) {
            name = "hci\(index)"
            address = String(format: "00:AA:01:00:00:%02X", index)
            systemName = "BleSim"
            self.powered = powered
        }

        /// An adapter with explicit values.
        public init(name: String, address: String, systemName: String = "BleSim", powered: Bool = true) {
            self.name = name
            self.address = address.uppercased()
            self.systemName = systemName
            self.powered = powered
        }
    }

    /// How `stop` ends the daemon.
    public enum StopMode: Sendable {
        /// Like SIGTERM: devices disconnect, adapters power off, every object is removed with
        /// `InterfacesRemoved`, then the name is released.
        case clean
        /// Like SIGKILL: the bus name simply vanishes; no other signal.
        case kill
    }

    /// A call the simulator received.
    public struct TraceEntry: Sendable, CustomStringConvertible {
        /// The caller's unique name.
        public var sender: String
        /// The object path.
        public var path: String
        /// The interface, if the call named one.
        public var interface: String?
        /// The method.
        public var member: String
        /// The arguments.
        public var arguments: [DBusValue]

        /// `Interface.Member path (args)`.
        public var description: String {
            "\(interface.map { $0 + "." } ?? "")\(member) \(path) (\(arguments.map(\.description).joined(separator: ", ")))"
        }
    }

    /// Why the simulator could not start.
    public enum StartError: Error, CustomStringConvertible {
        /// The bus could not be reached.
        case bus(DBusError)
        /// Somebody else owns `org.bluez` on that bus.
        case nameTaken

        /// What to do.
        public var description: String {
            switch self {
            case .bus(let error): return "BleSim cannot use the bus: \(error)"
            case .nameTaken:
                return "\(BlueZ.busName) is already owned on this bus (a real bluetoothd or another BleSim); use a private bus."
            }
        }
    }

    /// The configuration it was made with.
    public let configuration: Configuration
    /// Operation costs (changeable while running).
    public var timing: TimingModel
    /// Faults to inject.
    public let faults = FaultInjector()
    /// Every call received, in order (see `clearTrace()`).
    public private(set) var trace: [TraceEntry] = []
    /// Sees each call as it is received (after it joined `trace`).
    public var traceObserver: (@BleLoop (TraceEntry) -> Void)?
    /// The `hciN` adapters the simulator exports, from the configuration.
    public private(set) var adapters: [SimAdapter] = []
    /// The virtual peripherals in the air.
    public private(set) var peripherals: [VirtualPeripheral] = []
    /// True between `start` and `stop`.
    public private(set) var isRunning = false
    /// The connection it serves on while running.
    public private(set) var connection: Connection?

    /// SMP's timeout: a pairing whose agents have not all answered by then fails with
    /// `AuthenticationTimeout`. Wall-clock time, not scaled by `timing` (agents are real processes).
    public var pairingTimeout: Duration = .seconds(30)
    /// How virtual peripherals respond to `Pair`, by address (see `setPairing(_:for:)`).
    private(set) var peerPairing: [String: PeerPairing] = [:]

    let clock = SimClock()
    let agents = AgentRegistry()
    private(set) var air: [AirPeripheral] = []
    private(set) var advertisingScheduler: AdvertisingScheduler?
    private var clientWatch: SignalSubscription?
    private var heldCalls: [IncomingCall] = []

    /// A simulator; nothing happens until `start`.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.timing = configuration.timing
    }

    // MARK: Lifetime

    /// Connects to `bus`, claims `org.bluez` and exports the daemon's objects.
    public func start(on bus: BusAddress) async throws(StartError) {
        try await start(on: bus, afterOwnRelease: false)
    }

    /// `afterOwnRelease`: this simulator has just closed the connection that owned the name,
    /// and dbus-daemon may not have processed that hang-up yet (a loaded machine): queue for the
    /// name and wait until it is ours, instead of failing as if another daemon held it.
    private func start(on bus: BusAddress, afterOwnRelease: Bool) async throws(StartError) {
        guard !isRunning else { return }
        let connection: Connection
        do {
            connection = try await Connection.open(bus)
        } catch {
            throw .bus(error)
        }
        // The root ObjectManager answers from the first moment clients can see the name: a
        // client that reacts to NameOwnerChanged with GetManagedObjects gets the (still empty)
        // tree, as from bluetoothd, never an UnknownMethod.
        connection.objects.addObjectManager(at: .root)
        do {
            let acquired = NameAcquisition()
            let watch = try connection.signals.subscribe(SignalMatch(sender: FreedesktopDBus.busName, interface: FreedesktopDBus.interface,
                                                                     member: FreedesktopDBus.Method.nameAcquired)) { message in
                if case .string(BlueZ.busName)? = message.body.first { acquired.arrived() }
            }
            defer { watch.cancel() }
            // DO_NOT_QUEUE (4): fail instead of waiting behind a real bluetoothd; after our own
            // release, queue (0) behind the connection we just closed.
            let reply = try await connection.call(destination: FreedesktopDBus.busName, path: FreedesktopDBus.path,
                                                  interface: FreedesktopDBus.interface, member: FreedesktopDBus.Method.requestName,
                                                  arguments: [.string(BlueZ.busName), .uint32(afterOwnRelease ? 0 : 4)])
            let primary = reply.first == .uint32(1)
            let queued = afterOwnRelease && reply.first == .uint32(2)
            guard primary || queued else {
                connection.close()
                throw StartError.nameTaken
            }
            if queued, !(await acquired.wait(upTo: .seconds(10))) {
                connection.close()
                throw StartError.nameTaken
            }
        } catch let error as StartError {
            throw error
        } catch {
            connection.close()
            throw .bus(error as? DBusError ?? .disconnected)
        }
        self.connection = connection
        isRunning = true
        connection.objects.callObserver = { [weak self] message in self?.record(message) }
        connection.objects.callFilter = { [weak self] call in self?.filter(call) ?? false }
        clientWatch = try? connection.signals.subscribe(SignalMatch(sender: FreedesktopDBus.busName, interface: FreedesktopDBus.interface,
                                                                     member: FreedesktopDBus.Method.nameOwnerChanged)) { [weak self] message in
            guard message.body.count == 3, case .string(let name) = message.body[0],
                  case .string(let newOwner) = message.body[2], name.hasPrefix(":"), newOwner.isEmpty else { return }
            self?.clientLeft(name)
        }
        connection.onDisconnect { [weak self] in self?.connectionDropped() }
        registerRootObjects()
        adapters = configuration.adapters.map { SimAdapter(spec: $0, simulator: self) }
        for adapter in adapters { adapter.export() }
        let scheduler = AdvertisingScheduler(simulator: self)
        advertisingScheduler = scheduler
        scheduler.start()
    }

    /// Stops the daemon; see `StopMode`. Virtual peripherals stay, ready for `start` again.
    public func stop(_ mode: StopMode = .clean) {
        guard isRunning, let connection else { return }
        if mode == .clean {
            // bluetoothd's SIGTERM order: every link down and every adapter off first; then the
            // plugins' Media1 and HealthManager1, /org/bluez's managers, and per adapter its
            // GATT objects, devices and interfaces.
            for adapter in adapters { adapter.powerDownForShutdown() }
            for adapter in adapters { connection.objects.unregister(adapter.path, interfaces: [BlueZ.Media1.interface]) }
            connection.objects.unregister(BlueZ.rootPath, interfaces: [BlueZ.HealthManager1.interface])
            connection.objects.unregister(BlueZ.rootPath)
            for adapter in adapters { adapter.shutDown() }
        }
        isRunning = false
        agents.releaseAll(on: connection, notify: mode == .clean)
        advertisingScheduler?.stop()
        advertisingScheduler = nil
        clock.cancelAll()
        for adapter in adapters { adapter.forget() }
        adapters.removeAll()
        clientWatch?.cancel()
        clientWatch = nil
        self.connection = nil
        connection.close()
        // Released only now, so the closed connection cannot answer them: their callers get
        // dbus-daemon's NoReply, as with a real daemon that dies holding a call.
        heldCalls.removeAll()
    }

    /// Stops and starts again on the same bus, as `systemctl restart bluetooth` would.
    public func restart(_ mode: StopMode = .clean, on bus: BusAddress) async throws(StartError) {
        let owned = isRunning
        stop(mode)
        try await start(on: bus, afterOwnRelease: owned)
    }

    private func connectionDropped() {
        guard isRunning else { return }
        isRunning = false
        agents.releaseAll(on: nil, notify: false)
        advertisingScheduler?.stop()
        clock.cancelAll()
        for adapter in adapters { adapter.forget() }
        adapters.removeAll()
        connection = nil
    }

    // MARK: The air

    /// Puts a virtual peripheral in the air (heard by every adapter).
    @discardableResult
    public func addPeripheral(_ spec: PeripheralSpec) -> VirtualPeripheral {
        let peripheral = VirtualPeripheral(spec: spec, simulator: self)
        peripherals.append(peripheral)
        air.append(peripheral)
        return peripheral
    }

    /// The virtual peripheral with `address`.
    public func peripheral(_ address: String) -> VirtualPeripheral? {
        peripherals.first { $0.address == address.uppercased() }
    }

    /// Takes a peripheral out of the air: its links drop, and adapters expire it later.
    public func removePeripheral(_ address: String) {
        guard let peripheral = peripheral(address) else { return }
        peripheral.dropLinks()
        peripherals.removeAll { $0 === peripheral }
        air.removeAll { $0 === peripheral }
    }

    func addToAir(_ peripheral: AirPeripheral) {
        air.append(peripheral)
    }

    func removeFromAir(_ peripheral: AirPeripheral) {
        air.removeAll { $0 === peripheral }
    }

    func airPeripheral(_ address: String) -> AirPeripheral? {
        air.first { $0.address == address.uppercased() }
    }

    /// Makes the virtual peripheral at `address` respond to `Pair` as `pairing` says (nil: the
    /// default NoInputNoOutput responder that accepts).
    public func setPairing(_ pairing: PeerPairing?, for address: String) {
        peerPairing[address.uppercased()] = pairing
    }

    /// The adapter named `name` (`hci0`).
    public func adapter(_ name: String) -> SimAdapter? { adapters.first { $0.name == name } }

    /// Removes an adapter, as when a USB dongle is unplugged.
    public func removeAdapter(_ name: String) {
        guard let adapter = adapter(name) else { return }
        adapter.shutDown()
        adapter.forget()
        adapters.removeAll { $0 === adapter }
    }

    /// Adds an adapter while running, as when a dongle is plugged in.
    @discardableResult
    public func addAdapter(_ spec: AdapterSpec) -> SimAdapter? {
        guard isRunning, adapter(spec.name) == nil else { return nil }
        let adapter = SimAdapter(spec: spec, simulator: self)
        adapters.append(adapter)
        adapter.export()
        return adapter
    }

    // MARK: Trace and filters

    /// Empties the trace.
    public func clearTrace() { trace.removeAll() }

    private func record(_ message: DBusMessage) {
        let entry = TraceEntry(sender: message.sender ?? "", path: message.path?.rawValue ?? "/",
                               interface: message.interface, member: message.member ?? "", arguments: message.body)
        trace.append(entry)
        traceObserver?(entry)
    }

    /// Faults that answer a call before the objects see it.
    private func filter(_ call: IncomingCall) -> Bool {
        if call.message.interface != FreedesktopDBus.Introspectable.interface, faults.isDenied(call.sender) {
            call.fail(name: FreedesktopDBus.ErrorName.accessDenied,
                      message: "Rejected send message, 1 matched rules; type=\"method_call\", sender=\"\(call.sender)\" interface=\"\(call.message.interface ?? "(unset)")\" member=\"\(call.member)\" error name=\"(unset)\" requested_reply=\"0\" destination=\"\(BlueZ.busName)\"")
            return true
        }
        if faults.shouldSwallow(member: call.member) {
            heldCalls.append(call)
            return true
        }
        if let body = faults.wrongShapeReply(member: call.member) {
            call.reply(body)
            return true
        }
        if let failure = faults.injectedFailure(member: call.member) {
            call.fail(name: failure.name, message: failure.message)
            return true
        }
        return false
    }

    private func clientLeft(_ name: String) {
        for adapter in adapters { adapter.clientLeft(name) }
        let hadAgents = agents.hasAgents
        agents.removeAll(owner: name)
        if hadAgents && !agents.hasAgents { for adapter in adapters { adapter.setPairable(false) } }
    }

    // MARK: /org/bluez

    private func registerRootObjects() {
        guard let connection else { return }
        connection.objects.register(BlueZ.rootPath, interfaces: [
            agents.interface(simulator: self),
            ExportedInterface(BlueZ.ProfileManager1.interface, methods: [
                ExportedMethod(BlueZ.ProfileManager1.Method.registerProfile, in: [ArgumentDescription("profile", .objectPath), ArgumentDescription("UUID", .string),
                                                       ArgumentDescription("options", .dictionary(key: .string, value: .variant))]) { call in
                    BlueZError.notSupported(call)
                },
                ExportedMethod(BlueZ.ProfileManager1.Method.unregisterProfile, in: [ArgumentDescription("profile", .objectPath)]) { call in
                    BlueZError.doesNotExist(call)
                },
            ]),
            ExportedInterface(BlueZ.HealthManager1.interface, methods: [
                ExportedMethod(BlueZ.HealthManager1.Method.createApplication, in: [ArgumentDescription("config", .dictionary(key: .string, value: .variant))],
                               out: [ArgumentDescription("application", .objectPath)]) { call in
                    BlueZError.notSupported(call)
                },
                ExportedMethod(BlueZ.HealthManager1.Method.destroyApplication, in: [ArgumentDescription("application", .objectPath)]) { call in
                    BlueZError.doesNotExist(call)
                },
            ]),
        ])
    }
}

/// Waits, with a deadline, for dbus-daemon's `NameAcquired` after a queued `RequestName`.
@BleLoop
private final class NameAcquisition {
    private var done = false
    private var continuation: CheckedContinuation<Bool, Never>?
    private var timer: LoopTimer?

    func arrived() {
        done = true
        finish(true)
    }

    /// True once the name is ours; false when `limit` passed first.
    func wait(upTo limit: Duration) async -> Bool {
        if done { return true }
        return await withCheckedContinuation { continuation in
            self.continuation = continuation
            timer = LoopTimer.scheduled(after: limit) { [weak self] in self?.finish(false) }
        }
    }

    private func finish(_ acquired: Bool) {
        timer?.cancel()
        timer = nil
        continuation?.resume(returning: acquired)
        continuation = nil
    }
}
