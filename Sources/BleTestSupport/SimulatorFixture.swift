import BleDBus
import BleSim
import BlueZVocabulary
import Foundation

/// One call away from a test bed: a private bus, a `Simulator` on it, and a client connection
/// that records every signal from `org.bluez`, with deadline-bound waits.
///
/// ```swift
/// let fixture = try await SimulatorFixture.start(peripherals: [spec])
/// defer { fixture.tearDown() }
/// try await fixture.call("/org/bluez/hci0", "org.bluez.Adapter1", "StartDiscovery")
/// try await fixture.waitForSignal { $0.member == "InterfacesAdded" }
/// ```
@BleLoop
public final class SimulatorFixture {
    /// The private bus.
    public let bus: PrivateBus
    /// The simulator serving on it.
    public let simulator: Simulator
    /// The test's client connection.
    public let client: Connection
    /// Every signal from the simulator, in arrival order.
    public var signals: [DBusMessage] { recorder.events }
    private let recorder = EventRecorder<DBusMessage>()
    private var subscription: SignalSubscription?

    /// Why a wait ended without its event.
    public typealias Timeout = EventRecorder<DBusMessage>.Timeout

    private init(bus: PrivateBus, simulator: Simulator, client: Connection) {
        self.bus = bus
        self.simulator = simulator
        self.client = client
    }

    /// Starts a bus, a simulator with `peripherals` (instant timing unless `configuration`
    /// says otherwise) and a recording client.
    public nonisolated static func start(peripherals: [PeripheralSpec] = [],
                                         configuration: Simulator.Configuration = .init()) async throws -> SimulatorFixture {
        let bus = try await PrivateBus.start()
        return try await start(bus: bus, peripherals: peripherals, configuration: configuration)
    }

    /// The same on a bus the test started itself (one whose policy denies calls, say).
    public nonisolated static func start(on bus: PrivateBus, peripherals: [PeripheralSpec] = [],
                                         configuration: Simulator.Configuration = .init()) async throws -> SimulatorFixture {
        try await start(bus: bus, peripherals: peripherals, configuration: configuration)
    }

    private static func start(bus: PrivateBus, peripherals: [PeripheralSpec],
                              configuration: Simulator.Configuration) async throws -> SimulatorFixture {
        let simulator = Simulator(configuration: configuration)
        for spec in peripherals { simulator.addPeripheral(spec) }
        do {
            try await simulator.start(on: bus.busAddress)
            let client = try await Connection.open(bus.busAddress)
            let fixture = SimulatorFixture(bus: bus, simulator: simulator, client: client)
            fixture.subscription = try client.signals.subscribe(SignalMatch(sender: BlueZ.busName)) { [weak fixture] message in
                fixture?.received(message)
            }
            // A round trip guarantees the match rule is in place before the test acts.
            _ = try await client.call(destination: FreedesktopDBus.busName, path: FreedesktopDBus.path,
                                      interface: FreedesktopDBus.interface, member: FreedesktopDBus.Method.getID)
            return fixture
        } catch {
            simulator.stop(.kill)
            bus.stopInBackground()
            throw error
        }
    }

    private func received(_ message: DBusMessage) {
        recorder.append(message)
    }

    /// Calls a method on `org.bluez`, giving it `timeout` at the tests' clock
    /// (BleSim's `TestTime.scaled(_:)`).
    @discardableResult
    public func call(_ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = [],
                     timeout: Duration = .seconds(10)) async throws(DBusError) -> [DBusValue] {
        try await client.call(destination: BlueZ.busName, path: path, interface: interface, member: member,
                              arguments: arguments, timeout: TestTime.scaled(timeout))
    }

    /// Reads a property.
    public func property(_ path: ObjectPath, _ interface: String, _ name: String) async throws(DBusError) -> DBusValue {
        let reply = try await call(path, FreedesktopDBus.Properties.interface, FreedesktopDBus.Properties.get, [.string(interface), .string(name)])
        guard case .variant(let value)? = reply.first else { throw .decoding(DBusDecodingError(expected: "v", found: "nothing", context: "Get")) }
        return value
    }

    /// Sets a property.
    public func setProperty(_ path: ObjectPath, _ interface: String, _ name: String, _ value: DBusValue) async throws(DBusError) {
        try await call(path, FreedesktopDBus.Properties.interface, FreedesktopDBus.Properties.set, [.string(interface), .string(name), .variant(value)])
    }

    /// Waits for a signal (already received since `since`, or arriving within `timeout`).
    @discardableResult
    public func waitForSignal(since index: Int = 0, timeout: Duration = .seconds(10), _ what: String = "a signal",
                              where predicate: @escaping (DBusMessage) -> Bool) async throws -> DBusMessage {
        try await recorder.first(since: index, timeout: timeout, what, where: predicate)
    }

    /// Waits until a property of an object reads `expected` in a `PropertiesChanged`.
    @discardableResult
    public func waitForProperty(_ path: ObjectPath, _ name: String, _ expected: DBusValue, since index: Int = 0,
                                timeout: Duration = .seconds(10)) async throws -> DBusMessage {
        try await waitForSignal(since: index, timeout: timeout, "\(name)=\(expected) on \(path)") { message in
            message.path == path && message.member == FreedesktopDBus.Properties.propertiesChanged && SimulatorFixture.changedValue(message, name) == expected
        }
    }

    /// The value of `name` in a `PropertiesChanged` signal, if it carries it.
    public static func changedValue(_ message: DBusMessage, _ name: String) -> DBusValue? {
        guard message.body.count == 3, let changed = try? BlueZShapes.propertyMap(message.body[1]) else { return nil }
        return changed[name]
    }

    /// The number of signals so far: pass it as `since` to wait only for later ones.
    public var mark: Int { signals.count }

    /// Stops the simulator, the client and the bus.
    public func tearDown() {
        subscription?.cancel()
        client.close()
        simulator.stop(.kill)
        // Reaping the daemon must not hold up the loop thread that other tests share.
        bus.stopInBackground()
    }
}
