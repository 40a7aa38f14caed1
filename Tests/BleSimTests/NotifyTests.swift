import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// bluez-observed.md § d. StartNotify/StopNotify: sessions per client, the Notifying
/// property, one PropertiesChanged(Value) per notification, and what survives a disconnect.
struct NotifyTests {
    @BleLoop
    @Test func startNotifySignalsNotifyingBeforeReplying() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.notify)
        let since = fixture.mark
        let (result, mark) = await fixture.callMarked(path, Interface.characteristic, "StartNotify")
        _ = try result.get()
        let notifying = try #require(fixture.index(since: since) { $0.changes(path, "Notifying", to: .boolean(true)) })
        #expect(notifying < mark)
    }

    @BleLoop
    @Test func eachNotificationIsOnePropertiesChangedCarryingOnlyTheValue() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let peripheral = try #require(fixture.simulator.peripheral(Golden.address))
        let path = try await fixture.gattObject(device, Golden.notify)
        try await fixture.call(path, Interface.characteristic, "StartNotify")
        let since = fixture.mark
        for byte: UInt8 in 1...3 { peripheral.notify(Golden.notify, value: Data([byte])) }
        try await fixture.waitForSignal(since: since) { $0.changes(path, "Value", to: .bytes(Data([3]))) }
        let values = fixture.signals(since: since) { $0.path == path }
        #expect(values.map { $0.changed("Value") } == [.bytes(Data([1])), .bytes(Data([2])), .bytes(Data([3]))])
        #expect(values.allSatisfy { $0.changedInterface == Interface.characteristic && $0.changedNames == ["Value"] && $0.invalidatedNames.isEmpty })
        #expect(try await fixture.property(path, Interface.characteristic, "Value") == .bytes(Data([3])))
    }

    @BleLoop
    @Test func startNotifyAgainFromTheSameClientSucceedsWithoutASignal() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.notify)
        try await fixture.call(path, Interface.characteristic, "StartNotify")
        let since = fixture.mark
        try await fixture.call(path, Interface.characteristic, "StartNotify")
        try await fixture.barrier()
        #expect(fixture.signals(since: since) { $0.path == path }.isEmpty)
    }

    @BleLoop
    @Test func stopNotifySignalsNotifyingFalseBeforeReplying() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.notify)
        try await fixture.call(path, Interface.characteristic, "StartNotify")
        let since = fixture.mark
        let (result, mark) = await fixture.callMarked(path, Interface.characteristic, "StopNotify")
        _ = try result.get()
        let stopped = try #require(fixture.index(since: since) { $0.changes(path, "Notifying", to: .boolean(false)) })
        #expect(stopped < mark)
    }

    @BleLoop
    @Test(arguments: [Golden.notify, Golden.rw])
    func stopNotifyWithoutASessionFails(uuid: String) async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, uuid)
        if uuid == Golden.notify {
            // Again after a session ended.
            try await fixture.call(path, Interface.characteristic, "StartNotify")
            try await fixture.call(path, Interface.characteristic, "StopNotify")
        }
        await expectDBusError("org.bluez.Error.Failed", "No notify session started") {
            try await fixture.call(path, Interface.characteristic, "StopNotify")
        }
    }

    @BleLoop
    @Test func startNotifyWithoutNotifyOrIndicateIsNotSupported() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        await expectDBusError("org.bluez.Error.NotSupported", "Operation is not supported") {
            try await fixture.call(path, Interface.characteristic, "StartNotify")
        }
    }

    @BleLoop
    @Test func withoutASessionThePeripheralsNotificationsAreNotForwarded() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let rw = try await fixture.gattObject(device, Golden.rw)
        let notify = try await fixture.gattObject(device, Golden.notify)
        // The write is echoed on `notify`, but nobody enabled notifications.
        try await fixture.call(rw, Interface.characteristic, "WriteValue", [.bytes(Data([0x11])), options()])
        try await fixture.call(notify, Interface.characteristic, "StartNotify")
        let since = fixture.mark
        try await fixture.call(rw, Interface.characteristic, "WriteValue", [.bytes(Data([0x22])), options()])
        try await fixture.waitForSignal(since: since) { $0.changes(notify, "Value") }
        let values = fixture.signals(since: 0) { $0.changes(notify, "Value") }.map { $0.changed("Value") }
        #expect(values == [.bytes(Data([0x22]))])
    }

    @BleLoop
    @Test func notifySessionsArePerClientAndNotifyingEndsWithTheLast() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let second = try await fixture.secondClient()
        defer { second.close() }
        let path = try await fixture.gattObject(device, Golden.notify)
        try await fixture.call(path, Interface.characteristic, "StartNotify")
        try await second.bluez(path, Interface.characteristic, "StartNotify")
        try await fixture.call(path, Interface.characteristic, "StopNotify")
        try await fixture.barrier()
        #expect(fixture.signals(since: 0) { $0.changes(path, "Notifying", to: .boolean(false)) }.isEmpty, "B still listens")
        #expect(try await fixture.property(path, Interface.characteristic, "Notifying") == .boolean(true))
        let since = fixture.mark
        try await second.bluez(path, Interface.characteristic, "StopNotify")
        try await fixture.waitForProperty(path, "Notifying", .boolean(false), since: since)
        #expect(fixture.signals(since: 0) { $0.changes(path, "Notifying", to: .boolean(true)) }.count == 1)
    }

    @BleLoop
    @Test func aClientLeavingTheBusEndsItsNotifySession() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let second = try await fixture.secondClient()
        let path = try await fixture.gattObject(device, Golden.notify)
        try await second.bluez(path, Interface.characteristic, "StartNotify")
        try await fixture.waitForProperty(path, "Notifying", .boolean(true))
        let since = fixture.mark
        second.close()
        try await fixture.waitForProperty(path, "Notifying", .boolean(false), since: since)
    }

    @BleLoop
    @Test func afterADisconnectNotifyingStaysTrueAndStartNotifyIsInProgress() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.notify)
        try await fixture.call(path, Interface.characteristic, "StartNotify")
        let since = fixture.mark
        try await fixture.disconnect(device)
        #expect(fixture.signals(since: since) { $0.path == path }.isEmpty, "no Notifying signal")
        #expect(try await fixture.property(path, Interface.characteristic, "Notifying") == .boolean(true))
        await expectDBusError("org.bluez.Error.InProgress", "In Progress") {
            try await fixture.call(path, Interface.characteristic, "StartNotify")
        }
    }

    @BleLoop
    @Test func aSessionIsReArmedOnReconnectWithoutANewStartNotify() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let peripheral = try #require(fixture.simulator.peripheral(Golden.address))
        let path = try await fixture.gattObject(device, Golden.notify)
        try await fixture.call(path, Interface.characteristic, "StartNotify")
        try await fixture.disconnect(device)
        try await fixture.connect(device)
        let since = fixture.mark
        peripheral.notify(Golden.notify, value: Data([0x5a]))
        try await fixture.waitForSignal(since: since) { $0.changes(path, "Value", to: .bytes(Data([0x5a]))) }
    }

    /// Seen in the VM (bluetoothd 5.66): the reply at once, `Notifying` false until the next
    /// connection, then `Notifying=true` before `ServicesResolved=true`, and notifications flow.
    @BleLoop
    @Test func startNotifyWhileDisconnectedRepliesAndNotifyingTurnsTrueOnReconnect() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let peripheral = try #require(fixture.simulator.peripheral(Golden.address))
        let path = try await fixture.gattObject(device, Golden.notify)
        try await fixture.disconnect(device)
        let since = fixture.mark
        try await fixture.call(path, Interface.characteristic, "StartNotify")
        #expect(fixture.signals(since: since) { $0.path == path }.isEmpty, "no Notifying signal while disconnected")
        #expect(try await fixture.property(path, Interface.characteristic, "Notifying") == .boolean(false))
        await expectDBusError("org.bluez.Error.InProgress", "In Progress") {
            try await fixture.call(path, Interface.characteristic, "StartNotify")
        }
        let reconnect = fixture.mark
        try await fixture.connect(device)
        let notifying = try #require(fixture.index(since: reconnect) { $0.changes(path, "Notifying", to: .boolean(true)) })
        let resolved = try #require(fixture.index(since: reconnect) { $0.changes(device, "ServicesResolved", to: .boolean(true)) })
        #expect(notifying < resolved)
        let flowing = fixture.mark
        peripheral.notify(Golden.notify, value: Data([0x42]))
        try await fixture.waitForSignal(since: flowing) { $0.changes(path, "Value", to: .bytes(Data([0x42]))) }
    }

    /// Seen in the VM: StopNotify of a session kept over a disconnect ends it with
    /// `Notifying=false`; a StartNotify after that, still disconnected, waits for the connection.
    @BleLoop
    @Test func stopNotifyWhileDisconnectedEndsTheSessionAndANewOneWaitsForTheConnection() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.notify)
        try await fixture.call(path, Interface.characteristic, "StartNotify")
        try await fixture.disconnect(device)
        let since = fixture.mark
        let (result, mark) = await fixture.callMarked(path, Interface.characteristic, "StopNotify")
        _ = try result.get()
        let stopped = try #require(fixture.index(since: since) { $0.changes(path, "Notifying", to: .boolean(false)) })
        #expect(stopped < mark)
        try await fixture.call(path, Interface.characteristic, "StartNotify")
        #expect(try await fixture.property(path, Interface.characteristic, "Notifying") == .boolean(false))
        let reconnect = fixture.mark
        try await fixture.connect(device)
        #expect(fixture.index(since: reconnect) { $0.changes(path, "Notifying", to: .boolean(true)) } != nil)
    }

    @BleLoop
    @Test func indicationsArriveLikeNotifications() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let peripheral = try #require(fixture.simulator.peripheral(Golden.address))
        let path = try await fixture.gattObject(device, Golden.indicate)
        try await fixture.call(path, Interface.characteristic, "StartNotify")
        let since = fixture.mark
        peripheral.notify(Golden.indicate, value: Data([0x01, 0x02]))
        let signal = try await fixture.waitForSignal(since: since) { $0.changes(path, "Value") }
        #expect(signal.changedNames == ["Value"])
        #expect(signal.changed("Value") == .bytes(Data([0x01, 0x02])))
    }

    @BleLoop
    @Test func aNotificationLongerThanMTUMinus3IsCut() async throws {
        var spec = Golden.spec()
        spec.mtu = 23
        let (fixture, device) = try await SimulatorFixture.connected(spec)
        defer { fixture.tearDown() }
        let peripheral = try #require(fixture.simulator.peripheral(Golden.address))
        let path = try await fixture.gattObject(device, Golden.notify)
        #expect(try await fixture.property(path, Interface.characteristic, "MTU") == .uint16(23))
        try await fixture.call(path, Interface.characteristic, "StartNotify")
        let since = fixture.mark
        peripheral.notify(Golden.notify, value: Data(repeating: 7, count: 40))
        let signal = try await fixture.waitForSignal(since: since) { $0.changes(path, "Value") }
        #expect(signal.changed("Value") == .bytes(Data(repeating: 7, count: 20)))
    }

    @BleLoop
    @Test func notificationsKeepTheirOrderUnderScaledDelays() async throws {
        let (fixture, device) = try await SimulatorFixture.connected(configuration: .init(timing: TimingModel(scale: 0.05)))
        defer { fixture.tearDown() }
        let peripheral = try #require(fixture.simulator.peripheral(Golden.address))
        let path = try await fixture.gattObject(device, Golden.notify)
        try await fixture.call(path, Interface.characteristic, "StartNotify")
        let since = fixture.mark
        for byte: UInt8 in 1...5 { peripheral.notify(Golden.notify, value: Data([byte])) }
        try await fixture.waitForSignal(since: since) { $0.changes(path, "Value", to: .bytes(Data([5]))) }
        let values = fixture.signals(since: since) { $0.changes(path, "Value") }.compactMap { $0.changed("Value")?.bytesValue?.first }
        #expect(values == [1, 2, 3, 4, 5])
    }
}
