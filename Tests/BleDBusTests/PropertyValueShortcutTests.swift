import BleDBus
import BleTestSupport
import Foundation
import Testing

/// The notification shortcut (`PropertyValueShortcut`) delivers what the general path delivers,
/// in the same order, and refuses what it refuses: a notification-shaped signal from a
/// connection that does not own the subscription's name never arrives.
@Suite(.timeLimit(.minutes(TestTime.minutes(1)))) @BleLoop struct PropertyValueShortcutTests {
    static let name = "com.example.Gatt"
    static let characteristic = "org.bluez.GattCharacteristic1"
    static let properties = "org.freedesktop.DBus.Properties"

    /// What a subscriber saw, in order: the values and other signals, and how many came through
    /// the shortcut.
    struct Seen {
        var log: [String] = []
        var throughShortcut = 0
    }

    /// Logs what the shortcut delivers.
    final class Receiver: PropertyValueReceiver {
        let seen: LoopBox<Seen>
        init(_ seen: LoopBox<Seen>) { self.seen = seen }
        func propertyValueChanged(_ path: ObjectPath, _ value: Data) {
            seen.value.log.append("value \(path.rawValue) \(PropertyValueShortcutTests.hex(value))")
            seen.value.throughShortcut += 1
        }
    }

    static func changed(_ entries: [(String, DBusValue)]) -> DBusValue {
        .dictionary(key: .string, value: .variant, entries.map { DBusDictionaryEntry(key: .string($0.0), value: .variant($0.1)) })
    }

    static func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

    /// A general-path message as the shortcut would report it, or a description of what else it is.
    static func describe(_ message: DBusMessage) -> String {
        let path = message.path?.rawValue ?? "-"
        if message.member == "PropertiesChanged", message.body.count == 3, case .string(characteristic) = message.body[0],
           case .dictionary(.string, .variant, let entries) = message.body[1], entries.count == 1,
           case .string("Value") = entries[0].key, case .variant(.bytes(let value)) = entries[0].value,
           case .array(_, let invalidated) = message.body[2], invalidated.isEmpty {
            return "value \(path) \(hex(value))"
        }
        return "other \(message.member ?? "-") \(path) \(message.body.count)"
    }

    /// Signals of every shape near the shortcut's, from the name's owner, and forged ones from
    /// another connection (sent straight to the subscriber, so no bus rule filters them out).
    func run(shortcutsEnabled: Bool, bus: PrivateBus) async throws -> Seen {
        let client = try await Connection.open(bus.busAddress)
        let owner = try await Connection.open(bus.busAddress)
        let forger = try await Connection.open(bus.busAddress)
        defer { client.close(); owner.close(); forger.close() }
        try await owner.claimName(Self.name)
        client.signals.shortcutsEnabled = shortcutsEnabled
        let seen = LoopBox(Seen())
        let done = Mailbox<Void>("done")
        let receiver = Receiver(seen)
        let shortcut = PropertyValueShortcut(interface: Self.characteristic, property: "Value", receiver: receiver)
        let subscription = try client.signals.subscribe(SignalMatch(sender: Self.name), shortcut: shortcut) { message in
            if message.member == "Done" { done.post(()); return }
            seen.value.log.append(Self.describe(message))
        }
        let owners = Mailbox<String?>("owner")
        let watch = try client.signals.watchName(Self.name) { owners.post($0) }
        #expect(try await owners.next() == owner.uniqueName)
        try await client.syncWithBus()

        let path: ObjectPath = "/org/bluez/hci0/dev_C0_FF_EE_00_00_10/service0010/char0011"
        let forged: [DBusValue] = [.string(Self.characteristic), Self.changed([("Value", .bytes(Data([0xee])))]), .array(element: .string, [])]
        for _ in 0..<3 {
            try forger.emitSignal(path: path, interface: Self.properties, member: "PropertiesChanged", body: forged, destination: client.uniqueName)
        }
        try await forger.syncWithBus()
        let bodies: [[DBusValue]] = [
            [.string(Self.characteristic), Self.changed([("Value", .bytes(Data([1, 2, 3, 4])))]), .array(element: .string, [])],
            [.string(Self.characteristic), Self.changed([("Value", .bytes(Data()))]), .array(element: .string, [])],
            [.string(Self.characteristic), Self.changed([("Value", .bytes(Data([5]))), ("MTU", .uint16(247))]), .array(element: .string, [])],
            [.string(Self.characteristic), Self.changed([("Value", .bytes(Data([6])))]), .array(element: .string, [.string("Flags")])],
            [.string(Self.characteristic), Self.changed([("Value", .string("seven"))]), .array(element: .string, [])],
            [.string(Self.characteristic), Self.changed([("Notifying", .boolean(true))]), .array(element: .string, [])],
            [.string(Self.characteristic), Self.changed([]), .array(element: .string, [])],
            [.string("org.bluez.GattDescriptor1"), Self.changed([("Value", .bytes(Data([8])))]), .array(element: .string, [])],
            [.string(Self.characteristic), Self.changed([("Value", .bytes(Data([9])))])],
            [.string(Self.characteristic), Self.changed([("Value", .bytes(Data(repeating: 0xab, count: 512)))]), .array(element: .string, [])],
        ]
        for round in 0..<3 {
            for (index, body) in bodies.enumerated() {
                let object = try ObjectPath("\(path.rawValue)\(round)\(index)")
                try owner.emitSignal(path: object, interface: Self.properties, member: "PropertiesChanged", body: body)
            }
            try owner.emitSignal(path: path, interface: "com.example.Other", member: "Tick", body: [.uint32(UInt32(round))])
        }
        try owner.emitSignal(path: path, interface: "com.example.Other", member: "Done")
        try await done.next()
        withExtendedLifetime((subscription, watch, receiver)) {}
        return seen.value
    }

    @Test func theShortcutDeliversWhatTheGeneralPathDeliversInTheSameOrder() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let general = try await run(shortcutsEnabled: false, bus: bus)
        let shortcut = try await run(shortcutsEnabled: true, bus: bus)
        #expect(general.throughShortcut == 0)
        // Three rounds of three notification shapes (four bytes, empty, 512 bytes).
        #expect(shortcut.throughShortcut == 9)
        #expect(shortcut.log == general.log)
        #expect(general.log.count == 3 * 10 + 3)
        #expect(!general.log.contains { $0.hasSuffix(" ee") }, "a forged notification was delivered: \(general.log)")
        #expect(!shortcut.log.contains { $0.hasSuffix(" ee") }, "a forged notification was delivered: \(shortcut.log)")
    }

    @Test func aShortcutNeedsAMatchOnAWellKnownSenderAlone() async throws {
        let bus = try await startPrivateBus()
        defer { bus.stop() }
        let client = try await Connection.open(bus.busAddress)
        defer { client.close() }
        let receiver = Receiver(LoopBox(Seen()))
        let shortcut = PropertyValueShortcut(interface: Self.characteristic, property: "Value", receiver: receiver)
        for match in [SignalMatch(sender: Self.name, interface: Self.properties), SignalMatch(sender: ":1.1"), SignalMatch(interface: Self.properties)] {
            #expect(throws: DBusError.self) { _ = try client.signals.subscribe(match, shortcut: shortcut) { _ in } }
        }
        #expect(client.signals.subscriptionCount == 0)
        withExtendedLifetime(receiver) {}
    }
}
