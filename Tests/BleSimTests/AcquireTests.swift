import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Glibc
import Testing

/// bluez-observed.md § d. AcquireNotify / AcquireWrite: an AF_UNIX SOCK_SEQPACKET socket per
/// acquisition, one packet per notification or write, and the locks while it is held.
struct AcquireTests {
    /// Calls Acquire* and takes ownership of the descriptor; returns (fd, mtu, reply mark).
    @BleLoop
    static func acquire(_ fixture: SimulatorFixture, _ path: ObjectPath, _ method: String) async throws -> (Int32, UInt16, Int) {
        let (result, mark) = await fixture.callMarked(path, Interface.characteristic, method, [options()])
        let reply = try result.get()
        guard reply.count == 2, case .unixFD(let handle) = reply[0], case .uint16(let mtu) = reply[1],
              let descriptor = handle.take() else {
            throw FixtureError.unexpected("\(method) replied \(reply)")
        }
        return (descriptor, mtu, mark)
    }

    static func socketType(_ descriptor: Int32) -> Int32 {
        var type: Int32 = -1
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = getsockopt(descriptor, SOL_SOCKET, SO_TYPE, &type, &length)
        return type
    }

    // MARK: AcquireNotify

    @BleLoop
    @Test func acquireNotifyGivesASeqpacketSocketAndTheMTUAfterNotifyAcquired() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.combo)
        let since = fixture.mark
        let (descriptor, mtu, mark) = try await AcquireTests.acquire(fixture, path, "AcquireNotify")
        defer { close(descriptor) }
        #expect(mtu == 517)
        #expect(AcquireTests.socketType(descriptor) == Int32(SOCK_SEQPACKET.rawValue))
        let acquired = try #require(fixture.index(since: since) { $0.changes(path, "NotifyAcquired", to: .boolean(true)) })
        #expect(acquired < mark, "NotifyAcquired=true before the reply")
    }

    @BleLoop
    @Test func notificationsArriveAsOnePacketEachWithoutValueSignals() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let peripheral = try #require(fixture.simulator.peripheral(Golden.address))
        let path = try await fixture.gattObject(device, Golden.combo)
        let (descriptor, _, _) = try await AcquireTests.acquire(fixture, path, "AcquireNotify")
        defer { close(descriptor) }
        peripheral.notify(Golden.combo, value: Data([1, 2, 3]))
        peripheral.notify(Golden.combo, value: Data([4]))
        #expect(await receivePacket(descriptor) == Data([1, 2, 3]))
        #expect(await receivePacket(descriptor) == Data([4]))
        try await fixture.barrier()
        #expect(fixture.signals(since: 0) { $0.changes(path, "Value") }.isEmpty)
    }

    @BleLoop
    @Test(arguments: ["AcquireNotify", "StartNotify"])
    func whileNotifyIsAcquiredAnotherAcquireOrStartNotifyIsNotPermitted(method: String) async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.combo)
        let (descriptor, _, _) = try await AcquireTests.acquire(fixture, path, "AcquireNotify")
        defer { close(descriptor) }
        await expectDBusError("org.bluez.Error.NotPermitted", "Notify acquired") {
            try await fixture.call(path, Interface.characteristic, method, method == "AcquireNotify" ? [options()] : [])
        }
    }

    @BleLoop
    @Test func readValueWorksWhileNotifyIsAcquired() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.combo)
        let (descriptor, _, _) = try await AcquireTests.acquire(fixture, path, "AcquireNotify")
        defer { close(descriptor) }
        #expect(try await fixture.call(path, Interface.characteristic, "ReadValue", [options()]) == [.bytes(Data([0x0c]))])
    }

    @BleLoop
    @Test func closingTheNotifySocketClearsNotifyAcquired() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.combo)
        let (descriptor, _, _) = try await AcquireTests.acquire(fixture, path, "AcquireNotify")
        let since = fixture.mark
        close(descriptor)
        try await fixture.waitForProperty(path, "NotifyAcquired", .boolean(false), since: since)
        // Free again: StartNotify works now.
        try await fixture.call(path, Interface.characteristic, "StartNotify")
    }

    @BleLoop
    @Test func acquireNotifyWhileAStartNotifySessionIsActiveIsInProgress() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.combo)
        try await fixture.call(path, Interface.characteristic, "StartNotify")
        await expectDBusError("org.bluez.Error.InProgress", "In Progress") {
            try await fixture.call(path, Interface.characteristic, "AcquireNotify", [options()])
        }
    }

    @BleLoop
    @Test(arguments: [Golden.indicate, Golden.rw])
    func acquireNotifyWithoutTheNotifyFlagIsNotSupported(uuid: String) async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, uuid)
        await expectDBusError("org.bluez.Error.NotSupported", "Operation is not supported") {
            try await fixture.call(path, Interface.characteristic, "AcquireNotify", [options()])
        }
    }

    // MARK: AcquireWrite

    @BleLoop
    @Test func acquireWriteGivesASeqpacketSocketAndTheMTUAfterWriteAcquired() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.writeWithoutResponse)
        let since = fixture.mark
        let (descriptor, mtu, mark) = try await AcquireTests.acquire(fixture, path, "AcquireWrite")
        defer { close(descriptor) }
        #expect(mtu == 517)
        #expect(AcquireTests.socketType(descriptor) == Int32(SOCK_SEQPACKET.rawValue))
        let acquired = try #require(fixture.index(since: since) { $0.changes(path, "WriteAcquired", to: .boolean(true)) })
        #expect(acquired < mark, "WriteAcquired=true before the reply")
    }

    @BleLoop
    @Test func aPacketOnTheWriteSocketReachesTheAppAsAWrite() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let peripheral = try #require(fixture.simulator.peripheral(Golden.address))
        let path = try await fixture.gattObject(device, Golden.writeWithoutResponse)
        let (descriptor, _, _) = try await AcquireTests.acquire(fixture, path, "AcquireWrite")
        defer { close(descriptor) }
        let before = peripheral.writes.count
        let payload: [UInt8] = [0xde, 0xad]
        #expect(send(descriptor, payload, payload.count, 0) == payload.count)
        #expect(try await receivedWrite(before, by: peripheral).fields == (Golden.writeWithoutResponse, Data(payload), false))
    }

    @BleLoop
    @Test(arguments: ["WriteValue", "AcquireWrite"])
    func whileWriteIsAcquiredWriteValueAndAcquireWriteAreNotPermitted(method: String) async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.writeWithoutResponse)
        let (descriptor, _, _) = try await AcquireTests.acquire(fixture, path, "AcquireWrite")
        defer { close(descriptor) }
        await expectDBusError("org.bluez.Error.NotPermitted", "Write acquired") {
            try await fixture.call(path, Interface.characteristic, method,
                                   method == "WriteValue" ? [.bytes(Data([1])), options()] : [options()])
        }
    }

    @BleLoop
    @Test func closingTheWriteSocketClearsWriteAcquired() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.writeWithoutResponse)
        let (descriptor, _, _) = try await AcquireTests.acquire(fixture, path, "AcquireWrite")
        let since = fixture.mark
        close(descriptor)
        try await fixture.waitForProperty(path, "WriteAcquired", .boolean(false), since: since)
        try await fixture.call(path, Interface.characteristic, "WriteValue", [.bytes(Data([1])), options()])
    }

    @BleLoop
    @Test func acquireWriteWithoutWriteWithoutResponseIsNotSupported() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        await expectDBusError("org.bluez.Error.NotSupported", "Operation is not supported") {
            try await fixture.call(path, Interface.characteristic, "AcquireWrite", [options()])
        }
    }

    @BleLoop
    @Test func aDisconnectHangsUpAcquiredSocketsAndClearsTheFlags() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.combo)
        let (notifyDescriptor, _, _) = try await AcquireTests.acquire(fixture, path, "AcquireNotify")
        let (writeDescriptor, _, _) = try await AcquireTests.acquire(fixture, path, "AcquireWrite")
        defer {
            close(notifyDescriptor)
            close(writeDescriptor)
        }
        let since = fixture.mark
        try await fixture.disconnect(device)
        try await fixture.waitForProperty(path, "NotifyAcquired", .boolean(false), since: since)
        try await fixture.waitForProperty(path, "WriteAcquired", .boolean(false), since: since)
        // EOF: the other end is closed.
        #expect(await receivePacket(notifyDescriptor) == Data())
    }
}
