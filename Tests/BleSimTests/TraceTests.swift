import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// `Simulator.trace`: every call the daemon received, in arrival order, answered or not.
struct TraceTests {
    @BleLoop
    static func summary(_ trace: [Simulator.TraceEntry]) -> [String] {
        trace.map { "\($0.interface ?? "-").\($0.member) \($0.path)" }
    }

    @BleLoop
    @Test func theTraceListsTheCallsReceivedInOrder() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        fixture.simulator.clearTrace()
        _ = try await fixture.property(SimulatorFixture.hci0, Interface.adapter, "Powered")
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "SetDiscoveryFilter", [options()])
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        try await fixture.call(SimulatorFixture.hci1, Interface.adapter, "StartDiscovery")
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "StopDiscovery")
        #expect(TraceTests.summary(fixture.simulator.trace) == [
            "org.freedesktop.DBus.Properties.Get /org/bluez/hci0",
            "org.bluez.Adapter1.SetDiscoveryFilter /org/bluez/hci0",
            "org.bluez.Adapter1.StartDiscovery /org/bluez/hci0",
            "org.bluez.Adapter1.StartDiscovery /org/bluez/hci1",
            "org.bluez.Adapter1.StopDiscovery /org/bluez/hci0",
        ])
    }

    @BleLoop
    @Test func entriesCarryTheSenderAndTheArguments() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        fixture.simulator.clearTrace()
        try await fixture.setProperty(SimulatorFixture.hci0, Interface.adapter, "Alias", .string("lab"))
        let entry = try #require(fixture.simulator.trace.first)
        #expect(entry.sender == fixture.client.uniqueName)
        #expect(entry.arguments == [.string(Interface.adapter), .string("Alias"), .variant(.string("lab"))])
        #expect(entry.description == "org.freedesktop.DBus.Properties.Set /org/bluez/hci0 ('org.bluez.Adapter1', 'Alias', <'lab'>)")
    }

    @BleLoop
    @Test func failedDeniedAndUnansweredCallsAreTracedToo() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        fixture.simulator.clearTrace()
        _ = try? await fixture.call("/org/bluez/hci7", Interface.adapter, "StartDiscovery")
        _ = try? await fixture.call(SimulatorFixture.hci0, Interface.adapter, "StopDiscovery")
        fixture.simulator.faults.neverReply(to: "GetDiscoveryFilters")
        _ = try? await fixture.call(SimulatorFixture.hci0, Interface.adapter, "GetDiscoveryFilters", timeout: .milliseconds(200))
        fixture.simulator.faults.denyAccessToEveryone()
        _ = try? await fixture.call(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        #expect(TraceTests.summary(fixture.simulator.trace) == [
            "org.bluez.Adapter1.StartDiscovery /org/bluez/hci7",
            "org.bluez.Adapter1.StopDiscovery /org/bluez/hci0",
            "org.bluez.Adapter1.GetDiscoveryFilters /org/bluez/hci0",
            "org.bluez.Adapter1.StartDiscovery /org/bluez/hci0",
        ])
    }

    @BleLoop
    @Test func callsOfSeveralClientsAreInterleavedInArrivalOrder() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        let second = try await fixture.secondClient()
        defer { second.close() }
        fixture.simulator.clearTrace()
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        try await second.bluez(SimulatorFixture.hci0, Interface.adapter, "StartDiscovery")
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "StopDiscovery")
        let senders = fixture.simulator.trace.map(\.sender)
        #expect(senders == [fixture.client.uniqueName, second.uniqueName, fixture.client.uniqueName])
    }

    @BleLoop
    @Test func clearTraceEmptiesIt() async throws {
        let fixture = try await SimulatorFixture.start()
        defer { fixture.tearDown() }
        try await fixture.call(SimulatorFixture.hci0, Interface.adapter, "GetDiscoveryFilters")
        #expect(!fixture.simulator.trace.isEmpty)
        fixture.simulator.clearTrace()
        #expect(fixture.simulator.trace.isEmpty)
    }
}
