import BleCore
import BleDBus
import BleDSL
import BleSim
import Foundation

/// The inputs from outside that BleKit parses, each as one libFuzzer target: bytes in, and
/// either a typed error or a value out — never a crash, a hang or a broken invariant.
///
/// `make fuzz` runs each under libFuzzer and AddressSanitizer; the inputs that once crashed
/// are kept under Fuzz/Regressions/<target>/ and replayed by BleReliabilityTests in `make test`.
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

    /// Runs one input; a broken invariant traps, which libFuzzer reports as a crash.
    public func run(_ data: Data) {
        switch self {
        case .dbusMessage: Self.dbusMessage(data)
        case .advertisement: Self.advertisement(data)
        case .commandChunks: Self.commandChunks(data)
        case .scenario: _ = try? JSONDecoder().decode(Scenario.self, from: data)
        case .uuid: Self.uuid(data)
        }
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
