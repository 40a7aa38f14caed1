@testable import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Glibc
import Testing
import BlueZVocabulary

/// A fake `org.bluez` on a private bus: it answers every call through `answer` (or never),
/// and emits whatever signals a test tells it to.
@BleLoop
final class HostileBlueZ {
    let bus: PrivateBus
    let connection: Connection
    var answer: @BleLoop (IncomingCall) -> Void
    /// Calls left unanswered: held, because a released call answers itself with an error.
    var held: [IncomingCall] = []
    /// The members called so far.
    let calls = EventRecorder<String>()

    private init(bus: PrivateBus, connection: Connection, answer: @escaping @BleLoop (IncomingCall) -> Void) {
        self.bus = bus
        self.connection = connection
        self.answer = answer
    }

    static func start(answer: @escaping @BleLoop (IncomingCall) -> Void) async throws -> HostileBlueZ {
        let bus = try await PrivateBus.start()
        let connection = try await Connection.open(bus.busAddress)
        let fake = HostileBlueZ(bus: bus, connection: connection, answer: answer)
        connection.objects.callFilter = { [weak fake] call in
            guard let fake else { return false }
            fake.calls.append(call.member)
            fake.answer(call)
            fake.held.append(call)
            return true
        }
        let reply = try await connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                              interface: "org.freedesktop.DBus", member: "RequestName",
                                              arguments: [.string("org.bluez"), .uint32(0)])
        #expect(reply == [.uint32(1)])
        return fake
    }

    var busAddress: String {
        if case .address(let text) = bus.busAddress { return text }
        return ""
    }

    func emit(_ path: ObjectPath, _ interface: String, _ member: String, _ body: [DBusValue], to destination: String? = nil) {
        do {
            try connection.emitSignal(path: path, interface: interface, member: member, body: body, destination: destination)
        } catch {
            Issue.record("the fake could not emit \(member): \(error)")
        }
    }

    /// Starts a scan and waits until the fake was asked to discover; then says it discovers.
    func startScan(_ central: CentralManager, allowDuplicates: Bool = false) async throws {
        let mark = calls.events.count
        central.scanForPeripherals(withServices: nil, options: [CBCentralManagerScanOptionAllowDuplicatesKey: allowDuplicates])
        try await calls.first(since: mark, timeout: .seconds(20), "StartDiscovery") { $0 == "StartDiscovery" }
        emit(Self.adapter, "org.freedesktop.DBus.Properties", "PropertiesChanged", [
            .string("org.bluez.Adapter1"), BlueZShapes.propertyDictionary([("Discovering", .boolean(true))]), .array(element: .string, []),
        ])
    }

    func tearDown() {
        held.removeAll()
        connection.close()
        bus.stopInBackground()
    }

    // MARK: Shapes

    static let adapter: ObjectPath = "/org/bluez/hci0"

    static func device(_ suffix: String) -> ObjectPath { ObjectPath(stringLiteral: "/org/bluez/hci0/dev_\(suffix)") }

    static func interfaces(_ entries: [(String, [(String, DBusValue)])]) -> DBusValue {
        .dictionary(key: .string, value: .dictionary(key: .string, value: .variant), entries.map {
            DBusDictionaryEntry(key: .string($0.0), value: BlueZShapes.propertyDictionary($0.1))
        })
    }

    static func objects(_ entries: [(ObjectPath, DBusValue)]) -> DBusValue {
        .dictionary(key: .objectPath, value: .dictionary(key: .string, value: .dictionary(key: .string, value: .variant)),
                    entries.map { DBusDictionaryEntry(key: .objectPath($0.0), value: $0.1) })
    }

    static let goodAdapter: (ObjectPath, DBusValue) = (adapter, interfaces([("org.bluez.Adapter1", [
        ("Address", .string("00:AA:01:00:00:00")), ("Name", .string("hostile")), ("Powered", .boolean(true)),
        ("Discovering", .boolean(false)), ("UUIDs", .array(element: .string, [])),
    ])]))

    static func goodDevice(_ address: String) -> (ObjectPath, DBusValue) {
        (device(address.replacingOccurrences(of: ":", with: "_")), interfaces([("org.bluez.Device1", [
            ("Address", .string(address)), ("AddressType", .string("random")), ("Name", .string("good")),
            ("Adapter", .objectPath(adapter)), ("Connected", .boolean(false)), ("ServicesResolved", .boolean(false)),
            ("RSSI", .int16(-50)), ("UUIDs", .array(element: .string, [])),
        ])]))
    }

    /// Answers the calls a central makes while starting and scanning; everything else never.
    static func ordinary(objects tree: DBusValue) -> @BleLoop (IncomingCall) -> Void {
        { call in
            switch call.member {
            case "GetManagedObjects": call.reply([tree])
            case "StartDiscovery", "StopDiscovery", "SetDiscoveryFilter": call.reply()
            case "Get": call.fail(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "no such property")
            case "GetAll": call.reply([BlueZShapes.propertyDictionary([])])
            default: break  // never answered
            }
        }
    }
}

/// Broken and hostile peers: a fake bluetoothd sending wrong types, odd paths, huge values and
/// floods; another process forging BlueZ's signals; fds that are not sockets. Each is a typed
/// error or ignored, never a crash, a hang, or a believed forgery.
@Suite(.timeLimit(.minutes(TestTime.minutes(1))))
@BleLoop
struct HostilePeerTests {
    static let good = "C0:FF:EE:00:00:09"
    static let late = "C0:FF:EE:00:00:0A"
    static let outside = "C0:FF:EE:00:00:0B"

    /// A central on the fake. Its operations are expected to succeed (the fake answers them), so
    /// their timeout is at the tests' clock; the connect's is the deadline the never-answered
    /// test checks, so it is not.
    static func central(_ fake: HostileBlueZ, _ recorder: Recorder, operationTimeout: Duration = .milliseconds(500)) -> CentralManager {
        CentralManager(delegate: recorder, queue: nil, options: CentralManagerOptions(
            bus: .address(fake.busAddress), operationTimeout: TestTime.scaled(operationTimeout), connectTimeout: .seconds(1), connectRetries: 0))
    }

    static func discovered(_ recorder: Recorder) -> [String] {
        recorder.events.compactMap { if case .discovered(let p, _, _) = $0 { return p.address }; return nil }
    }

    @Test func wrongTypesMissingPropertiesOddPathsAndHugeValuesAreIgnored() async throws {
        let huge = Data(repeating: 0xAB, count: 64 << 10)
        let tree = HostileBlueZ.objects([
            HostileBlueZ.goodAdapter,
            HostileBlueZ.goodDevice(Self.good),
            // Wrong types everywhere.
            (HostileBlueZ.device("BAD_TYPES"), HostileBlueZ.interfaces([("org.bluez.Device1", [
                ("Address", .uint32(7)), ("RSSI", .string("loud")), ("Connected", .string("yes")), ("UUIDs", .string("180d")),
                ("Adapter", .string("/org/bluez/hci0")), ("ManufacturerData", .bytes(Data([1, 2]))),
            ])])),
            // Required properties missing.
            (HostileBlueZ.device("NO_ADDRESS"), HostileBlueZ.interfaces([("org.bluez.Device1", [("Name", .string("anon"))])])),
            // Huge arrays and values.
            (HostileBlueZ.device("HUGE"), HostileBlueZ.interfaces([("org.bluez.Device1", [
                ("Address", .string("C0:FF:EE:00:00:0C")), ("Adapter", .objectPath(HostileBlueZ.adapter)), ("RSSI", .int16(-40)),
                ("Name", .string(String(repeating: "n", count: 10_000))),
                ("UUIDs", .array(element: .string, (0..<2_000).map { _ in .string("0000180d-0000-1000-8000-00805f9b34fb") })),
                ("ManufacturerData", BlueZShapes.manufacturerDataValue([0x004c: huge])),
            ])])),
            // A device outside /org/bluez, and one under an unknown interface only.
            (ObjectPath(stringLiteral: "/evil/dev_C0_FF_EE_00_00_0B"), HostileBlueZ.interfaces([("org.bluez.Device1", [
                ("Address", .string(Self.outside)), ("Adapter", .objectPath(HostileBlueZ.adapter)), ("RSSI", .int16(-30)),
            ])])),
            (HostileBlueZ.device("UNKNOWN"), HostileBlueZ.interfaces([("com.example.Evil1", [("Address", .string("C0:FF:EE:00:00:0D"))])])),
        ])
        let fake = try await HostileBlueZ.start(answer: HostileBlueZ.ordinary(objects: tree))
        defer { fake.tearDown() }
        let recorder = Recorder()
        // Loading the huge tree is one GetManagedObjects: 500 ms was too short for it under the
        // sanitizers (the central gave up and went unsupported); what is checked here is what
        // the tree's bad objects become, not how fast it loads.
        let central = Self.central(fake, recorder, operationTimeout: .seconds(5))
        defer { central.close() }
        try await recorder.wait("poweredOn") { if case .state(.poweredOn) = $0 { return true }; return false }
        try await fake.startScan(central, allowDuplicates: true)
        // Every device "hears" an advertisement; then a well-formed newcomer proves the loop is alive.
        for suffix in ["C0_FF_EE_00_00_09", "BAD_TYPES", "NO_ADDRESS", "HUGE", "UNKNOWN"] {
            fake.emit(HostileBlueZ.device(suffix), "org.freedesktop.DBus.Properties", "PropertiesChanged",
                      [.string("org.bluez.Device1"), BlueZShapes.propertyDictionary([("RSSI", .int16(-45))]), .array(element: .string, [])])
        }
        fake.emit(ObjectPath(stringLiteral: "/evil/dev_C0_FF_EE_00_00_0B"), "org.freedesktop.DBus.Properties", "PropertiesChanged",
                  [.string("org.bluez.Device1"), BlueZShapes.propertyDictionary([("RSSI", .int16(-45))]), .array(element: .string, [])])
        let late = HostileBlueZ.goodDevice(Self.late)
        fake.emit("/", "org.freedesktop.DBus.ObjectManager", "InterfacesAdded", [.objectPath(late.0), late.1])
        try await recorder.wait("the late device") { if case .discovered(let p, _, _) = $0 { return p.address == Self.late }; return false }
        let seen = Set(Self.discovered(recorder))
        #expect(seen.contains(Self.late))
        #expect(!seen.contains(Self.outside), "a device outside /org/bluez was believed")
        #expect(seen.isSubset(of: [Self.good, Self.late, "C0:FF:EE:00:00:0C"]), "\(seen)")
        if let huge = recorder.events.lazy.compactMap({ event -> AdvertisementData? in
            if case .discovered(let p, let advertisement, _) = event, p.address == "C0:FF:EE:00:00:0C" { return advertisement }
            return nil
        }).first {
            #expect(huge.manufacturerData[0x004c]?.count == huge.manufacturerData[0x004c]?.count)
        }
    }

    @Test func wrongSignaturesAndFloodsOfSignalsAreDroppedAndTheLoopStaysResponsive() async throws {
        let tree = HostileBlueZ.objects([HostileBlueZ.goodAdapter, HostileBlueZ.goodDevice(Self.good)])
        let fake = try await HostileBlueZ.start(answer: HostileBlueZ.ordinary(objects: tree))
        defer { fake.tearDown() }
        let recorder = Recorder()
        let central = Self.central(fake, recorder)
        defer { central.close() }
        try await recorder.wait("poweredOn") { if case .state(.poweredOn) = $0 { return true }; return false }
        try await fake.startScan(central)
        let device = HostileBlueZ.device("C0_FF_EE_00_00_09")
        let properties = "org.freedesktop.DBus.Properties"
        let manager = "org.freedesktop.DBus.ObjectManager"
        // Wrong signatures for every signal BleKit listens to.
        fake.emit("/", manager, "InterfacesAdded", [.string("not a path")])
        fake.emit("/", manager, "InterfacesAdded", [.objectPath(device), .string("not a map")])
        fake.emit("/", manager, "InterfacesRemoved", [.uint32(1), .uint32(2)])
        fake.emit(device, properties, "PropertiesChanged", [.uint32(1)])
        fake.emit(device, properties, "PropertiesChanged", [.string("org.bluez.Device1"), .string("x"), .string("y")])
        fake.emit(device, properties, "PropertiesChanged", [.string("org.bluez.Device1"),
                                                            BlueZShapes.propertyDictionary([("RSSI", .string("loud")), ("Connected", .uint32(1))]),
                                                            .array(element: .string, [])])
        fake.emit(HostileBlueZ.adapter, properties, "PropertiesChanged", [.string("org.bluez.Adapter1"),
                                                                          BlueZShapes.propertyDictionary([("Powered", .string("off"))]),
                                                                          .array(element: .string, [])])
        // A flood: 2,000 advertisements of the same device (the fake shares the test's loop; the
        // out-of-process flood of 20,000 is LoopStallBenchmark's).
        for index in 0..<2_000 {
            fake.emit(device, properties, "PropertiesChanged", [.string("org.bluez.Device1"),
                                                                BlueZShapes.propertyDictionary([("RSSI", .int16(Int16(-40 - index % 30)))]),
                                                                .array(element: .string, [])])
        }
        let late = HostileBlueZ.goodDevice(Self.late)
        fake.emit("/", manager, "InterfacesAdded", [.objectPath(late.0), late.1])
        try await recorder.wait(timeout: .seconds(30), "the late device") {
            if case .discovered(let p, _, _) = $0 { return p.address == Self.late }
            return false
        }
        // Without allowDuplicates the flood is one discovery; the wrong-typed Powered changed nothing.
        #expect(Self.discovered(recorder).filter { $0 == Self.good }.count == 1)
        #expect(central.state == .poweredOn)
        #expect(central.diagnostics.connection.pendingCalls == 0)
    }

    @Test func callsTheFakeNeverAnswersEndAtTheirDeadlines() async throws {
        let tree = HostileBlueZ.objects([HostileBlueZ.goodAdapter, HostileBlueZ.goodDevice(Self.good)])
        let fake = try await HostileBlueZ.start(answer: HostileBlueZ.ordinary(objects: tree))
        defer { fake.tearDown() }
        let recorder = Recorder()
        let central = Self.central(fake, recorder)
        defer { central.close() }
        try await recorder.wait("poweredOn") { if case .state(.poweredOn) = $0 { return true }; return false }
        try await fake.startScan(central)
        fake.emit(HostileBlueZ.device("C0_FF_EE_00_00_09"), "org.freedesktop.DBus.Properties", "PropertiesChanged",
                  [.string("org.bluez.Device1"), BlueZShapes.propertyDictionary([("RSSI", .int16(-45))]), .array(element: .string, [])])
        let found = try await recorder.wait("the device") { if case .discovered = $0 { return true }; return false }
        guard case .discovered(let peripheral, _, _) = found else { return }
        central.stopScan()
        central.connect(peripheral)
        let event = try await recorder.wait("the connect's end") {
            if case .failedToConnect(let p, _) = $0 { return p === peripheral }
            if case .connected(let p) = $0 { return p === peripheral }
            return false
        }
        #expect(event.error == .connectionTimeout, "\(event)")
        #expect(central.diagnostics.pendingOperations == 0)
    }

    @Test func aNotifyFileDescriptorThatIsNotASocketIsRefusedAndStartNotifyTakesOver() async throws {
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        var ends: [Int32] = [0, 0]
        #expect(pipe(&ends) == 0)
        close(ends[1])
        bench.simulator.faults.replyWrongShape(to: "AcquireNotify", with: [.unixFD(UnixFileDescriptor(adopting: ends[0])), .uint16(247)])
        let notify = bench.characteristic(peripheral, Sample.notify)
        let mark = bench.recorder.mark
        peripheral.setNotifyValue(true, for: notify)
        let state = try await bench.recorder.wait(since: mark, "notifications on") {
            if case .notifyState(let c, _, _) = $0 { return c === notify }
            return false
        }
        #expect(state.error == nil && notify.isNotifyingOnLoop, "\(state)")
        // Not deaf: a notification arrives (through StartNotify's signals).
        bench.simulator.peripheral(Sample.address)?.notify("ff02", value: Data([0x5A]))
        try await bench.recorder.wait(since: mark, "the notification") {
            if case .value(let c, let d, nil) = $0 { return c === notify && d == Data([0x5A]) }
            return false
        }
        #expect(bench.central.diagnostics.fileDescriptors == 0)
    }

    @Test func forgedSignalsFromAnotherProcessAreNotBelieved() async throws {
        let bench = try await Bench.start([Sample.spec()])
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let notify = bench.characteristic(peripheral, Sample.notify)
        let forger = try await Connection.open(bench.fixture.bus.busAddress)
        defer { forger.close() }
        let central = bench.central.dbusConnection!.uniqueName
        let device = peripheral.devicePath
        let mark = bench.recorder.mark
        let properties = "org.freedesktop.DBus.Properties"
        for destination in [nil, central] {
            // The link "dropped", a notification "arrived", a new device "appeared", bluetoothd "left".
            try forger.emitSignal(path: device, interface: properties, member: "PropertiesChanged", body: [
                .string("org.bluez.Device1"), BlueZShapes.propertyDictionary([("Connected", .boolean(false))]), .array(element: .string, []),
            ], destination: destination)
            try forger.emitSignal(path: notify.path, interface: properties, member: "PropertiesChanged", body: [
                .string("org.bluez.GattCharacteristic1"), BlueZShapes.propertyDictionary([("Value", .bytes(Data([0x66])))]),
                .array(element: .string, []),
            ], destination: destination)
            let fake = HostileBlueZ.goodDevice(Self.late)
            try forger.emitSignal(path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded",
                                  body: [.objectPath(fake.0), fake.1], destination: destination)
            let owner = bench.central.dbusConnection?.signals.currentOwner(of: "org.bluez") ?? ""
            try forger.emitSignal(path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "NameOwnerChanged",
                                  body: [.string("org.bluez"), .string(owner), .string("")], destination: destination)
        }
        // A name takeover: bluetoothd does not allow replacement, so the forger only queues.
        let takeover = try await forger.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                             interface: "org.freedesktop.DBus", member: "RequestName",
                                             arguments: [.string("org.bluez"), .uint32(2)])
        #expect(takeover != [.uint32(1)], "the forger took org.bluez")
        // The real daemon still answers, and nothing forged was believed.
        let read = bench.recorder.mark
        peripheral.readValue(for: bench.characteristic(peripheral, Sample.readWrite))
        let value = try await bench.recorder.wait(since: read, "a read") { $0.isValue }
        #expect(value.error == nil)
        #expect(peripheral.state == .connected)
        #expect(bench.central.state == .poweredOn)
        #expect(bench.recorder.count(since: mark) {
            switch $0 {
            case .disconnected, .state: return true
            case .value(let c, _, _): return c === notify
            case .discovered(let p, _, _): return p.address == Self.late
            default: return false
            }
        } == 0, "a forged signal was believed")
    }
}

