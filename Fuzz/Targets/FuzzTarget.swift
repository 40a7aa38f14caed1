// The parsers the targets drive are `package`-level (RequestOptions, RequestAdmission, the
// peripheral's read and write answers, the scanner's advertisement, CommandChunker, the gateway's
// config commands), not public API. These files are compiled twice: into BleReliabilityTests
// (BleKit's own package, make test) and into the Fuzz package's blekit-fuzz (make fuzz), another
// package that reaches them through @testable (its debug build compiles BleKit with
// -enable-testing), so nothing is made public for the fuzzers.
@testable import BleCore
import BleDBus
@testable import BleDSL
import BleSim
import BlueZVocabulary
import Foundation

/// The inputs from outside that BleKit parses, each as one libFuzzer target: bytes in, and
/// either a typed error or a value out — never a crash, a hang or a broken invariant.
///
/// `make fuzz` runs each under libFuzzer and AddressSanitizer (the Fuzz package's `blekit-fuzz`);
/// the inputs that once crashed are kept under Fuzz/Regressions/<target>/ and replayed by
/// BleReliabilityTests in `make test`, into which these files are compiled.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// A D-Bus message from the bus (libdbus's wire format), then BlueZ's typed shapes.
    case dbusMessage = "dbus-message"
    /// An advertisement as BlueZ reports it: a property map of a `Device1`.
    case advertisement
    /// The DSL engine cutting a command into packets by a length protocol.
    case commandChunks = "command-chunks"
    /// A BleSim scenario file.
    case scenario
    /// A UUID string from outside.
    case uuid
    /// A request bluetoothd sends to a served characteristic or descriptor (ReadValue,
    /// WriteValue, AcquireWrite, AcquireNotify): its options, then the offset against a value.
    case peripheralRequest = "peripheral-request"
    /// A whole call from whatever owns `org.bluez` on a served characteristic (ReadValue,
    /// WriteValue, AcquireWrite, AcquireNotify) as the exported objects check it before the
    /// app sees it: the first byte says what the attribute allows, the rest is the message.
    case peripheralCall = "peripheral-call"
    /// An MQTT command payload to the gateway: its config keys, then a GATT request.
    case gatewayCommand = "gateway-command"
    /// The gateway's `--commands` file (operation commands), then a response parsed by each.
    case operationCommands = "operation-commands"
    /// A scenario file through the validating loader, then the simulator built from it.
    case scenarioModel = "scenario-model"
    /// blekit's command line (arguments split at NUL).
    case commandLine = "command-line"

    /// Runs one input; a broken invariant traps, which libFuzzer reports as a crash.
    public func run(_ data: Data) {
        switch self {
        case .dbusMessage: Self.dbusMessage(data)
        case .advertisement: Self.advertisement(data)
        case .commandChunks: Self.commandChunks(data)
        case .scenario: _ = try? JSONDecoder().decode(Scenario.self, from: data)
        case .uuid: Self.uuid(data)
        case .peripheralRequest: Self.peripheralRequest(data)
        case .peripheralCall: Self.peripheralCall(data)
        case .gatewayCommand: Self.gatewayCommand(data)
        case .operationCommands: Self.operationCommands(data)
        case .scenarioModel: Self.scenarioModel(data)
        case .commandLine: Self.commandLine(data)
        }
    }

    /// The options are the last argument of every request; a write's value is its first.
    static func peripheralRequest(_ data: Data) {
        guard let message = try? DBusMessage(wireBytes: data) else { return }
        guard case .success(let options) = RequestOptions.parse(message.body.last) else { return }
        precondition((0...Int(UInt16.max)).contains(options.offset), "an offset outside ATT's range")
        if let mtu = options.mtu { precondition(RequestOptions.mtuRange.contains(mtu), "an MTU outside ATT's range") }
        var bytes = Data()
        if case .bytes(let value)? = message.body.first { bytes = value }
        // The served value is the request's own bytes: offsets land inside, at and past its end.
        if let answer = PeripheralManager.readAnswer(bytes, offset: options.offset) {
            precondition(answer.count == bytes.count - options.offset && bytes.suffix(answer.count) == answer, "a read answer that is not the value's tail")
        } else {
            precondition(options.offset > bytes.count, "a read inside the value refused")
        }
        if let written = PeripheralManager.writeResult(bytes, offset: options.offset, bytes: bytes) {
            precondition(written.count == options.offset + bytes.count && written.prefix(options.offset) == bytes.prefix(options.offset)
                         && written.suffix(bytes.count) == bytes, "a write that is not the old head and the new bytes")
        } else {
            precondition(options.offset > bytes.count, "a write inside the value refused")
        }
    }

    /// Every call is let in or refused, and for the right reason, judged here independently of
    /// `RequestAdmission`: InvalidArguments exactly when a known option has the wrong type (or
    /// a write's value is not bytes), Not Permitted exactly when the attribute forbids it.
    static func peripheralCall(_ data: Data) {
        guard let allows = data.first, let message = try? DBusMessage(wireBytes: data.dropFirst()), let member = message.member else { return }
        let canRead = allows & 1 != 0, canWrite = allows & 2 != 0
        guard let result = RequestAdmission.admit(member, message.body, canRead: canRead, canWrite: canWrite) else {
            precondition(!["ReadValue", "WriteValue", "AcquireWrite", "AcquireNotify"].contains(member), "\(member) not judged")
            return
        }
        let isWrite = member == "WriteValue"
        let optionsArgument = isWrite ? (message.body.count > 1 ? message.body[1] : nil) : message.body.first
        let badValue: Bool
        if isWrite, case .bytes? = message.body.first { badValue = false } else { badValue = isWrite }
        let badOptions = badValue || !wellTyped(optionsArgument)
        switch result {
        case .success(let admitted):
            precondition(!badOptions, "ill-typed options let in")
            precondition(admitted.access != .read || canRead, "a read of an unreadable attribute let in")
            if case .write(let value) = admitted.access {
                precondition(canWrite, "a write of an unwritable attribute let in")
                precondition(message.body.first == .bytes(value), "the write's value changed")
            }
            if let mtu = admitted.options.mtu { precondition(RequestOptions.mtuRange.contains(mtu), "MTU \(mtu) outside 23...517") }
            precondition((0...Int(UInt16.max)).contains(admitted.options.offset), "an offset outside ATT's range")
        case .failure(let refusal):
            if refusal.name == "org.bluez.Error.InvalidArguments" {
                precondition(badOptions, "well-typed options refused")
            } else {
                precondition(refusal.name == "org.bluez.Error.NotPermitted" && !badOptions, "refused with \(refusal.name)")
                precondition(isWrite ? !canWrite : (member == "ReadValue" && !canRead), "a permitted access refused")
            }
        }
    }

    /// bluetoothd's own rule (gatt-client.c's parse_options, widened to every key it sends):
    /// an a{sv} whose known keys, compared without case, hold their types.
    static func wellTyped(_ options: DBusValue?) -> Bool {
        guard let options else { return true }
        guard case .dictionary(.string, .variant, let entries) = options else { return false }
        let types: [String: String] = ["device": "o", "offset": "q", "mtu": "q", "link": "s", "type": "s", "prepare-authorize": "b"]
        for entry in entries {
            guard case .string(let key) = entry.key, case .variant(let inner) = entry.value, let wanted = types[key.lowercased()] else { continue }
            if inner.type.signature != wanted { return false }
        }
        return true
    }

    static func dbusMessage(_ data: Data) {
        guard let message = try? DBusMessage(wireBytes: data) else { return }
        _ = message.description
        for value in message.body {
            _ = value.description
            _ = try? BlueZShapes.propertyMap(value)
            _ = try? BlueZShapes.interfaceMap(value)
            _ = try? BlueZShapes.managedObjects(value)
            _ = try? BlueZShapes.manufacturerData(value)
            _ = try? BlueZShapes.serviceData(value)
        }
        // What decodes must encode again (the bytes of a reply BleKit would send back).
        _ = try? message.wireBytes()
    }

    static func advertisement(_ data: Data) {
        guard let message = try? DBusMessage(wireBytes: data) else { return }
        for value in message.body {
            guard let properties = try? BlueZShapes.propertyMap(value) else { continue }
            let advertisement = CentralManager.advertisement(from: properties)
            _ = advertisement.dictionary
        }
    }

    /// The first three bytes choose the protocol (first length, later length, maximum).
    static func commandChunks(_ data: Data) {
        guard data.count >= 3 else { return }
        let bytes = [UInt8](data)
        let first = Int(Int8(bitPattern: bytes[0]))
        let then = Int(Int8(bitPattern: bytes[1]))
        let maximum = max(1, Int(bytes[2]))
        let payload = Data(bytes.dropFirst(3))
        let lengths: PeripheralCommandLengthProtocol = first == 0 ? DefaultPeripheralCommandLength(length: then)
            : FirstPeripheralCommandLength(first: first, then: then)
        lengths.reset()
        switch CommandChunker.chunks(of: payload, lengths: lengths, maximum: maximum) {
        case .success(let chunks):
            precondition(chunks.reduce(Data(), +) == payload, "chunks do not add up to the command")
            precondition(chunks.allSatisfy { !$0.isEmpty }, "an empty chunk")
            precondition(payload.count <= maximum || chunks.allSatisfy { $0.count <= maximum }, "a chunk over the maximum")
        case .failure: break
        }
    }

    static func uuid(_ data: Data) {
        let text = String(decoding: data, as: UTF8.self)
        guard let uuid = BluetoothUUID(text) else { return }
        // A parsed UUID's own spellings parse back to it.
        precondition(BluetoothUUID(uuid.uuidString128) == uuid, "128-bit form does not round-trip")
        precondition(BluetoothUUID(uuid.uuidString) == uuid, "short form does not round-trip")
    }
}

extension FuzzTarget {
    /// Well-formed inputs to start from: libdbus refuses nearly every random byte string, so
    /// without them the fuzzer never reaches BleKit's decoding.
    public var seeds: [Data] {
        switch self {
        case .dbusMessage, .advertisement: return Self.messageSeeds
        case .commandChunks: return [Data([0, 20, 20]) + Data(count: 64), Data([3, 5, 20]) + Data(count: 17), Data([0, 1, 1, 9])]
        case .scenario:
            return [Data(#"{"adapters": [{"name": "hci0", "address": "00:AA:01:00:00:00"}], "temporaryTimeout": 30, "peripherals": [{"address": "C0:FF:EE:00:00:01", "name": "x", "rssi": -50, "mtu": 185, "manufacturerData": {"76": "0102"}, "services": [{"uuid": "180d", "characteristics": [{"uuid": "2a37", "flags": ["read", "notify"], "value": "00"}]}], "rules": [{"on": {"write": "2a37", "prefix": "01"}, "then": [{"notify": "2a37", "value": "02"}]}]}], "faults": [{"connect": "C0:FF:EE:00:00:01", "failure": "abortByLocal", "times": 1}, {"notifications": "C0:FF:EE:00:00:01", "dropEvery": 2}]}"#.utf8)]
        case .peripheralRequest: return Self.requestSeeds
        case .peripheralCall: return Self.callSeeds
        case .gatewayCommand: return Self.gatewayCommandSeeds
        case .operationCommands: return Self.operationCommandSeeds
        case .scenarioModel: return FuzzTarget.scenario.seeds + Self.scenarioFiles
        case .commandLine: return Self.commandLineSeeds
        case .uuid: return ["180d", "0000180d-0000-1000-8000-00805f9b34fb", "0x2A37", "12345678", "6e400001-b5a3-f393-e0a9-e50e24dcca9e"].map { Data($0.utf8) }
        }
    }

    /// ReadValue, WriteValue and AcquireNotify as bluetoothd 5.66 sends them to an app.
    static var requestSeeds: [Data] {
        let characteristic: ObjectPath = "/org/blekit/peripheral1/service0/char0"
        let device = DBusValue.objectPath("/org/bluez/hci0/dev_C0_FF_EE_00_00_01")
        let read = BlueZShapes.propertyDictionary([("device", device), ("offset", .uint16(2)), ("mtu", .uint16(185)), ("link", .string("LE"))])
        let write = BlueZShapes.propertyDictionary([("device", device), ("offset", .uint16(1)), ("mtu", .uint16(185)), ("link", .string("LE")),
                                                    ("type", .string("request"))])
        let acquire = BlueZShapes.propertyDictionary([("device", device), ("mtu", .uint16(517)), ("link", .string("LE"))])
        let interface = "org.bluez.GattCharacteristic1"
        let messages: [DBusMessage] = [
            .methodCall(destination: ":1.7", path: characteristic, interface: interface, member: "ReadValue", body: [read]),
            .methodCall(destination: ":1.7", path: characteristic, interface: interface, member: "WriteValue",
                        body: [.bytes(Data([1, 2, 3, 4])), write]),
            .methodCall(destination: ":1.7", path: characteristic, interface: interface, member: "AcquireNotify", body: [acquire]),
        ]
        return messages.compactMap { message in
            var numbered = message
            numbered.serial = 1
            return try? numbered.wireBytes()
        }
    }

    /// The request seeds, each for an attribute that allows everything, reads only and
    /// writes only; and bluetoothd's shapes with a wrong type, a huge MTU and an odd case.
    static var callSeeds: [Data] {
        let characteristic: ObjectPath = "/org/blekit/peripheral1/service0/char0"
        let interface = "org.bluez.GattCharacteristic1"
        let device = DBusValue.objectPath("/org/bluez/hci0/dev_C0_FF_EE_00_00_01")
        let odd: [DBusMessage] = [
            .methodCall(destination: ":1.7", path: characteristic, interface: interface, member: "ReadValue",
                        body: [BlueZShapes.propertyDictionary([("device", device), ("offset", .string("2"))])]),
            .methodCall(destination: ":1.7", path: characteristic, interface: interface, member: "AcquireWrite",
                        body: [BlueZShapes.propertyDictionary([("device", device), ("mtu", .uint16(65535)), ("link", .string("LE"))])]),
            .methodCall(destination: ":1.7", path: characteristic, interface: interface, member: "WriteValue",
                        body: [.bytes(Data([1])), BlueZShapes.propertyDictionary([("MTU", .uint32(0)), ("Type", .string("command"))])]),
        ]
        let extra = odd.compactMap { message -> Data? in
            var numbered = message
            numbered.serial = 1
            return try? numbered.wireBytes()
        }
        return (requestSeeds + extra).flatMap { message in [3, 1, 2].map { Data([$0]) + message } }
    }

    static var messageSeeds: [Data] {
        let device: ObjectPath = "/org/bluez/hci0/dev_C0_FF_EE_00_00_01"
        let properties = BlueZShapes.propertyDictionary([
            ("Address", .string("C0:FF:EE:00:00:01")), ("Name", .string("seed")), ("RSSI", .int16(-50)),
            ("UUIDs", .array(element: .string, [.string("0000180d-0000-1000-8000-00805f9b34fb")])),
            ("ManufacturerData", BlueZShapes.manufacturerDataValue([0x004c: Data([1, 2, 3])])),
            ("ServiceData", BlueZShapes.serviceDataValue(["0000180d-0000-1000-8000-00805f9b34fb": Data([9])])),
            ("TxPower", .int16(4)), ("Connected", .boolean(false)),
        ])
        let interfaces = DBusValue.dictionary(key: .string, value: .dictionary(key: .string, value: .variant),
                                              [DBusDictionaryEntry(key: .string("org.bluez.Device1"), value: properties)])
        let messages: [DBusMessage] = [
            .signal(path: device, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
                    body: [.string("org.bluez.Device1"), properties, .array(element: .string, [.string("RSSI")])]),
            .signal(path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesAdded",
                    body: [.objectPath(device), interfaces]),
            .signal(path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "InterfacesRemoved",
                    body: [.objectPath(device), .array(element: .string, [.string("org.bluez.Device1")])]),
            .signal(path: "/", interface: "org.freedesktop.DBus.ObjectManager", member: "Managed",
                    body: [.dictionary(key: .objectPath, value: .dictionary(key: .string, value: .dictionary(key: .string, value: .variant)),
                                       [DBusDictionaryEntry(key: .objectPath(device), value: interfaces)])]),
        ]
        return messages.compactMap { message in
            var numbered = message
            numbered.serial = 1
            return try? numbered.wireBytes()
        }
    }
}
