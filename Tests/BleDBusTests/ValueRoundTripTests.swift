import BleDBus
import BleTestSupport
import Foundation
import Glibc
import Testing
import BlueZVocabulary

/// Values sent as call arguments through a real dbus-daemon to an echo method on a second
/// connection come back equal.
@Suite(.timeLimit(.minutes(TestTime.minutes(1)))) @BleLoop struct ValueRoundTripTests {
    nonisolated static let basicValues: [DBusValue] = [
        .byte(0), .byte(255),
        .boolean(true), .boolean(false),
        .int16(.min), .int16(.max), .uint16(.max),
        .int32(.min), .int32(-1), .uint32(.max),
        .int64(.min), .int64(.max), .uint64(.max),
        .double(.pi), .double(-1.5e300), .double(.infinity), .double(.leastNonzeroMagnitude),
        .string(""), .string("héllo wörld ✓ 🚀"), .string(String(repeating: "long ", count: 20_000)),
        .objectPath(.root), .objectPath("/org/bluez/hci0/dev_00_11_22_33_44_55"),
        .signature(DBusSignature(types: [.dictionary(key: .string, value: .variant)])),
        .bytes(Data()), .bytes(Data(0...255)),
    ]

    @Test(arguments: basicValues)
    func basicValuesComeBackEqual(value: DBusValue) async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        #expect(try await client.echo([value], through: server) == [value])
    }

    nonisolated static let containerValues: [DBusValue] = [
        .array(element: .string, [.string("a"), .string("b"), .string("c")]),
        .array(element: .int32, []),
        .array(element: .array(.byte), [.bytes(Data([1, 2])), .bytes(Data())]),
        .array(element: .array(.uint64), [.array(element: .uint64, [.uint64(1)]), .array(element: .uint64, [])]),
        .array(element: .structure([.string, .variant]), [.structure([.string("k"), .variant(.int16(-3))])]),
        .array(element: .variant, [.variant(.string("x")), .variant(.bytes(Data([9])))]),
        .array(element: .objectPath, [.objectPath("/a"), .objectPath("/a/b")]),
        BlueZShapes.propertyDictionary([("Address", .string("00:11:22:33:44:55")), ("RSSI", .int16(-60)),
                                        ("UUIDs", .array(element: .string, [.string("180d")]))]),
        BlueZShapes.manufacturerDataValue([0x004C: Data([2, 21, 0xFF]), 0x0059: Data()]),
        .dictionary(key: .uint32, value: .string, [DBusDictionaryEntry(key: .uint32(3), value: .string("three")),
                                                     DBusDictionaryEntry(key: .uint32(1), value: .string("one"))]),
        .dictionary(key: .string, value: .variant, []),
        .dictionary(key: .objectPath, value: .dictionary(key: .string, value: .dictionary(key: .string, value: .variant)), [
            DBusDictionaryEntry(key: .objectPath("/org/bluez/hci0"), value: .dictionary(
                key: .string, value: .dictionary(key: .string, value: .variant), [
                    DBusDictionaryEntry(key: .string("org.bluez.Adapter1"),
                                        value: BlueZShapes.propertyDictionary([("Powered", .boolean(true))])),
                ])),
        ]),
        .structure([.int32(1), .string("two"), .structure([.double(3.5), .boolean(false)])]),
        .variant(.uint32(7)),
        .variant(.array(element: .string, [.string("in a variant")])),
        .variant(.structure([.byte(1), .variant(.objectPath("/p"))])),
        .variant(.variant(.variant(.int64(-9)))),
    ]

    @Test(arguments: containerValues)
    func containerValuesComeBackEqual(value: DBusValue) async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        #expect(try await client.echo([value], through: server) == [value])
    }

    @Test func manyArgumentsOfMixedTypesComeBackInOrder() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let values = Self.basicValues + Self.containerValues
        #expect(try await client.echo(values, through: server) == values)
    }

    @Test func aFileDescriptorComesBackAsADescriptorOfTheSameFile() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let (mine, other) = try Descriptors.socketPair()
        defer { close(other) }
        let sent = UnixFileDescriptor(adopting: mine)
        let reply = try await client.echo([.unixFD(sent)], through: server)
        guard case .unixFD(let received)? = reply.first else {
            Issue.record("expected a unix fd, got \(reply)")
            return
        }
        // A new descriptor (owned by the reply) for the same socket.
        #expect(received.rawValue >= 0 && received.rawValue != sent.rawValue)
        #expect(Descriptors.target(of: received.rawValue) == Descriptors.target(of: sent.rawValue))
    }

    @Test func thirtyTwoNestedArraysComeBack() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let value = Nesting.arrays(depth: 32)
        #expect(try await client.echo([value], through: server) == [value])
    }

    @Test func thirtyTwoNestedStructuresComeBack() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let value = Nesting.structures(depth: 32)
        #expect(try await client.echo([value], through: server) == [value])
    }

    @Test func nestedVariantsComeBack() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let value = Nesting.variants(depth: 32)
        #expect(try await client.echo([value], through: server) == [value])
    }

    @Test func arraysStructuresAndVariantsNestedTogetherComeBack() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        var value = DBusValue.string("leaf")
        for level in 0..<20 {
            switch level % 3 {
            case 0: value = .array(element: value.type, [value])
            case 1: value = .structure([.uint16(UInt16(level)), value])
            default: value = .variant(value)
            }
        }
        #expect(try await client.echo([value], through: server) == [value])
    }

    @Test(arguments: [
        ("33 nested arrays", Nesting.arrays(depth: 33)),
        ("33 nested structures", Nesting.structures(depth: 33)),
        ("65 nested variants", Nesting.variants(depth: 65)),
    ])
    func valuesNestedBeyondTheLimitsFailToEncodeAndSendNothing(name: String, value: DBusValue) async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, _) = try await openPair(bus)
        let sent = LoopBox(0)
        client.tracer = { direction, _ in if direction == .sent { sent.value += 1 } }
        let error = await dbusError {
            try await client.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                  interface: "org.freedesktop.DBus", member: "GetId", arguments: [value])
        }
        guard case .encoding(let detail)? = error else {
            Issue.record("\(name): expected DBusError.encoding, got \(String(describing: error))")
            return
        }
        #expect(detail.contains("nested"), "\(detail)")
        #expect(sent.value == 0)
        #expect(client.outstandingCallCount == 0)
        #expect(client.isOpen)
    }

    @Test func anArrayWithAnElementOfTheWrongTypeFailsToEncode() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, _) = try await openPair(bus)
        let error = await dbusError {
            try await client.callBus("GetId", [.array(element: .string, [.string("ok"), .int32(1)])])
        }
        guard case .encoding? = error else {
            Issue.record("expected DBusError.encoding, got \(String(describing: error))")
            return
        }
    }

    @Test func aStringWithNULIsAnInvalidArgumentAndNothingIsSent() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, _) = try await openPair(bus)
        let sent = LoopBox(0)
        client.tracer = { direction, _ in if direction == .sent { sent.value += 1 } }
        let error = await dbusError { try await client.callBus("GetNameOwner", [.string("org.bluez\0evil")]) }
        guard case .invalidArgument(let detail)? = error else {
            Issue.record("expected DBusError.invalidArgument, got \(String(describing: error))")
            return
        }
        #expect(detail.contains("NUL"))
        #expect(sent.value == 0)
    }

    @Test func aStringWithNULDeepInsideAContainerIsAnInvalidArgument() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, _) = try await openPair(bus)
        let value = BlueZShapes.propertyDictionary([("Name", .array(element: .string, [.string("a\0b")]))])
        let error = await dbusError { try await client.callBus("GetId", [value]) }
        guard case .invalidArgument? = error else {
            Issue.record("expected DBusError.invalidArgument, got \(String(describing: error))")
            return
        }
    }

    @Test(arguments: ["bad//path", "no/leading/slash", "/trailing/", "/dash-not-allowed", "", "/sp ace"])
    func invalidObjectPathsAreRefusedAtConstruction(text: String) {
        #expect(throws: DBusError.self) { try ObjectPath(text) }
        do {
            _ = try ObjectPath(text)
        } catch {
            guard case .invalidArgument(let detail) = error else {
                Issue.record("expected .invalidArgument, got \(error)")
                return
            }
            #expect(detail.contains("'\(text)'"), "\(detail)")
        }
    }

    struct BadNames: Sendable, CustomTestStringConvertible {
        var label: String
        var destination: String?
        var interface: String?
        var member: String
        var testDescription: String { label }
    }

    @Test(arguments: [
        BadNames(label: "interface without a dot", interface: "no_dots", member: "Echo"),
        BadNames(label: "interface with an empty element", interface: "com..example", member: "Echo"),
        BadNames(label: "interface element starting with a digit", interface: "com.9example", member: "Echo"),
        BadNames(label: "member with a dot", interface: Echo.interface, member: "Bad.Member"),
        BadNames(label: "member starting with a digit", interface: Echo.interface, member: "9Starts"),
        BadNames(label: "empty member", interface: Echo.interface, member: ""),
        BadNames(label: "destination with a space", destination: "not a bus name", interface: Echo.interface, member: "Echo"),
    ])
    func invalidNamesInACallAreInvalidArgumentsAndNothingIsSent(names: BadNames) async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let sent = LoopBox(0)
        client.tracer = { direction, _ in if direction == .sent { sent.value += 1 } }
        let error = await dbusError {
            try await client.call(destination: names.destination ?? server.uniqueName, path: "/echo",
                                  interface: names.interface, member: names.member)
        }
        guard case .invalidArgument? = error else {
            Issue.record("expected .invalidArgument, got \(String(describing: error))")
            return
        }
        #expect(sent.value == 0)
        #expect(client.outstandingCallCount == 0)
    }
}
