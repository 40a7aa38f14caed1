import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// bluez-observed.md § e. daemon restart: SIGTERM (`.clean`) tears everything down with
/// signals before the name goes, SIGKILL (`.kill`) only loses the name, and a restarted
/// daemon announces itself afresh.
struct DaemonRestartTests {
    @BleLoop
    @discardableResult
    static func nameLost(_ log: SignalLog) async throws -> DBusMessage {
        try await log.wait("org.bluez losing its owner") { $0.isBluezNameOwnerChange && $0.newOwner == "" }
    }

    @BleLoop
    @Test func aCleanStopDisconnectsThenPowersOffThenRemovesEverythingThenReleasesTheName() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let exported = Set(try await fixture.managedObjects().keys).union(["/org/bluez"])
        let log = try SignalLog.daemon(fixture.client)
        defer { log.cancel() }
        fixture.simulator.stop(.clean)
        try await DaemonRestartTests.nameLost(log)
        let messages = log.messages
        let indexOf = { (predicate: (DBusMessage) -> Bool) in messages.firstIndex(where: predicate) }
        let disconnected = try #require(indexOf { $0.changes(device, "Connected", to: .boolean(false)) })
        #expect(messages[disconnected].changed("ServicesResolved") == .boolean(false))
        let poweredOff = [SimulatorFixture.hci0, SimulatorFixture.hci1].compactMap { adapter in
            indexOf { $0.changes(adapter, "Powered", to: .boolean(false)) }
        }
        #expect(poweredOff.count == 2)
        for index in poweredOff { #expect(messages[index].changedNames == ["Powered", "Discovering"]) }
        let firstRemoval = try #require(indexOf { $0.removedObject != nil })
        #expect(disconnected < poweredOff.min()!)
        #expect(poweredOff.max()! < firstRemoval, "both adapters power off before anything is removed")
        // Everything goes, and the name is the last thing.
        let fullyRemoved = Set(messages.compactMap(\.removedObject))
        #expect(exported.isSubset(of: fullyRemoved))
        #expect(messages.last?.isBluezNameOwnerChange == true)
    }

    @BleLoop
    @Test func aCleanStopRemovesMediaAndHealthThenOrgBluezThenEachAdaptersObjects() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let log = try SignalLog.daemon(fixture.client)
        defer { log.cancel() }
        fixture.simulator.stop(.clean)
        try await DaemonRestartTests.nameLost(log)
        let removals = log.messages.compactMap { message in message.removedObject.map { ($0, message.interfaceNames) } }
        let paths = removals.map(\.0)
        #expect(removals.prefix(3).map(\.0) == [SimulatorFixture.hci0, SimulatorFixture.hci1, "/org/bluez"])
        #expect(removals.prefix(2).allSatisfy { $0.1 == ["org.bluez.Media1"] })
        #expect(removals.dropFirst(2).first?.1 == ["org.bluez.HealthManager1"])
        #expect(removals.dropFirst(3).first?.0 == "/org/bluez")
        #expect(removals.dropFirst(3).first?.1 == [Interface.introspectable, "org.bluez.AgentManager1", "org.bluez.ProfileManager1"])
        // Then hci0's GATT objects, its device, hci0 itself, then hci1.
        let rest = Array(paths.dropFirst(4))
        let deviceIndex = try #require(rest.firstIndex(of: device))
        #expect(rest[..<deviceIndex].allSatisfy { $0.isDescendant(of: device, orEqual: false) })
        #expect(rest.suffix(2) == [SimulatorFixture.hci0, SimulatorFixture.hci1])
    }

    @BleLoop
    @Test func aKilledDaemonOnlyLosesItsName() async throws {
        let (fixture, _) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let log = try SignalLog.daemon(fixture.client)
        defer { log.cancel() }
        fixture.simulator.stop(.kill)
        let lost = try await DaemonRestartTests.nameLost(log)
        // Anything the daemon sent before dying would have reached us before the bus's signal.
        #expect(log.messages.count == 1)
        #expect(lost.body.count == 3 && lost.body[1] != .string(""), "NameOwnerChanged(org.bluez, old, '')")
    }

    @BleLoop
    @Test func callsWhileTheNameHasNoOwnerFailAtTheBus() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        fixture.simulator.stop(.kill)
        // A private bus has no service files: ServiceUnknown, where the system bus of the
        // observed machine answered Spawn.ChildExited (see README, known differences).
        await expectDBusError("org.freedesktop.DBus.Error.ServiceUnknown") {
            try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        }
    }

    @BleLoop
    @Test(arguments: [Simulator.StopMode.clean, .kill])
    func aRestartedDaemonTakesTheNameThenAnnouncesItsObjectsWithPoweredAdapters(mode: Simulator.StopMode) async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        let log = try SignalLog.daemon(fixture.client)
        defer { log.cancel() }
        try await fixture.simulator.restart(mode, on: fixture.bus.busAddress)
        let claimed = try await log.wait("org.bluez getting an owner") { $0.isBluezNameOwnerChange && $0.newOwner?.isEmpty == false }
        try await log.wait("hci1 announced") { $0.addedObject == SimulatorFixture.hci1 }
        let claimedIndex = try #require(log.messages.firstIndex { $0.isBluezNameOwnerChange && $0.newOwner?.isEmpty == false })
        let added = log.messages.dropFirst(claimedIndex + 1).compactMap(\.addedObject)
        #expect(added.prefix(3) == ["/org/bluez", SimulatorFixture.hci0, SimulatorFixture.hci1])
        let adapter = try #require(log.messages.first { $0.addedObject == SimulatorFixture.hci0 })
        #expect(Dictionary(uniqueKeysWithValues: adapter.addedProperties(Interface.adapter))["Powered"] == .boolean(true))
        #expect(claimed.newOwner == fixture.simulator.connection?.uniqueName)
    }

    @BleLoop
    @Test(arguments: [Simulator.StopMode.clean, .kill])
    func afterARestartTheDeviceIsNotConnectedAndTheAppReconnects(mode: Simulator.StopMode) async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        try await fixture.simulator.restart(mode, on: fixture.bus.busAddress)
        try await fixture.waitForSignal(since: 0, "hci0 announced again") { $0.addedObject == SimulatorFixture.hci0 }
        let connected = try await fixture.managedObjects()[device]?[Interface.device]?["Connected"]
        #expect(connected == nil || connected == .boolean(false))
        try await fixture.discover(Golden.address)
        let since = fixture.mark
        try await fixture.connect(device)
        let gatt = fixture.signals(since: since) { $0.addedObject?.isDescendant(of: device, orEqual: false) == true }
        #expect(!gatt.isEmpty, "the GATT objects are exported again")
    }

    @BleLoop
    @Test func aPendingCallAnswersNoReplyWhenTheDaemonDies() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        fixture.simulator.faults.neverReply(to: "ReadValue")
        let read = fixture.send(path, Interface.characteristic, "ReadValue", [options()])
        try await fixture.barrier()
        fixture.simulator.stop(.kill)
        let (result, _) = await read.reply
        #expect(remoteError(result)?.name == "org.freedesktop.DBus.Error.NoReply")
    }
}
