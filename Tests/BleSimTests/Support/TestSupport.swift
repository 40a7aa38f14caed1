import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Glibc
import Testing
import BlueZVocabulary

// Shared vocabulary of the BleSim tests: a peripheral with every kind of characteristic the
// observed bluetoothd log exercised, the interface names, and fixture helpers that keep the
// tests short (discover, connect, find a GATT object, call and note where the reply fell
// among the signals).

enum Interface {
    static let adapter = "org.bluez.Adapter1"
    static let device = "org.bluez.Device1"
    static let service = "org.bluez.GattService1"
    static let characteristic = "org.bluez.GattCharacteristic1"
    static let descriptor = "org.bluez.GattDescriptor1"
    static let agentManager = "org.bluez.AgentManager1"
    static let properties = "org.freedesktop.DBus.Properties"
    static let introspectable = "org.freedesktop.DBus.Introspectable"
    static let objectManager = "org.freedesktop.DBus.ObjectManager"
}

/// The 128-bit form of a 16-bit UUID.
func uuid128(_ short: String) -> String { "0000\(short.lowercased())-0000-1000-8000-00805f9b34fb" }

/// An `a{sv}` option dictionary.
func options(_ pairs: [(String, DBusValue)] = []) -> DBusValue { BlueZShapes.propertyDictionary(pairs) }

/// A peripheral shaped like the observed log's: one service with a read/write, a read-only, a
/// write-without-response, a notify, an indicate-only characteristic, one with
/// read+write-without-response+notify (like the reference `char001d`), and one with a user
/// descriptor. A write to `rw` is echoed as a notification on `notify`.
enum Golden {
    static let address = "C0:FF:EE:00:00:01"
    static let name = "golden-periph"
    static let gapName = "BlueZ 5.66"
    static let service = uuid128("ff00")
    static let rw = uuid128("ff01")
    static let readOnly = uuid128("ff02")
    static let writeWithoutResponse = uuid128("ff03")
    static let notify = uuid128("ff04")
    static let indicate = uuid128("ff05")
    static let combo = uuid128("ff06")
    static let described = uuid128("ff07")
    static let userDescription = uuid128("2901")
    static let cccd = uuid128("2902")
    static let initialValue = Data("0123456789".utf8)

    static func spec(address: String = Golden.address, name: String? = Golden.name, gapName: String? = Golden.gapName,
                     rssi: Int16 = -50) -> PeripheralSpec {
        PeripheralSpec(
            address: address, name: name, gapName: gapName, rssi: rssi,
            manufacturerData: [0xFFFF: Data([0x01, 0x02])], serviceData: ["1234": Data([0x05])],
            serviceUUIDs: [service],
            services: [ServiceSpec(uuid: service, characteristics: [
                CharacteristicSpec(uuid: rw, flags: ["read", "write"], value: initialValue),
                CharacteristicSpec(uuid: readOnly, flags: ["read"], value: Data([0x52, 0x4f])),
                CharacteristicSpec(uuid: writeWithoutResponse, flags: ["write-without-response"]),
                CharacteristicSpec(uuid: notify, flags: ["read", "notify"], value: Data([0x00])),
                CharacteristicSpec(uuid: indicate, flags: ["indicate"]),
                CharacteristicSpec(uuid: combo, flags: ["read", "write-without-response", "notify"], value: Data([0x0c])),
                CharacteristicSpec(uuid: described, flags: ["read"], value: Data([0x07]),
                                   descriptors: [DescriptorSpec(uuid: "2901", flags: ["read", "write"], value: Data("Hello".utf8))]),
            ])],
            rules: [BehaviourRule(.write(characteristic: rw, prefix: nil), [.echo(characteristic: notify)])])
    }
}

// MARK: Errors

/// Expects `body` to fail with the D-Bus error `name` and, when given, exactly `message`.
@BleLoop
func expectDBusError(_ name: String, _ message: String? = nil, sourceLocation: SourceLocation = #_sourceLocation,
                     _ body: @BleLoop () async throws -> Void) async {
    do {
        try await body()
        Issue.record("expected \(name) \(message.map { "\"\($0)\"" } ?? ""), but the call succeeded", sourceLocation: sourceLocation)
    } catch let error as DBusError {
        guard case .remote(let gotName, let gotMessage) = error else {
            Issue.record("expected \(name), got \(error)", sourceLocation: sourceLocation)
            return
        }
        #expect(gotName == name, sourceLocation: sourceLocation)
        if let message { #expect(gotMessage == message, sourceLocation: sourceLocation) }
    } catch {
        Issue.record("expected \(name), got \(error)", sourceLocation: sourceLocation)
    }
}

/// The `.remote` name and message of a failed result.
func remoteError<T>(_ result: Result<T, DBusError>) -> (name: String, message: String)? {
    if case .failure(.remote(let name, let message)) = result { return (name, message) }
    return nil
}

// MARK: Signals

extension DBusMessage {
    var isPropertiesChanged: Bool { member == "PropertiesChanged" && interface == Interface.properties }

    /// The interface named in a PropertiesChanged.
    var changedInterface: String? {
        guard isPropertiesChanged, case .string(let name)? = body.first else { return nil }
        return name
    }

    /// The changed property names, in the signal's order.
    var changedNames: [String] {
        guard isPropertiesChanged, body.count == 3, case .dictionary(_, _, let entries) = body[1] else { return [] }
        return entries.compactMap { if case .string(let key) = $0.key { return key } else { return nil } }
    }

    /// The invalidated property names.
    var invalidatedNames: [String] {
        guard isPropertiesChanged, body.count == 3, case .array(_, let names) = body[2] else { return [] }
        return names.compactMap { if case .string(let name) = $0 { return name } else { return nil } }
    }

    /// The value of `name` in a PropertiesChanged.
    func changed(_ name: String) -> DBusValue? {
        guard isPropertiesChanged, body.count == 3, let map = try? BlueZShapes.propertyMap(body[1]) else { return nil }
        return map[name]
    }

    /// True for a PropertiesChanged on `path` that carries `name` (with `value`, when given).
    func changes(_ path: ObjectPath, _ name: String, to value: DBusValue? = nil) -> Bool {
        guard self.path == path, isPropertiesChanged, let current = changed(name) else { return false }
        return value.map { $0 == current } ?? true
    }

    /// The object of an InterfacesAdded.
    var addedObject: ObjectPath? {
        guard member == "InterfacesAdded", case .objectPath(let path)? = body.first else { return nil }
        return path
    }

    /// The object of an InterfacesRemoved.
    var removedObject: ObjectPath? {
        guard member == "InterfacesRemoved", case .objectPath(let path)? = body.first else { return nil }
        return path
    }

    /// The interface names of an InterfacesAdded (in order) or an InterfacesRemoved.
    var interfaceNames: [String] {
        guard body.count == 2 else { return [] }
        switch body[1] {
        case .dictionary(_, _, let entries):
            return entries.compactMap { if case .string(let key) = $0.key { return key } else { return nil } }
        case .array(_, let names):
            return names.compactMap { if case .string(let name) = $0 { return name } else { return nil } }
        default:
            return []
        }
    }

    /// The properties of `interface` in an InterfacesAdded, in order.
    func addedProperties(_ interface: String) -> [(String, DBusValue)] {
        guard body.count == 2, case .dictionary(_, _, let entries) = body[1],
              let entry = entries.first(where: { $0.key == .string(interface) }),
              case .dictionary(_, _, let properties) = entry.value else { return [] }
        return properties.compactMap { property in
            guard case .string(let key) = property.key, case .variant(let value) = property.value else { return nil }
            return (key, value)
        }
    }
}

/// Records signals matching several rules into one list, in arrival order (the fixture's own
/// list holds only `org.bluez`'s signals, not the bus's NameOwnerChanged).
@BleLoop
final class SignalLog {
    var messages: [DBusMessage] { recorder.events }
    private let recorder = EventRecorder<DBusMessage>()
    private var subscriptions: [SignalSubscription] = []

    init(_ connection: Connection, _ matches: [SignalMatch]) throws {
        for match in matches {
            subscriptions.append(try connection.signals.subscribe(match) { [weak self] message in self?.received(message) })
        }
    }

    private func received(_ message: DBusMessage) {
        recorder.append(message)
    }

    /// The first message since `since` that satisfies `predicate`, waiting deadline-bound.
    @discardableResult
    func wait(since: Int = 0, timeout: Duration = .seconds(10), _ what: String,
              where predicate: @escaping (DBusMessage) -> Bool) async throws -> DBusMessage {
        try await recorder.first(since: since, timeout: timeout, what, where: predicate)
    }

    func cancel() { subscriptions.forEach { $0.cancel() } }

    /// org.bluez's signals plus the bus's NameOwnerChanged for org.bluez.
    static func daemon(_ connection: Connection) throws -> SignalLog {
        try SignalLog(connection, [SignalMatch(sender: "org.bluez"),
                                   SignalMatch(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
                                               member: "NameOwnerChanged", arg0: "org.bluez")])
    }


}

extension DBusMessage {
    var isBluezNameOwnerChange: Bool {
        member == "NameOwnerChanged" && body.first == .string("org.bluez")
    }
    /// The new owner in a NameOwnerChanged.
    var newOwner: String? {
        guard member == "NameOwnerChanged", body.count == 3, case .string(let owner) = body[2] else { return nil }
        return owner
    }
}

// MARK: Fixture helpers

extension SimulatorFixture {
    nonisolated static let hci0: ObjectPath = "/org/bluez/hci0"
    nonisolated static let hci1: ObjectPath = "/org/bluez/hci1"

    /// `/org/bluez/hciN/dev_AA_BB_…`.
    nonisolated static func devicePath(_ address: String, adapter: String = "hci0") -> ObjectPath {
        try! ObjectPath("/org/bluez/\(adapter)/dev_" + address.uppercased().replacingOccurrences(of: ":", with: "_"))
    }

    /// A fixture with the golden peripheral, discovered (discovery stopped again) and
    /// connected, services resolved.
    static func connected(_ spec: PeripheralSpec = Golden.spec(),
                          configuration: Simulator.Configuration = .init()) async throws -> (SimulatorFixture, ObjectPath) {
        let fixture = try await SimulatorFixture.start(peripherals: [spec], configuration: configuration)
        do {
            let device = try await fixture.discover(spec.address)
            try await fixture.connect(device)
            return (fixture, device)
        } catch {
            fixture.tearDown()
            throw error
        }
    }

    /// Starts discovery on `adapter`, waits for the device to appear and (by default) stops
    /// discovery again.
    @discardableResult
    func discover(_ address: String, adapter: ObjectPath = SimulatorFixture.hci0, stop: Bool = true) async throws -> ObjectPath {
        let device = try ObjectPath(adapter.rawValue + "/dev_" + address.uppercased().replacingOccurrences(of: ":", with: "_"))
        let since = mark
        try await call(adapter, Interface.adapter, "StartDiscovery")
        try await waitForSignal(since: since, "InterfacesAdded of \(device)") { $0.addedObject == device }
        if stop { try await call(adapter, Interface.adapter, "StopDiscovery") }
        return device
    }

    /// Connects and waits for ServicesResolved=true.
    func connect(_ device: ObjectPath) async throws {
        let since = mark
        try await call(device, Interface.device, "Connect")
        try await waitForProperty(device, "ServicesResolved", .boolean(true), since: since)
    }

    /// Disconnects and waits for Connected=false.
    func disconnect(_ device: ObjectPath) async throws {
        let since = mark
        try await call(device, Interface.device, "Disconnect")
        try await waitForProperty(device, "Connected", .boolean(false), since: since)
    }

    func managedObjects() async throws -> ManagedObjects {
        let reply = try await call(.root, Interface.objectManager, "GetManagedObjects")
        return try BlueZShapes.managedObjects(reply[0])
    }

    /// The GATT object (service, characteristic or descriptor) below `device` with `uuid`;
    /// `under` narrows the search to one characteristic's descriptors.
    func gattObject(_ device: ObjectPath, _ uuid: String, interface: String = Interface.characteristic,
                    under parent: ObjectPath? = nil, sourceLocation: SourceLocation = #_sourceLocation) async throws -> ObjectPath {
        let objects = try await managedObjects()
        let found = objects.keys.sorted().first { path in
            guard path.isDescendant(of: parent ?? device, orEqual: false),
                  let properties = objects[path]?[interface] else { return false }
            return properties["UUID"] == .string(uuid)
        }
        guard let found else {
            Issue.record("no \(interface) with UUID \(uuid) below \(parent ?? device)", sourceLocation: sourceLocation)
            throw FixtureError.missing(uuid)
        }
        return found
    }

    /// A call whose reply is noted with the number of signals received before it: everything
    /// at an index below `mark` came before the reply, everything from `mark` on after it.
    func callMarked(_ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = [],
                    on connection: Connection? = nil, timeout: Duration = .seconds(10))
        async -> (result: Result<[DBusValue], DBusError>, mark: Int) {
        await send(path, interface, member, arguments, on: connection, timeout: timeout).reply
    }

    /// Sends a call now, without waiting: calls sent one after the other reach the simulator in
    /// that order. The reply is noted with the signal mark at its arrival.
    func send(_ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = [],
              on connection: Connection? = nil, timeout: Duration = .seconds(10)) -> PendingReply {
        let client = connection ?? self.client
        let pending = PendingReply()
        // The completion runs while the reply is being dispatched, before any later message.
        client.call(destination: "org.bluez", path: path, interface: interface, member: member,
                    arguments: arguments, timeout: timeout) { [self] result in
            BleLoop.assumeIsolated { pending.finish(result, mark: self.mark) }
        }
        return pending
    }

    /// The index of the first signal since `since` that satisfies `predicate`.
    func index(since: Int = 0, _ predicate: (DBusMessage) -> Bool) -> Int? {
        signals.indices.dropFirst(since).first { predicate(signals[$0]) }
    }

    /// A round trip to the simulator: signals it emitted before answering are in by now.
    func barrier() async throws {
        _ = try await call(.root, Interface.introspectable, "Introspect")
    }

    /// Signals since `since` that satisfy `predicate`.
    func signals(since: Int, where predicate: (DBusMessage) -> Bool) -> [DBusMessage] {
        signals.dropFirst(since).filter(predicate)
    }

    /// A second client on the same bus.
    func secondClient() async throws -> Connection {
        try await Connection.open(bus.busAddress)
    }
}

enum FixtureError: Error {
    case missing(String)
    case unexpected(String)
}

extension Connection {
    /// Calls `org.bluez`.
    @discardableResult
    func bluez(_ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = [],
               timeout: Duration = .seconds(10)) async throws(DBusError) -> [DBusValue] {
        try await call(destination: "org.bluez", path: path, interface: interface, member: member, arguments: arguments,
                       timeout: timeout)
    }
}

/// The peripheral's write number `index` (0-based, see `VirtualPeripheral.writes`), waiting
/// for it deadline-bound: take `peripheral.writes.count` before the call, then wait for it.
@BleLoop
func receivedWrite(_ index: Int, by peripheral: VirtualPeripheral, timeout: Duration = .seconds(5)) async throws -> VirtualPeripheral.ReceivedWrite {
    if peripheral.writes.count > index { return peripheral.writes[index] }
    let box = WriteWaiter()
    await withCheckedContinuation { continuation in
        box.continuation = continuation
        box.timer = LoopTimer.scheduled(after: timeout) { box.resume() }
        peripheral.onWrite = { _, peripheral in if peripheral.writes.count > index { box.resume() } }
    }
    peripheral.onWrite = nil
    guard peripheral.writes.count > index else {
        throw FixtureError.unexpected("write #\(index) did not reach the peripheral within \(timeout)")
    }
    return peripheral.writes[index]
}

@BleLoop
private final class WriteWaiter {
    var continuation: CheckedContinuation<Void, Never>?
    var timer: LoopTimer?

    func resume() {
        timer?.cancel()
        timer = nil
        continuation?.resume()
        continuation = nil
    }
}

/// A call already sent; `reply` awaits its result and the signal mark at its arrival.
@BleLoop
final class PendingReply {
    private var outcome: (result: Result<[DBusValue], DBusError>, mark: Int)?
    private var waiters: [CheckedContinuation<(result: Result<[DBusValue], DBusError>, mark: Int), Never>] = []

    func finish(_ result: Result<[DBusValue], DBusError>, mark: Int) {
        outcome = (result, mark)
        for waiter in waiters { waiter.resume(returning: (result, mark)) }
        waiters.removeAll()
    }

    var reply: (result: Result<[DBusValue], DBusError>, mark: Int) {
        get async {
            if let outcome { return outcome }
            return await withCheckedContinuation { waiters.append($0) }
        }
    }
}

extension VirtualPeripheral.ReceivedWrite {
    /// (uuid, value, withResponse), to compare in one expectation.
    var fields: (String, Data, Bool) { (uuid, value, withResponse) }
}

extension DBusValue {
    var bytesValue: Data? { if case .bytes(let data) = self { return data } else { return nil } }
}

/// Reads one packet from a socket, waiting at most `timeout` seconds at the tests' clock; nil
/// on timeout, EOF (empty packet) or error. It waits on a thread of its own, never on the BleLoop that the
/// simulator and every test share.
func receivePacket(_ descriptor: Int32, timeout: Double = 5) async -> Data? {
    await Task.detached { () -> Data? in
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(TestTime.scaled(timeout) * 1000)) > 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 2048)
        let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        guard count >= 0 else { return nil }
        return Data(buffer[0..<count])
    }.value
}
