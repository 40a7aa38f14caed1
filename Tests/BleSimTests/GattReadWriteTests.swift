import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing
import BlueZVocabulary

/// bluez-observed.md § d. GATT: ReadValue and WriteValue on characteristics and descriptors,
/// value sizes, per-characteristic concurrency, errors while disconnected.
struct GattReadWriteTests {
    @BleLoop
    static func read(_ fixture: SimulatorFixture, _ path: ObjectPath, _ pairs: [(String, DBusValue)] = [],
                     interface: String = Interface.characteristic) async throws -> Data {
        let reply = try await fixture.call(path, interface, "ReadValue", [options(pairs)])
        return try #require(reply.first?.bytesValue)
    }

    @BleLoop
    static func write(_ fixture: SimulatorFixture, _ path: ObjectPath, _ value: Data, _ pairs: [(String, DBusValue)] = [],
                      interface: String = Interface.characteristic) async throws {
        try await fixture.call(path, interface, "WriteValue", [.bytes(value), options(pairs)])
    }

    /// Slow operations from now on (250 ms per connection interval), so that a second call
    /// arrives while the first is still on the air, even on a loaded machine.
    @BleLoop
    static func slowDown(_ fixture: SimulatorFixture) {
        fixture.simulator.timing = TimingModel(connectionIntervalMilliseconds: 250, scale: 1)
    }

    // MARK: Read

    @BleLoop
    @Test func readValueAnnouncesTheValueBeforeReplyingWithIt() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        let since = fixture.mark
        let (result, mark) = await fixture.callMarked(path, Interface.characteristic, "ReadValue", [options()])
        #expect(try result.get() == [.bytes(Golden.initialValue)])
        let signal = try #require(fixture.index(since: since) { $0.changes(path, "Value") })
        #expect(signal < mark)
        #expect(fixture.signals[signal].changedNames == ["Value"])
        #expect(fixture.signals[signal].changed("Value") == .bytes(Golden.initialValue))
    }

    @BleLoop
    @Test func readAtAnOffsetReturnsTheTailButAnnouncesTheWholeCachedValue() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        _ = try await GattReadWriteTests.read(fixture, path)
        let since = fixture.mark
        #expect(try await GattReadWriteTests.read(fixture, path, [("offset", .uint16(5))]) == Data("56789".utf8))
        let signal = try await fixture.waitForSignal(since: since) { $0.changes(path, "Value") }
        #expect(signal.changed("Value") == .bytes(Golden.initialValue))
    }

    @BleLoop
    @Test func readAtAnOffsetEqualToTheLengthIsEmpty() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        #expect(try await GattReadWriteTests.read(fixture, path, [("offset", .uint16(10))]) == Data())
    }

    @BleLoop
    @Test func readBeyondTheEndIsInvalidOffset() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        await expectDBusError("org.bluez.Error.InvalidArguments", "Invalid offset") {
            _ = try await GattReadWriteTests.read(fixture, path, [("offset", .uint16(11))])
        }
    }

    @BleLoop
    @Test func aUInt32OffsetIsInvalidArguments() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        await expectDBusError("org.bluez.Error.InvalidArguments", "Invalid arguments in method call") {
            _ = try await GattReadWriteTests.read(fixture, path, [("offset", .uint32(5))])
        }
    }

    @BleLoop
    @Test func readAcceptsADeviceOption() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        #expect(try await GattReadWriteTests.read(fixture, path, [("device", .objectPath(device))]) == Golden.initialValue)
    }

    @BleLoop
    @Test func everyReadAnnouncesTheValueEvenWhenUnchanged() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        let since = fixture.mark
        _ = try await GattReadWriteTests.read(fixture, path)
        _ = try await GattReadWriteTests.read(fixture, path)
        #expect(fixture.signals(since: since) { $0.changes(path, "Value") }.count == 2)
    }

    // MARK: Write

    static let requestWrites: [(String, [(String, DBusValue)])] = [
        ("no type", []), ("request", [("type", .string("request"))]),
        // Works although the characteristic has no reliable-write property.
        ("reliable", [("type", .string("reliable"))]),
    ]

    @BleLoop
    @Test(arguments: GattReadWriteTests.requestWrites)
    func writeOnAReadWriteCharacteristicIsAWriteRequest(_ label: String, _ pairs: [(String, DBusValue)]) async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let peripheral = try #require(fixture.simulator.peripheral(Golden.address))
        let path = try await fixture.gattObject(device, Golden.rw)
        try await GattReadWriteTests.write(fixture, path, Data([0x42]), pairs)
        let received = try #require(peripheral.writes.last)
        #expect(received.fields == (Golden.rw, Data([0x42]), true))
    }

    @BleLoop
    @Test func writeAtAnOffsetIsALongWriteMergedAtThatOffset() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let peripheral = try #require(fixture.simulator.peripheral(Golden.address))
        let path = try await fixture.gattObject(device, Golden.rw)
        try await GattReadWriteTests.write(fixture, path, Data("abc".utf8), [("offset", .uint16(3))])
        #expect(peripheral.writes.last?.value == Data("012abc6789".utf8), "written in place, the tail kept")
    }

    @BleLoop
    @Test func anUnknownWriteTypeIsNotSupported() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        await expectDBusError("org.bluez.Error.NotSupported", "Operation is not supported") {
            try await GattReadWriteTests.write(fixture, path, Data([1]), [("type", .string("foo"))])
        }
    }

    @BleLoop
    @Test func anEmptyValueIsAccepted() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        try await GattReadWriteTests.write(fixture, path, Data())
        #expect(fixture.simulator.peripheral(Golden.address)?.writes.last?.value == Data())
    }

    @BleLoop
    @Test func aCommandOnAWriteCharacteristicWithoutWriteWithoutResponseReachesTheApp() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let peripheral = try #require(fixture.simulator.peripheral(Golden.address))
        let path = try await fixture.gattObject(device, Golden.rw)
        let before = peripheral.writes.count
        try await GattReadWriteTests.write(fixture, path, Data([7]), [("type", .string("command"))])
        let received = try await receivedWrite(before, by: peripheral)
        #expect(received.fields == (Golden.rw, Data([7]), false))
    }

    @BleLoop
    @Test func writeRepliesOnlyAndLeavesTheClientsValueAlone() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        let since = fixture.mark
        try await GattReadWriteTests.write(fixture, path, Data([0x42]))
        try await fixture.barrier()
        #expect(fixture.signals(since: since) { $0.path == path }.isEmpty)
        #expect(try await fixture.property(path, Interface.characteristic, "Value") == .bytes(Data()))
    }

    // MARK: Value sizes (MTU 517)

    @BleLoop
    @Test func aPeripheralThatIsNotBlueZTakesTheSpecsFull512Bytes() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        try await GattReadWriteTests.write(fixture, path, Data(repeating: 0xAB, count: 512))
        #expect(fixture.simulator.peripheral(Golden.address)?.writes.last?.value.count == 512)
    }

    @BleLoop
    @Test func aWriteRequestOf510BytesIsAccepted() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        try await GattReadWriteTests.write(fixture, path, Data(repeating: 0xAB, count: 510))
        #expect(fixture.simulator.peripheral(Golden.address)?.writes.last?.value.count == 510)
    }

    @BleLoop
    @Test(arguments: [511, 512])
    func aWriteRequestOf511Or512BytesIsInvalidLengthOnABlueZServer(count: Int) async throws {
        // The bluez 5.66 server counts the 2-byte handle in its length check; a peripheral is
        // such a server when its PnP ID is bluetoothd's (as the observed one's was).
        var spec = Golden.spec()
        spec.services.append(ServiceSpec(uuid: "180a", characteristics: [
            CharacteristicSpec(uuid: "2a50", flags: ["read"], value: Data([0x02, 0x6b, 0x1d, 0x46, 0x02, 0x42, 0x05])),
        ]))
        let (fixture, device) = try await SimulatorFixture.connected(spec)
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        await expectDBusError("org.bluez.Error.InvalidArguments", "Invalid Length") {
            try await GattReadWriteTests.write(fixture, path, Data(repeating: 0xAB, count: count))
        }
    }

    @BleLoop
    @Test func aLongWritePastTheAttributeLimitIsInvalidLengthButWithinItSucceeds() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        try await GattReadWriteTests.write(fixture, path, Data(repeating: 0x11, count: 510))
        try await GattReadWriteTests.write(fixture, path, Data(repeating: 0x22, count: 10), [("offset", .uint16(490))])
        await expectDBusError("org.bluez.Error.InvalidArguments", "Invalid Length") {
            try await GattReadWriteTests.write(fixture, path, Data(repeating: 0x33, count: 10), [("offset", .uint16(505))])
        }
    }

    @BleLoop
    @Test func aCommandOfMTUMinus3BytesSucceedsButThePeerDropsIt() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let peripheral = try #require(fixture.simulator.peripheral(Golden.address))
        let path = try await fixture.gattObject(device, Golden.writeWithoutResponse)
        let before = peripheral.writes.count
        try await GattReadWriteTests.write(fixture, path, Data(repeating: 1, count: 514), [("type", .string("command"))])
        // A later small command is the first thing the peer receives.
        try await GattReadWriteTests.write(fixture, path, Data([2]), [("type", .string("command"))])
        #expect(try await receivedWrite(before, by: peripheral).value == Data([2]))
    }

    @BleLoop
    @Test(arguments: [(515, true), (600, true), (515, false), (600, false)])
    func aCommandLongerThanMTUMinus3FailsToInitiate(count: Int, explicitType: Bool) async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.writeWithoutResponse)
        await expectDBusError("org.bluez.Error.Failed", "Failed to initiate write") {
            try await GattReadWriteTests.write(fixture, path, Data(repeating: 1, count: count),
                                               explicitType ? [("type", .string("command"))] : [])
        }
    }

    // MARK: Write-without-response and read-only characteristics

    static let writeWithoutResponseKinds: [(String, [(String, DBusValue)], Bool)] = [
        ("no type", [], false), ("request", [("type", .string("request"))], true), ("reliable", [("type", .string("reliable"))], true),
    ]

    @BleLoop
    @Test(arguments: GattReadWriteTests.writeWithoutResponseKinds)
    func everyWriteKindReachesTheAppOnAWriteWithoutResponseCharacteristic(_ label: String, _ pairs: [(String, DBusValue)],
                                                                          _ withResponse: Bool) async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let peripheral = try #require(fixture.simulator.peripheral(Golden.address))
        let path = try await fixture.gattObject(device, Golden.writeWithoutResponse)
        let before = peripheral.writes.count
        try await GattReadWriteTests.write(fixture, path, Data([9]), pairs)
        #expect(try await receivedWrite(before, by: peripheral).fields == (Golden.writeWithoutResponse, Data([9]), withResponse))
    }

    @BleLoop
    @Test func readingAWriteWithoutResponseCharacteristicIsNotPermitted() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.writeWithoutResponse)
        await expectDBusError("org.bluez.Error.NotPermitted", "Read not permitted") {
            _ = try await GattReadWriteTests.read(fixture, path)
        }
    }

    @BleLoop
    @Test func aPlainWriteOnAReadOnlyCharacteristicIsRefusedByTheClientAsNotSupported() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.readOnly)
        await expectDBusError("org.bluez.Error.NotSupported", "Operation is not supported") {
            try await GattReadWriteTests.write(fixture, path, Data([1]))
        }
    }

    @BleLoop
    @Test(arguments: ["request", "reliable"])
    func aRequestOrReliableWriteOnAReadOnlyCharacteristicIsWriteNotPermitted(type: String) async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.readOnly)
        await expectDBusError("org.bluez.Error.NotPermitted", "Write not permitted") {
            try await GattReadWriteTests.write(fixture, path, Data([1]), [("type", .string(type))])
        }
    }

    @BleLoop
    @Test func aCommandOnAReadOnlyCharacteristicSucceedsAndIsSilentlyDropped() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let peripheral = try #require(fixture.simulator.peripheral(Golden.address))
        let path = try await fixture.gattObject(device, Golden.readOnly)
        try await GattReadWriteTests.write(fixture, path, Data([1]), [("type", .string("command"))])
        // A read on the same link afterwards: the command went over the air before it.
        #expect(try await GattReadWriteTests.read(fixture, path) == Data([0x52, 0x4f]))
        #expect(peripheral.writes.isEmpty)
    }

    // MARK: Concurrency on one characteristic

    @BleLoop
    @Test func aSecondWriteWhileTheFirstIsOnTheAirIsInProgressAndTheFirstSucceeds() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        GattReadWriteTests.slowDown(fixture)
        let arguments: [DBusValue] = [.bytes(Data([1])), options()]
        let first = fixture.send(path, Interface.characteristic, "WriteValue", arguments)
        let second = fixture.send(path, Interface.characteristic, "WriteValue", arguments)
        let firstResult = await first.reply
        let secondResult = await second.reply
        #expect(throws: Never.self) { try firstResult.result.get() }
        #expect(remoteError(secondResult.result)?.name == "org.bluez.Error.InProgress")
        #expect(remoteError(secondResult.result)?.message == "In Progress")
        #expect(secondResult.mark <= firstResult.mark, "the second fails at once")
    }

    @BleLoop
    @Test func twoReadsWithTheSameOffsetAreMergedIntoOneAttRead() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let peripheral = try #require(fixture.simulator.peripheral(Golden.address))
        var reads = 0
        peripheral.onRead = { _, _ in
            reads += 1
            return .stored
        }
        let path = try await fixture.gattObject(device, Golden.rw)
        GattReadWriteTests.slowDown(fixture)
        let first = fixture.send(path, Interface.characteristic, "ReadValue", [options()])
        let second = fixture.send(path, Interface.characteristic, "ReadValue", [options()])
        let firstResult = await first.reply
        let secondResult = await second.reply
        #expect(try firstResult.result.get() == [.bytes(Golden.initialValue)])
        #expect(try secondResult.result.get() == [.bytes(Golden.initialValue)])
        #expect(reads == 1)
    }

    @BleLoop
    @Test func aSecondReadWithAnotherOffsetIsInProgress() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        GattReadWriteTests.slowDown(fixture)
        let first = fixture.send(path, Interface.characteristic, "ReadValue", [options()])
        let second = fixture.send(path, Interface.characteristic, "ReadValue", [options([("offset", .uint16(2))])])
        let firstResult = await first.reply
        let secondResult = await second.reply
        #expect(throws: Never.self) { try firstResult.result.get() }
        #expect(remoteError(secondResult.result)?.name == "org.bluez.Error.InProgress")
        #expect(remoteError(secondResult.result)?.message == "In Progress")
    }

    @BleLoop
    @Test func aReadAndAWriteTogetherBothSucceed() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        GattReadWriteTests.slowDown(fixture)
        let read = fixture.send(path, Interface.characteristic, "ReadValue", [options()])
        let write = fixture.send(path, Interface.characteristic, "WriteValue", [.bytes(Data([5])), options()])
        let readResult = await read.reply
        let writeResult = await write.reply
        #expect(throws: Never.self) { try readResult.result.get() }
        #expect(throws: Never.self) { try writeResult.result.get() }
    }

    @BleLoop
    @Test func writesToDifferentCharacteristicsAreIndependent() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let rw = try await fixture.gattObject(device, Golden.rw)
        let other = try await fixture.gattObject(device, Golden.writeWithoutResponse)
        GattReadWriteTests.slowDown(fixture)
        let request: [DBusValue] = [.bytes(Data([5])), options([("type", .string("request"))])]
        let first = fixture.send(rw, Interface.characteristic, "WriteValue", request)
        let second = fixture.send(other, Interface.characteristic, "WriteValue", request)
        let firstResult = await first.reply
        let secondResult = await second.reply
        #expect(throws: Never.self) { try firstResult.result.get() }
        #expect(throws: Never.self) { try secondResult.result.get() }
    }

    // MARK: Descriptors

    @BleLoop
    @Test func descriptorsReadWithAndWithoutAnOffset() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.userDescription, interface: Interface.descriptor)
        #expect(try await GattReadWriteTests.read(fixture, path, interface: Interface.descriptor) == Data("Hello".utf8))
        #expect(try await GattReadWriteTests.read(fixture, path, [("offset", .uint16(2))], interface: Interface.descriptor)
            == Data("llo".utf8))
    }

    @BleLoop
    @Test(arguments: [[(String, DBusValue)](), [("type", .string("command"))]])
    func descriptorWritesSucceed(_ pairs: [(String, DBusValue)]) async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.userDescription, interface: Interface.descriptor)
        try await GattReadWriteTests.write(fixture, path, Data("Bye".utf8), pairs, interface: Interface.descriptor)
        #expect(try await GattReadWriteTests.read(fixture, path, interface: Interface.descriptor) == Data("Bye".utf8))
    }

    @BleLoop
    @Test func theCCCDReadsAsTwoZeroBytes() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let characteristic = try await fixture.gattObject(device, Golden.notify)
        let cccd = try await fixture.gattObject(device, Golden.cccd, interface: Interface.descriptor, under: characteristic)
        #expect(try await GattReadWriteTests.read(fixture, cccd, interface: Interface.descriptor) == Data([0, 0]))
    }

    @BleLoop
    @Test func writingTheCCCDIsRefusedOnTheClientSide() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let characteristic = try await fixture.gattObject(device, Golden.notify)
        let cccd = try await fixture.gattObject(device, Golden.cccd, interface: Interface.descriptor, under: characteristic)
        await expectDBusError("org.bluez.Error.NotPermitted", "Write not permitted") {
            try await GattReadWriteTests.write(fixture, cccd, Data([1, 0]), interface: Interface.descriptor)
        }
    }

    // MARK: While disconnected

    @BleLoop
    @Test(arguments: ["ReadValue", "WriteValue", "DescriptorRead", "DescriptorWrite"])
    func gattOperationsWhileDisconnectedFailNotConnected(operation: String) async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let characteristic = try await fixture.gattObject(device, Golden.rw)
        let descriptor = try await fixture.gattObject(device, Golden.userDescription, interface: Interface.descriptor)
        try await fixture.disconnect(device)
        await expectDBusError("org.bluez.Error.Failed", "Not connected") {
            switch operation {
            case "ReadValue": _ = try await GattReadWriteTests.read(fixture, characteristic)
            case "WriteValue": try await GattReadWriteTests.write(fixture, characteristic, Data([1]))
            case "DescriptorRead": _ = try await GattReadWriteTests.read(fixture, descriptor, interface: Interface.descriptor)
            default: try await GattReadWriteTests.write(fixture, descriptor, Data([1]), interface: Interface.descriptor)
            }
        }
    }

    /// bluetoothd 5.66 (src/gatt-client.c): `MTU` exists only while it has a GATT client for the
    /// device (`characteristic_mtu_exists`), so a disconnected device's characteristics have
    /// none, and it goes without a signal; the next link's MTU is the next link's own. Issue 25:
    /// BleSim reported 517 while disconnected, which hid BleKit keeping an earlier link's MTU.
    @BleLoop
    @Test func mtuIsAbsentWhileDisconnectedAndTheNewLinksOwnAfterAReconnect() async throws {
        let (fixture, device) = try await SimulatorFixture.connected()
        defer { fixture.tearDown() }
        let path = try await fixture.gattObject(device, Golden.rw)
        #expect(try await fixture.property(path, Interface.characteristic, "MTU") == .uint16(517))
        let since = fixture.mark
        try await fixture.disconnect(device)
        #expect(fixture.signals(since: since) { $0.changes(path, "MTU") }.isEmpty, "MTU goes without a signal")
        await expectDBusError("org.freedesktop.DBus.Error.InvalidArgs", "No such property 'MTU'") {
            _ = try await fixture.property(path, Interface.characteristic, "MTU")
        }
        let all = try await fixture.call(path, Interface.properties, "GetAll", [.string(Interface.characteristic)])
        let names = try BlueZShapes.propertyMap(try #require(all.first)).keys
        #expect(!names.contains("MTU"), "GetAll while disconnected: \(names.sorted())")
        #expect(names.contains("UUID"))
        // The peer now negotiates less: the next link says so.
        fixture.simulator.peripheral(Golden.address)?.updateAdvertisement { $0.mtu = 247 }
        try await fixture.connect(device)
        #expect(try await fixture.property(path, Interface.characteristic, "MTU") == .uint16(247))
    }
}
