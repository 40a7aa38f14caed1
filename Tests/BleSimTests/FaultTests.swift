import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// The FaultInjector and the simulator's control surface: adapters losing power or going
/// away, connection failures as bluetoothd reports them, link loss, notification faults, stuck
/// calls, AccessDenied, ATT errors, and a GATT database that changes between connections.
struct FaultTests {
    static let device = SimulatorFixture.devicePath(Golden.address)

    // MARK: Adapters

    @BleLoop
    @Test func poweringAnAdapterOffDropsItsLinksThenSignalsPoweredAndDiscoveringFalse() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let since = fixture.mark
        fixture.simulator.adapter("hci0")?.setPowered(false)
        let off = try await fixture.waitForProperty(SimulatorFixture.hci0, "Powered", .boolean(false), since: since)
        #expect(off.changedNames == ["Powered", "Discovering"])
        let dropped = try #require(fixture.index(since: since) { $0.changes(device, "Connected", to: .boolean(false)) })
        let powered = try #require(fixture.index(since: since) { $0.changes(SimulatorFixture.hci0, "Powered") })
        #expect(dropped < powered)
        #expect(fixture.signals[dropped].changed("ServicesResolved") == .boolean(false))
        await expectDBusError("org.bluez.Error.NotReady", "Resource Not Ready") {
            try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        }
    }

    @BleLoop
    @Test func poweringAnAdapterBackOnSignalsPoweredTrueAndItDiscoversAgain() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let adapter = try #require(fixture.simulator.adapter("hci0"))
        adapter.setPowered(false)
        try await fixture.waitForProperty(SimulatorFixture.hci0, "Powered", .boolean(false))
        let since = fixture.mark
        adapter.setPowered(true)
        let on = try await fixture.waitForProperty(SimulatorFixture.hci0, "Powered", .boolean(true), since: since)
        #expect(on.changedNames == ["Powered"])
        try await fixture.discover(Golden.address)
    }

    @BleLoop
    @Test func removingAnAdapterRemovesItsDevicesThenItsObject() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let device = try await fixture.discover(Golden.address)
        let since = fixture.mark
        fixture.simulator.removeAdapter("hci0")
        let removed = try await fixture.waitForSignal(since: since) { $0.removedObject == SimulatorFixture.hci0 }
        #expect(removed.interfaceNames == [Interface.properties, Interface.introspectable, Interface.adapter,
                                           "org.bluez.GattManager1", "org.bluez.Media1", "org.bluez.NetworkServer1",
                                           "org.bluez.LEAdvertisingManager1"])
        let deviceGone = try #require(fixture.index(since: since) { $0.removedObject == device })
        let adapterGone = try #require(fixture.index(since: since) { $0.removedObject == SimulatorFixture.hci0 })
        #expect(deviceGone < adapterGone)
        await expectDBusError("org.freedesktop.DBus.Error.UnknownObject") {
            try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        }
        #expect(try await fixture.managedObjects()[SimulatorFixture.hci1] != nil, "the other adapter stays")
    }

    @BleLoop
    @Test func pluggingInAnAdapterAnnouncesIt() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        fixture.simulator.addAdapter(.init(index: 2))
        let added = try await fixture.waitForSignal { $0.addedObject == "/org/bluez/hci2" }
        #expect(added.interfaceNames.contains(Interface.adapter))
        #expect(Dictionary(uniqueKeysWithValues: added.addedProperties(Interface.adapter))["Address"] == .string("00:AA:01:00:00:02"))
    }

    // MARK: Connect failures

    @BleLoop
    @Test func abortByLocalShowsConnectedTrueThenTheErrorThenConnectedFalse() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let device = try await fixture.discover(Golden.address)
        fixture.simulator.faults.failConnect(Golden.address, with: .abortByLocal)
        let since = fixture.mark
        let (result, mark) = await fixture.callMarked(device, Interface.device, "Connect")
        #expect(remoteError(result)?.name == "org.bluez.Error.Failed")
        #expect(remoteError(result)?.message == "le-connection-abort-by-local")
        try await fixture.waitForProperty(device, "Connected", .boolean(false), since: since)
        let up = try #require(fixture.index(since: since) { $0.changes(device, "Connected", to: .boolean(true)) })
        let down = try #require(fixture.index(since: since) { $0.changes(device, "Connected", to: .boolean(false)) })
        #expect(up < mark && mark <= down)
        // Once only: the retry connects.
        try await fixture.connect(device)
    }

    @BleLoop
    @Test func anInjectedInProgressFailsTheConnectAtOnceWithoutSignals() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let device = try await fixture.discover(Golden.address)
        fixture.simulator.faults.failConnect(Golden.address, with: .inProgress)
        let since = fixture.mark
        await expectDBusError("org.bluez.Error.InProgress", "In Progress") {
            try await fixture.call(device, Interface.device, "Connect")
        }
        try await fixture.barrier()
        #expect(fixture.signals(since: since) { $0.path == device }.isEmpty)
    }

    @BleLoop
    @Test func aConnectThatNeverAnswersIsCancelledByDisconnectWithBrConnectionCanceled() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let device = try await fixture.discover(Golden.address)
        fixture.simulator.faults.failConnect(Golden.address, with: .neverAnswer)
        let connect = fixture.send(device, Interface.device, "Connect")
        // Connect is pending; the simulator has it once a later call was answered.
        try await fixture.barrier()
        try await fixture.call(device, Interface.device, "Disconnect")
        let (result, _) = await connect.reply
        #expect(remoteError(result)?.name == "org.bluez.Error.Failed")
        #expect(remoteError(result)?.message == "br-connection-canceled")
    }

    @BleLoop
    @Test func aConnectTimeoutAbortsByLocalWithoutPropertyChanges() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let device = try await fixture.discover(Golden.address)
        fixture.simulator.faults.failConnect(Golden.address, with: .timeout)
        let since = fixture.mark
        await expectDBusError("org.bluez.Error.Failed", "le-connection-abort-by-local") {
            try await fixture.call(device, Interface.device, "Connect")
        }
        try await fixture.barrier()
        #expect(fixture.signals(since: since) { $0.path == device }.isEmpty)
    }

    // MARK: Links

    @BleLoop
    @Test func theLinkDropsAfterTheConfiguredNumberOfPackets() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        fixture.simulator.faults.loseLink(Golden.address, afterPackets: 2)
        let since = fixture.mark
        _ = try await fixture.call(path, Interface.characteristic, "ReadValue", [options()])
        await expectDBusError("org.bluez.Error.Failed", "Not connected") {
            try await fixture.call(path, Interface.characteristic, "ReadValue", [options()])
        }
        let lost = try await fixture.waitForProperty(device, "Connected", .boolean(false), since: since)
        #expect(lost.changedNames == ["ServicesResolved", "Connected"])
        #expect(try await fixture.managedObjects()[path] != nil, "the GATT objects stay")
    }

    @BleLoop
    @Test func aPeripheralDroppingItsLinksDisconnectsTheDevice() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let since = fixture.mark
        fixture.simulator.peripheral(Golden.address)?.dropLinks()
        let lost = try await fixture.waitForProperty(device, "Connected", .boolean(false), since: since)
        #expect(lost.changed("ServicesResolved") == .boolean(false))
    }

    @BleLoop
    @Test func everyNthNotificationCanBeDropped() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let peripheral = try #require(fixture.simulator.peripheral(Golden.address))
        let path = try await fixture.gattObject(device, Golden.notify)
        try await fixture.call(path, Interface.characteristic, "StartNotify")
        fixture.simulator.faults.setNotificationFault(Golden.address, .dropEvery(2))
        let since = fixture.mark
        for byte: UInt8 in 1...5 { peripheral.notify(Golden.notify, value: Data([byte])) }
        try await fixture.waitForSignal(since: since) { $0.changes(path, "Value", to: .bytes(Data([5]))) }
        let values = fixture.signals(since: since) { $0.changes(path, "Value") }.compactMap { $0.changed("Value")?.bytesValue?.first }
        #expect(values == [1, 3, 5])
    }

    @BleLoop
    @Test func notificationsCanBeDuplicated() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let peripheral = try #require(fixture.simulator.peripheral(Golden.address))
        let path = try await fixture.gattObject(device, Golden.notify)
        try await fixture.call(path, Interface.characteristic, "StartNotify")
        fixture.simulator.faults.setNotificationFault(Golden.address, .duplicate)
        let since = fixture.mark
        peripheral.notify(Golden.notify, value: Data([1]))
        peripheral.notify(Golden.notify, value: Data([2]))
        let second = { (message: DBusMessage) in message.changes(path, "Value", to: .bytes(Data([2]))) }
        try await fixture.waitForSignal(since: since, where: second)
        try await fixture.waitForSignal(since: try #require(fixture.index(since: since, second)) + 1, where: second)
        let values = fixture.signals(since: since) { $0.changes(path, "Value") }.compactMap { $0.changed("Value")?.bytesValue?.first }
        #expect(values == [1, 1, 2, 2])
    }

    // MARK: Calls

    @BleLoop
    @Test func aNeverReplyingMethodTimesOutOnTheClientAndOnlyOnce() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        fixture.simulator.faults.neverReply(to: "ReadValue", times: 1)
        do {
            try await fixture.call(path, Interface.characteristic, "ReadValue", [options()], timeout: .milliseconds(300))
            Issue.record("a swallowed ReadValue was answered")
        } catch {
            guard case .timeout = error else { Issue.record("expected a timeout, got \(error)"); return }
        }
        #expect(try await fixture.call(path, Interface.characteristic, "ReadValue", [options()]) == [.bytes(Golden.initialValue)])
    }

    @BleLoop
    @Test func aDeniedClientGetsAccessDeniedButMayStillIntrospect() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        let second = try await fixture.secondClient()
        defer { second.close() }
        fixture.simulator.faults.denyAccess(to: fixture.client.uniqueName)
        do {
            try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
            Issue.record("a denied client's call went through")
        } catch {
            #expect(error.remoteName == "org.freedesktop.DBus.Error.AccessDenied")
            if case .remote(_, let message) = error {
                #expect(message.hasPrefix("Rejected send message"))
                #expect(message.contains("member=\"StartDiscovery\""))
            }
        }
        _ = try await fixture.call(.root, Interface.introspectable, "Introspect")
        try await second.bluez(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
    }

    @BleLoop
    @Test func denyingEveryoneAffectsEveryClient() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        let second = try await fixture.secondClient()
        defer { second.close() }
        fixture.simulator.faults.denyAccessToEveryone()
        await expectDBusError("org.freedesktop.DBus.Error.AccessDenied") {
            try await second.bluez(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        }
        fixture.simulator.faults.clear()
        try await second.bluez(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
    }

    // MARK: ATT errors

    @BleLoop
    @Test(arguments: [FaultInjector.Operation.read, .write])
    func attError0x0eIsReportedAsFailedWithTheCode(operation: FaultInjector.Operation) async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        fixture.simulator.faults.injectAttError(Golden.address, characteristic: Golden.rw, operation: operation, error: .other(0x0e))
        let arguments: [DBusValue] = operation == .read ? [options()] : [.bytes(Data([1])), options()]
        let member = operation == .read ? "ReadValue" : "WriteValue"
        await expectDBusError("org.bluez.Error.Failed", "Operation failed with ATT error: 0x0e") {
            try await fixture.call(path, Interface.characteristic, member, arguments)
        }
        // Once only.
        try await fixture.call(path, Interface.characteristic, member, arguments)
    }

    static let attErrorMapping: [(UInt8, String, String)] = [
        (0x02, "org.bluez.Error.NotPermitted", "Read not permitted"),
        (0x03, "org.bluez.Error.NotPermitted", "Write not permitted"),
        (0x05, "org.bluez.Error.NotPermitted", "Not paired"),
        (0x0f, "org.bluez.Error.NotPermitted", "Not paired"),
        (0x06, "org.bluez.Error.NotSupported", "Operation is not supported"),
        (0x07, "org.bluez.Error.InvalidArguments", "Invalid offset"),
        (0x08, "org.bluez.Error.NotAuthorized", "Operation Not Authorized"),
        (0x0d, "org.bluez.Error.InvalidArguments", "Invalid Length"),
        (0x80, "org.bluez.Error.Failed", "Operation failed with ATT error: 0x80"),
    ]

    @BleLoop
    @Test(arguments: FaultTests.attErrorMapping)
    func attErrorsMapToBluetoothdsDBusErrors(code: UInt8, name: String, message: String) async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        fixture.simulator.faults.injectAttError(Golden.address, characteristic: Golden.rw, operation: .read, error: AttError(code: code))
        await expectDBusError(name, message) {
            try await fixture.call(path, Interface.characteristic, "ReadValue", [options()])
        }
    }

    // MARK: Services changed

    @BleLoop
    @Test func servicesAfterReconnectReplaceTheCachedObjectsOnTheNextConnection() async throws {
        var spec = Golden.spec()
        spec.servicesAfterReconnect = [ServiceSpec(uuid: "abcd", characteristics: [CharacteristicSpec(uuid: "abce", flags: ["read"])])]
        let (fixture, device) = try await SimulatorFixture.connected(spec)
        defer { fixture.tearDown() }
        let old = try await fixture.gattObject(device, Golden.service, interface: Interface.service)
        try await fixture.disconnect(device)
        let since = fixture.mark
        try await fixture.connect(device)
        #expect(fixture.signals(since: since) { $0.removedObject == old }.count == 1)
        let objects = try await fixture.managedObjects()
        let services = objects.filter { $0.key.isDescendant(of: device, orEqual: false) }.compactMap { $0.value[Interface.service]?["UUID"] }
        #expect(services.contains(.string(uuid128("abcd"))))
        #expect(!services.contains(.string(Golden.service)))
        let resolved = try #require(fixture.signals(since: since) { $0.changes(device, "ServicesResolved", to: .boolean(true)) }.first)
        #expect(resolved.changedNames == ["UUIDs", "ServicesResolved"])
        #expect(try await fixture.property(device, Interface.device, "UUIDs")
            == .array(element: .string, [uuid128("1800"), uuid128("1801"), Golden.service, uuid128("abcd")].sorted().map { .string($0) }),
            "the advertised UUID stays next to the new database's")
    }
}
