import BleDBus
import BleTestSupport
import Foundation
import Testing
import BlueZVocabulary

/// The decoder's shortcuts (dictionary types read from the first entry's type codes, strings
/// reused from earlier messages) and the encoder's (no signature re-parse for plain types,
/// signatures computed on demand) give exactly what the general paths give.
@Suite(.timeLimit(.minutes(TestTime.minutes(1)))) @BleLoop struct DecodingShortcutTests {
    /// Dictionaries of every shape the shortcut takes and of those it leaves to the signature.
    nonisolated static let dictionaries: [DBusValue] = [
        .dictionary(key: .string, value: .variant, [DBusDictionaryEntry(key: .string("Value"), value: .variant(.bytes(Data([1, 2]))))]),
        .dictionary(key: .string, value: .variant, []),
        .dictionary(key: .string, value: .string, [DBusDictionaryEntry(key: .string("a"), value: .string("b"))]),
        .dictionary(key: .string, value: .string, []),
        .dictionary(key: .uint16, value: .variant, [DBusDictionaryEntry(key: .uint16(0x004C), value: .variant(.bytes(Data([9]))))]),
        .dictionary(key: .byte, value: .double, [DBusDictionaryEntry(key: .byte(1), value: .double(2.5))]),
        .dictionary(key: .objectPath, value: .unixFD, []),
        .dictionary(key: .signature, value: .boolean, [DBusDictionaryEntry(key: .signature(DBusSignature(types: [.int32])),
                                                                           value: .boolean(true))]),
        // Container values: the shortcut does not apply, the signature says.
        .dictionary(key: .string, value: .array(.string), [DBusDictionaryEntry(key: .string("UUIDs"),
                                                                               value: .array(element: .string, [.string("180d")]))]),
        .dictionary(key: .string, value: .array(.string), []),
        .dictionary(key: .string, value: .array(.byte), [DBusDictionaryEntry(key: .string("raw"), value: .bytes(Data([0])))]),
        .dictionary(key: .string, value: .structure([.int32, .string]), [
            DBusDictionaryEntry(key: .string("s"), value: .structure([.int32(-1), .string("x")])),
        ]),
        .dictionary(key: .string, value: .dictionary(key: .string, value: .variant), [
            DBusDictionaryEntry(key: .string("org.bluez.GattCharacteristic1"),
                                value: BlueZShapes.propertyDictionary([("Value", .bytes(Data([7])))])),
        ]),
        .dictionary(key: .string, value: .dictionary(key: .string, value: .variant), []),
        .array(element: .dictionary(key: .string, value: .variant), [
            BlueZShapes.propertyDictionary([]), BlueZShapes.propertyDictionary([("k", .int16(1))]),
        ]),
        .array(element: .dictionary(key: .string, value: .variant), []),
        .variant(.dictionary(key: .string, value: .variant, [DBusDictionaryEntry(key: .string("v"), value: .variant(.variant(.byte(1))))])),
    ]

    @Test(arguments: dictionaries)
    func aDictionaryDecodesToTheValueAndTypeItWasSentAs(value: DBusValue) throws {
        var message = DBusMessage.signal(path: "/p", interface: "com.example.Shapes", member: "Shape", body: [value])
        message.serial = 1
        let parsed = try DBusMessage(wireBytes: try message.wireBytes())
        #expect(parsed.body == [value])
        #expect(parsed.body.first?.type == value.type)
        // The signature libdbus reports for the body equals the one computed from the value.
        #expect(parsed.signature == message.signature)
        #expect(try DBusType.parse(parsed.signature) == [value.type])
    }

    /// A PropertiesChanged-shaped body (`sa{sv}as`), the shape of every BlueZ notification.
    @Test func aPropertiesChangedBodyDecodesExactly() throws {
        let body: [DBusValue] = [
            .string("org.bluez.GattCharacteristic1"),
            BlueZShapes.propertyDictionary([("Value", .bytes(Data([1, 0, 0, 3]))), ("Notifying", .boolean(true))]),
            .array(element: .string, [.string("Flags")]),
        ]
        var message = DBusMessage.signal(path: "/org/bluez/hci0/dev_00_11_22_33_44_55/service0010/char0012",
                                         interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged", body: body)
        message.serial = 7
        #expect(message.signature == "sa{sv}as")
        let parsed = try DBusMessage(wireBytes: try message.wireBytes())
        #expect(parsed.body == body)
        #expect(parsed.signature == "sa{sv}as")
        #expect(parsed.path == message.path)
        #expect(parsed.interface == message.interface)
        #expect(parsed.member == message.member)
    }

    /// A built message's signature follows its body, also after the body changed; a set one
    /// is kept.
    @Test func aBuiltMessagesSignatureFollowsItsBody() {
        var message = DBusMessage.methodCall(destination: "org.bluez", path: "/p", interface: "org.bluez.GattCharacteristic1",
                                             member: "WriteValue", body: [.bytes(Data([1])), BlueZShapes.propertyDictionary([])])
        #expect(message.signature == "aya{sv}")
        message.body.append(.structure([.int32(1), .variant(.string("x"))]))
        #expect(message.signature == "aya{sv}(iv)")
        message.signature = "s"
        #expect(message.signature == "s")
    }

    /// Strings are reused across the messages of a connection: messages whose strings have the
    /// same lengths but other bytes, interleaved with repeats, must each arrive with their own.
    @Test func repeatedAndLookalikeStringsArriveAsSent() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let (client, server) = try await openPair(bus)
        let received = Mailbox<DBusMessage>("signal")
        let subscription = try client.signals.subscribe(SignalMatch(interface: "com.example.Lookalike")) { received.post($0) }
        try await client.syncWithBus()
        // More distinct strings than the cache keeps, so slots are replaced too.
        var sent: [(ObjectPath, String, [DBusValue])] = []
        for round in 0..<3 {
            for index in 0..<20 {
                let digit = String(index % 10)
                let path = try ObjectPath("/dev/n\(digit)/c\(index / 10)")
                let member = "Ping\(digit)"
                let body: [DBusValue] = [.string("key\(digit)"), .string(round == 1 ? "same" : "sam\(digit)"),
                                         BlueZShapes.propertyDictionary([("K\(digit)", .string("v\(index)"))])]
                sent.append((path, member, body))
                try server.emitSignal(path: path, interface: "com.example.Lookalike", member: member, body: body)
            }
        }
        let messages = try await received.next(sent.count)
        for (message, expected) in zip(messages, sent) {
            #expect(message.path == expected.0)
            #expect(message.member == expected.1)
            #expect(message.body == expected.2)
            #expect(message.sender == server.uniqueName)
        }
        withExtendedLifetime(subscription) {}
    }
}
