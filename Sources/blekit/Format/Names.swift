import BleAssignedNumbers
import BleCore

/// How the CLI names UUIDs, companies and properties: the number and the SIG's name together.
enum Names {
    /// `"180F Battery Service"`, or just the UUID when it has no name.
    static func label(_ uuid: BluetoothUUID, _ kind: AssignedNumbers.Kind) -> String {
        guard let name = name(uuid, kind) else { return uuid.uuidString }
        return "\(uuid.uuidString) \(name)"
    }

    /// The SIG's (or a well-known vendor's) name of the UUID.
    static func name(_ uuid: BluetoothUUID, _ kind: AssignedNumbers.Kind) -> String? {
        AssignedNumbers.name(uuid.uuidString128, preferring: kind)
    }

    /// A short service name for tables: `"Battery"`, else the UUID.
    static func shortService(_ uuid: BluetoothUUID) -> String {
        guard let name = AssignedNumbers.serviceName(uuid.uuidString128) else { return uuid.uuidString }
        return name.hasSuffix(" Service") ? String(name.dropLast(" Service".count)) : name
    }

    /// `"Nordic Semiconductor ASA"`, or `"0x1234"` for an unassigned identifier.
    static func company(_ identifier: UInt16) -> String {
        AssignedNumbers.companyName(identifier) ?? "0x" + hex4(identifier)
    }

    static func hex4(_ value: UInt16) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: 4 - text.count) + text
    }

    /// The properties as BlueZ's flag words: `read, write, notify`.
    static func flags(_ properties: CharacteristicProperties) -> [String] {
        let all: [(CharacteristicProperties, String)] = [
            (.broadcast, "broadcast"), (.read, "read"), (.writeWithoutResponse, "write-without-response"),
            (.write, "write"), (.notify, "notify"), (.indicate, "indicate"),
            (.authenticatedSignedWrites, "authenticated-signed-writes"), (.extendedProperties, "extended-properties"),
            (.reliableWrite, "reliable-write"), (.notifyEncryptionRequired, "notify-encryption-required"),
            (.indicateEncryptionRequired, "indicate-encryption-required"),
        ]
        return all.filter { properties.contains($0.0) }.map(\.1)
    }

    /// Parses a UUID or a SIG name (`"2a19"`, `"Battery Level"`) for a command line.
    static func parseUUID(_ text: String, _ kind: AssignedNumbers.Kind) throws(CLIError) -> BluetoothUUID {
        if let uuid = BluetoothUUID(text) { return uuid }
        if let key = AssignedNumbers.uuid(named: text, kind: kind), let uuid = BluetoothUUID(key) { return uuid }
        throw CLIError("'\(text)' is neither a UUID (2a19, 0000180f-0000-1000-8000-00805f9b34fb) nor the name of a \(kind.rawValue) (\(example(kind))).", .usage)
    }

    /// A name of the kind `parseUUID` takes: "Battery Level" is a characteristic, and as the
    /// example for `scan --service` it sent people the wrong way.
    private static func example(_ kind: AssignedNumbers.Kind) -> String {
        switch kind {
        case .service: return "\"Heart Rate\", \"Battery\""
        case .descriptor: return "\"Client Characteristic Configuration\""
        default: return "\"Battery Level\""
        }
    }
}
