@testable import BleCore
import BleDBus
import BlueZVocabulary
import BleSim
import BleTestSupport
import Foundation
import Testing

/// What the pairing tests see: agent requests and events, and pairing results.
enum PairingEvent: CustomStringConvertible {
    case request(String, PairingRequest)
    case canceled(String, PairingRequest)
    case registered(String, BleError?)
    case released(String)
    case discovered(Peripheral)
    case paired(Peripheral, BleError?)
    case state(ManagerState)

    var description: String {
        switch self {
        case .request(let who, let r): return "request(\(who), \(r.kind))"
        case .canceled(let who, let r): return "canceled(\(who), \(r.kind), \(String(describing: r.answer)))"
        case .registered(let who, let e): return "registered(\(who), \(String(describing: e)))"
        case .released(let who): return "released(\(who))"
        case .discovered(let p): return "discovered(\(p.address))"
        case .paired(let p, let e): return "paired(\(p.address), \(String(describing: e)))"
        case .state(let s): return "state(\(s))"
        }
    }
}

/// Records every delegate callback of centrals, peripherals and agents, by name; waits have deadlines.
@BleLoop
final class PairingRecorder {
    let recorder = EventRecorder<PairingEvent>()
    var events: [PairingEvent] { recorder.events }
    var mark: Int { events.count }
    /// Answers requests as they arrive (per agent name); nil leaves them unanswered.
    var answer: [String: @BleLoop (PairingRequest) -> Void] = [:]

    func append(_ event: PairingEvent) { recorder.append(event) }

    @discardableResult
    func wait(since index: Int = 0, timeout: Duration = .seconds(20), _ what: String,
              where predicate: @escaping (PairingEvent) -> Bool) async throws -> PairingEvent {
        try await recorder.first(since: index, timeout: timeout, what, where: predicate)
    }

    func requests(_ who: String, since index: Int = 0) -> [PairingRequest] {
        events.dropFirst(index).compactMap { if case .request(who, let r) = $0 { return r }; return nil }
    }

    func canceled(_ who: String, since index: Int = 0) -> [PairingRequest] {
        events.dropFirst(index).compactMap { if case .canceled(who, let r) = $0 { return r }; return nil }
    }

    /// Waits for the result of `peripheral.pair()`.
    func pairResult(_ peripheral: Peripheral, since index: Int) async throws -> BleError? {
        let event = try await wait(since: index, "pairing result of \(peripheral.address)") {
            if case .paired(let p, _) = $0, p === peripheral { return true }
            return false
        }
        guard case .paired(_, let error) = event else { return nil }
        return error
    }

    func waitRegistered(_ who: String, since index: Int = 0) async throws {
        let event = try await wait(since: index, "\(who) registered") {
            if case .registered(who, _) = $0 { return true }
            return false
        }
        if case .registered(_, let error?) = event { throw error }
    }
}

/// One agent's delegate, naming its events.
final class AgentListener: PairingAgentDelegate, @unchecked Sendable {
    let name: String
    let recorder: PairingRecorder
    init(_ name: String, _ recorder: PairingRecorder) {
        self.name = name
        self.recorder = recorder
    }
    func pairingAgent(_ agent: PairingAgent, didReceive request: PairingRequest) {
        BleLoop.assumeIsolated {
            recorder.append(.request(name, request))
            recorder.answer[name]?(request)
        }
    }
    func pairingAgent(_ agent: PairingAgent, didCancel request: PairingRequest) {
        BleLoop.assumeIsolated { recorder.append(.canceled(name, request)) }
    }
    func pairingAgent(_ agent: PairingAgent, didRegister error: Error?) {
        BleLoop.assumeIsolated { recorder.append(.registered(name, error as? BleError)) }
    }
    func pairingAgentWasReleased(_ agent: PairingAgent) {
        BleLoop.assumeIsolated { recorder.append(.released(name)) }
    }
}

/// The central's and its peripherals' delegate.
final class CentralListener: CentralManagerDelegate, PeripheralDelegate, @unchecked Sendable {
    let recorder: PairingRecorder
    init(_ recorder: PairingRecorder) { self.recorder = recorder }
    func centralManagerDidUpdateState(_ central: CentralManager) {
        BleLoop.assumeIsolated { recorder.append(.state(central.currentState)) }
    }
    func centralManager(_ central: CentralManager, didDiscover peripheral: Peripheral, advertisementData: AdvertisementData, rssi RSSI: Int) {
        BleLoop.assumeIsolated { recorder.append(.discovered(peripheral)) }
    }
    func peripheral(_ peripheral: Peripheral, didCompletePairing error: Error?) {
        BleLoop.assumeIsolated { recorder.append(.paired(peripheral, error as? BleError)) }
    }
}

/// A private bus with BleSim (two adapters), a central on hci1 with its own agent, and helpers.
@BleLoop
final class PairingBench {
    let fixture: SimulatorFixture
    let recorder = PairingRecorder()
    let listener: CentralListener
    var central: CentralManager!
    var agents: [PairingAgent] = []
    var listeners: [AgentListener] = []

    private init(fixture: SimulatorFixture) {
        self.fixture = fixture
        listener = CentralListener(recorder)
    }

    static func start(_ peripherals: [PeripheralSpec] = []) async throws -> PairingBench {
        let fixture = try await SimulatorFixture.start(peripherals: peripherals)
        let bench = PairingBench(fixture: fixture)
        bench.central = CentralManager(delegate: bench.listener, queue: nil, options: bench.options)
        try await bench.recorder.wait("poweredOn") { if case .state(.poweredOn) = $0 { return true }; return false }
        return bench
    }

    var simulator: Simulator { fixture.simulator }
    var busAddress: String {
        if case .address(let text) = fixture.bus.busAddress { return text }
        return ""
    }
    var options: CentralManagerOptions {
        CentralManagerOptions(bus: .address(busAddress), adapter: "hci1", operationTimeout: .seconds(5), connectTimeout: .seconds(5),
                              retryBackoff: .milliseconds(10), servicesResolvedGrace: .milliseconds(200))
    }

    /// An agent on the central's connection, started and registered.
    func centralAgent(_ capability: IOCapability, answering: (@BleLoop (PairingRequest) -> Void)? = nil,
                      delegate: Bool = true, requestTimeout: Duration = .seconds(10)) async throws -> PairingAgent {
        let listener = AgentListener("central", recorder)
        recorder.answer["central"] = answering
        let agent = PairingAgent(central: central, capability: capability, delegate: delegate ? listener : nil,
                                 requestTimeout: requestTimeout)
        return try await started(agent, listener, waitForRegistration: delegate)
    }

    /// An agent on a connection of its own (the serving process's), the default agent.
    func ownAgent(_ name: String, _ capability: IOCapability, answering: (@BleLoop (PairingRequest) -> Void)?) async throws -> PairingAgent {
        let listener = AgentListener(name, recorder)
        recorder.answer[name] = answering
        let agent = PairingAgent(options: CentralManagerOptions(bus: .address(busAddress)), capability: capability, delegate: listener)
        return try await started(agent, listener, waitForRegistration: true)
    }

    private func started(_ agent: PairingAgent, _ listener: AgentListener, waitForRegistration: Bool) async throws -> PairingAgent {
        agents.append(agent)
        listeners.append(listener)
        let mark = recorder.mark
        agent.start()
        if waitForRegistration {
            try await recorder.waitRegistered(listener.name, since: mark)
        } else {
            // No delegate to hear it: bluetoothd's Pairable flag says the agent is in.
            try await fixture.waitForProperty("/org/bluez/hci1", "Pairable", .boolean(true))
        }
        return agent
    }

    /// Scans until `address` is found.
    func discover(_ address: String) async throws -> Peripheral {
        let mark = recorder.mark
        central.scanForPeripherals(withServices: nil)
        let event = try await recorder.wait(since: mark, "discovery of \(address)") {
            if case .discovered(let p) = $0, p.address == address { return true }
            return false
        }
        central.stopScan()
        guard case .discovered(let peripheral) = event else { throw WaitError.unexpected }
        peripheral.delegate = listener
        return peripheral
    }

    /// Pairs and waits for the result.
    func pair(_ peripheral: Peripheral) async throws -> BleError? {
        let mark = recorder.mark
        peripheral.pair()
        return try await recorder.pairResult(peripheral, since: mark)
    }

    func tearDown() {
        for agent in agents { agent.stop() }
        central?.close()
        fixture.tearDown()
    }

    enum WaitError: Error { case unexpected }
}

/// A GATT application with one service and an advertisement, served from its own connection on
/// hci0: the other side of a two-role pairing.
@BleLoop
final class ServingApp {
    let connection: Connection
    static let root: ObjectPath = "/com/example/pairing"
    static let service: ObjectPath = "/com/example/pairing/service0"
    static let characteristic: ObjectPath = "/com/example/pairing/service0/char0"
    static let advertisement: ObjectPath = "/com/example/pairingadvert"
    static let serviceUUID = "0000abc0-0000-1000-8000-00805f9b34fb"

    init(connection: Connection) {
        self.connection = connection
        let objects = connection.objects
        objects.addObjectManager(at: Self.root)
        objects.register(Self.service, interfaces: [ExportedInterface("org.bluez.GattService1", properties: [
            ExportedProperty("UUID", .string) { .string(ServingApp.serviceUUID) },
            ExportedProperty("Primary", .boolean) { .boolean(true) },
        ])])
        let options = ArgumentDescription("options", .dictionary(key: .string, value: .variant))
        objects.register(Self.characteristic, interfaces: [ExportedInterface("org.bluez.GattCharacteristic1", methods: [
            ExportedMethod("ReadValue", in: [options], out: [ArgumentDescription("value", .array(.byte))]) { call in
                call.reply([.bytes(Data([0x2a]))])
            },
        ], properties: [
            ExportedProperty("UUID", .string) { .string("0000abc1-0000-1000-8000-00805f9b34fb") },
            ExportedProperty("Service", .objectPath) { .objectPath(ServingApp.service) },
            ExportedProperty("Flags", .array(.string)) { .array(element: .string, [.string("encrypt-read")]) },
        ])])
        objects.register(Self.advertisement, interfaces: [ExportedInterface("org.bluez.LEAdvertisement1", methods: [
            ExportedMethod("Release") { call in call.reply() },
        ], properties: [
            ExportedProperty("Type", .string) { .string("peripheral") },
            ExportedProperty("ServiceUUIDs", .array(.string)) { .array(element: .string, [.string(ServingApp.serviceUUID)]) },
            ExportedProperty("LocalName", .string) { .string("pairing-app") },
        ])])
    }

    static func start(on bus: BusAddress) async throws -> ServingApp {
        let app = ServingApp(connection: try await Connection.open(bus))
        _ = try await app.connection.call(destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.bluez.GattManager1",
                                          member: "RegisterApplication",
                                          arguments: [.objectPath(Self.root), BlueZShapes.propertyDictionary([])])
        _ = try await app.connection.call(destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.bluez.LEAdvertisingManager1",
                                          member: "RegisterAdvertisement",
                                          arguments: [.objectPath(Self.advertisement), BlueZShapes.propertyDictionary([])])
        return app
    }
}
