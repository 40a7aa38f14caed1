import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// bluez-observed.md § f. pairing: agents, Pairable, Pair with and without an agent, and the
/// Pair row of the ordering table.
struct PairingTests {
    static let agent: ObjectPath = "/test/agent"

    @BleLoop
    static func registerAgent(_ fixture: SimulatorFixture, capability: String = "NoInputNoOutput") async throws {
        try await fixture.call("/org/bluez", Interface.agentManager, "RegisterAgent", [.objectPath(agent), .string(capability)])
    }

    @BleLoop
    @Test func pairWithoutAnyAgentConnectsThenFailsAuthenticationThenDisconnects() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let device = try await fixture.discover(Golden.address)
        let since = fixture.mark
        let (result, mark) = await fixture.callMarked(device, Interface.device, "Pair")
        #expect(remoteError(result)?.name == "org.bluez.Error.AuthenticationFailed")
        #expect(remoteError(result)?.message == "Authentication Failed")
        try await fixture.waitForProperty(device, "Connected", .boolean(false), since: since)
        let connected = try #require(fixture.index(since: since) { $0.changes(device, "Connected", to: .boolean(true)) })
        let disconnected = try #require(fixture.index(since: since) { $0.changes(device, "Connected", to: .boolean(false)) })
        #expect(connected < mark && mark <= disconnected)
        #expect(try await fixture.property(device, Interface.device, "Paired") == .boolean(false))
    }

    @BleLoop
    @Test func pairWithoutAnAgentFailsEvenWhenTheAdaptersArePairable() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        for adapter in [SimulatorFixture.hci0, SimulatorFixture.hci1] {
            try await fixture.setProperty(adapter, Interface.adapter, "Pairable", .boolean(true))
        }
        let device = try await fixture.discover(Golden.address)
        await expectDBusError("org.bluez.Error.AuthenticationFailed", "Authentication Failed") {
            try await fixture.call(device, Interface.device, "Pair")
        }
    }

    @BleLoop
    @Test func cancelPairingWithNoPairingInProgressIsDoesNotExist() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        let device = try await fixture.discover(Golden.address)
        await expectDBusError("org.bluez.Error.DoesNotExist", "Does Not Exist") {
            try await fixture.call(device, Interface.device, "CancelPairing")
        }
    }

    @BleLoop
    @Test func registerAgentWithAnUnknownCapabilityIsInvalidArguments() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        await expectDBusError("org.bluez.Error.InvalidArguments", "Invalid arguments in method call") {
            try await PairingTests.registerAgent(fixture, capability: "Foo")
        }
    }

    @BleLoop
    @Test(arguments: ["UnregisterAgent", "RequestDefaultAgent"])
    func agentCallsForAnUnregisteredAgentAreDoesNotExist(method: String) async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        await expectDBusError("org.bluez.Error.DoesNotExist", "Does Not Exist") {
            try await fixture.call("/org/bluez", Interface.agentManager, method, [.objectPath(PairingTests.agent)])
        }
    }

    @BleLoop
    @Test func registeringAnAgentTwiceIsAlreadyExists() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        try await PairingTests.registerAgent(fixture)
        await expectDBusError("org.bluez.Error.AlreadyExists", "Already Exists") {
            try await PairingTests.registerAgent(fixture)
        }
    }

    @BleLoop
    @Test func anAgentMakesEveryAdapterPairableAndUnregisteringTheLastTurnsItOff() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        try await PairingTests.registerAgent(fixture)
        for adapter in [SimulatorFixture.hci0, SimulatorFixture.hci1] {
            try await fixture.waitForProperty(adapter, "Pairable", .boolean(true))
        }
        let since = fixture.mark
        try await fixture.call("/org/bluez", Interface.agentManager, "UnregisterAgent", [.objectPath(PairingTests.agent)])
        for adapter in [SimulatorFixture.hci0, SimulatorFixture.hci1] {
            try await fixture.waitForProperty(adapter, "Pairable", .boolean(false), since: since)
        }
        await expectDBusError("org.bluez.Error.DoesNotExist", "Does Not Exist") {
            try await fixture.call("/org/bluez", Interface.agentManager, "UnregisterAgent", [.objectPath(PairingTests.agent)])
        }
    }

    @BleLoop
    @Test func theAgentsClientLeavingTheBusTurnsPairableOff() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        let second = try await fixture.secondClient()
        try await second.bluez("/org/bluez", Interface.agentManager, "RegisterAgent", [.objectPath(PairingTests.agent), .string("")])
        try await fixture.waitForProperty(SimulatorFixture.hci0, "Pairable", .boolean(true))
        let since = fixture.mark
        second.close()
        try await fixture.waitForProperty(SimulatorFixture.hci0, "Pairable", .boolean(false), since: since)
    }

    @BleLoop
    @Test func pairWithAnAgentOnAFreshDeviceResolvesBeforeTheObjectsAreExportedThenReplies() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        try await PairingTests.registerAgent(fixture)
        let device = try await fixture.discover(Golden.address)
        let since = fixture.mark
        let (result, mark) = await fixture.callMarked(device, Interface.device, "Pair")
        _ = try result.get()
        let connected = try #require(fixture.index(since: since) { $0.changes(device, "Connected", to: .boolean(true)) })
        let bonded = try #require(fixture.index(since: since) { $0.changes(device, "Bonded", to: .boolean(true)) })
        let gatt = fixture.signals.indices.dropFirst(since).filter { fixture.signals[$0].addedObject?.isDescendant(of: device, orEqual: false) == true }
        #expect(connected < bonded)
        // The surprising one: ServicesResolved=true before the GATT InterfacesAdded.
        #expect(fixture.signals[bonded].changedNames == ["Bonded", "Paired", "UUIDs", "ServicesResolved"])
        #expect(fixture.signals[bonded].changed("ServicesResolved") == .boolean(true))
        #expect(try #require(gatt.first) > bonded)
        #expect(try #require(gatt.last) < mark, "the Pair reply comes after all the objects")
        #expect(try await fixture.property(device, Interface.device, "Paired") == .boolean(true))
    }

    @BleLoop
    @Test func pairOnAConnectedDeviceSignalsBondedAndPairedThenReplies() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        try await PairingTests.registerAgent(fixture)
        let since = fixture.mark
        let (result, mark) = await fixture.callMarked(device, Interface.device, "Pair")
        _ = try result.get()
        let bonded = try #require(fixture.index(since: since) { $0.changes(device, "Bonded", to: .boolean(true)) })
        #expect(fixture.signals[bonded].changedNames == ["Bonded", "Paired"])
        #expect(bonded < mark)
        #expect(fixture.signals(since: since) { $0.addedObject != nil }.isEmpty)
    }

    @BleLoop
    @Test func aSecondPairWhileTheFirstRunsIsInProgressAndTheFirstSucceeds() async throws {
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec()])
        defer { fixture.tearDown() }
        try await PairingTests.registerAgent(fixture)
        let device = try await fixture.discover(Golden.address)
        // Real-time costs from here on, so the first Pair is still running.
        fixture.simulator.timing = TimingModel(scale: 1)
        let first = fixture.send(device, Interface.device, "Pair")
        let second = fixture.send(device, Interface.device, "Pair")
        let firstResult = await first.reply
        let secondResult = await second.reply
        #expect(throws: Never.self) { try firstResult.result.get() }
        #expect(remoteError(secondResult.result)?.name == "org.bluez.Error.InProgress")
        #expect(remoteError(secondResult.result)?.message == "In Progress")
    }

    @BleLoop
    @Test func pairOnAnLEBondedConnectedDeviceFailsAuthenticationDropsTheLinkAndStillSaysPaired() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        try await PairingTests.registerAgent(fixture)
        try await fixture.call(device, Interface.device, "Pair")
        let since = fixture.mark
        await expectDBusError("org.bluez.Error.AuthenticationFailed", "Authentication Failed") {
            try await fixture.call(device, Interface.device, "Pair")
        }
        try await fixture.waitForProperty(device, "Connected", .boolean(false), since: since)
        #expect(try await fixture.property(device, Interface.device, "Paired") == .boolean(true))
        #expect(try await fixture.property(device, Interface.device, "Bonded") == .boolean(true))
    }

    @BleLoop
    @Test func removingADisconnectedBondedDeviceRemovesItBeforeTheReply() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        try await PairingTests.registerAgent(fixture)
        try await fixture.call(device, Interface.device, "Pair")
        try await fixture.disconnect(device)
        let since = fixture.mark
        let (result, mark) = await fixture.callMarked(SimulatorFixture.hci0, Interface.adapter, "RemoveDevice", [.objectPath(device)])
        _ = try result.get()
        let removed = try #require(fixture.index(since: since) { $0.removedObject == device })
        #expect(removed < mark)
    }

    @BleLoop
    @Test func aBondedDeviceOutlivesTemporaryTimeout() async throws {
        let stranger = PeripheralSpec(address: "C0:FF:EE:00:00:0A", name: "stranger")
        let fixture = try await SimulatorFixture.start(peripherals: [Golden.spec(), stranger],
                                                       configuration: .init(temporaryTimeoutSeconds: 0.3))
        defer { fixture.tearDown() }
        let strangerPath = SimulatorFixture.devicePath(stranger.address)
        try await PairingTests.registerAgent(fixture)
        // A filter makes every report visible (an RSSI signal each), to pace the test.
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "SetDiscoveryFilter", [options([("Transport", .string("le"))])])
        let device = try await fixture.discover(Golden.address, stop: false)
        try await fixture.waitForSignal { $0.addedObject == strangerPath }
        try await fixture.call(device, Interface.device, "Pair")
        try await fixture.disconnect(device)
        fixture.simulator.peripheral(Golden.address)?.stopAdvertising()
        // The unbonded stranger, heard once more after the bonded device went quiet, expires;
        // the bonded device, due first were it temporary, stays.
        let quiet = fixture.mark
        try await fixture.waitForSignal(since: quiet) { $0.changes(strangerPath, "RSSI") }
        fixture.simulator.peripheral(stranger.address)?.stopAdvertising()
        try await fixture.waitForSignal { $0.removedObject == strangerPath }
        #expect(try await fixture.managedObjects()[device] != nil)
    }
}
