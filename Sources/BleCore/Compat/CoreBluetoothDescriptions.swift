import BlueZVocabulary
import Foundation

// `print(peripheral)` and `"\(error.localizedDescription)"` are how iOS code looks at things;
// these print in CoreBluetooth's shape (`<CBPeripheral: 0x…, identifier = …, name = …>`) under
// BleKit's type names, and errors' localized descriptions say what their descriptions say.

/// `0x…`: the object's address, as CoreBluetooth prints it.
private func pointer(of object: AnyObject) -> String {
    "0x" + String(UInt(bitPattern: Unmanaged.passUnretained(object).toOpaque()), radix: 16)
}

/// CoreBluetooth's rendering of a value: `{length = 4, bytes = 0xaa010055}`, or `(null)`.
private func render(_ data: Data?) -> String {
    guard let data else { return "(null)" }
    let bytes = data.prefix(24).map { String(format: "%02x", $0) }.joined()
    return "{length = \(data.count), bytes = 0x\(bytes)\(data.count > 24 ? "…" : "")}"
}

extension Peripheral: CustomStringConvertible {
    /// `<Peripheral: 0x…, identifier = …, name = …, mtu = …, state = connected>`
    public var description: String {
        let (name, mtu, state) = LoopBridge.sync { (self.deviceProperties?[BlueZ.Device1.name] ?? self.lastName, self.negotiatedMTU, self.currentState) }
        return "<Peripheral: \(pointer(of: self)), identifier = \(identifier.uuidString), name = \(name ?? "(null)"), mtu = \(mtu), state = \(state)>"
    }
}

extension Service: CustomStringConvertible {
    /// `<Service: 0x…, isPrimary = YES, UUID = FFE0>`
    public var description: String {
        "<Service: \(pointer(of: self)), isPrimary = \(isPrimary ? "YES" : "NO"), UUID = \(uuid)>"
    }
}

extension Characteristic: CustomStringConvertible {
    /// `<Characteristic: 0x…, UUID = FFE1, properties = 0xC [writeWithoutResponse, write], value = (null), notifying = NO>`
    public var description: String {
        let (value, notifying) = LoopBridge.sync { (self.cachedValue, self.isNotifyingOnLoop) }
        return "<Characteristic: \(pointer(of: self)), UUID = \(uuid), properties = 0x\(String(properties.rawValue, radix: 16, uppercase: true)) \(properties), value = \(render(value)), notifying = \(notifying ? "YES" : "NO")>"
    }
}

extension Descriptor: CustomStringConvertible {
    /// `<Descriptor: 0x…, UUID = 2902, value = …>`
    public var description: String {
        let value = LoopBridge.sync { self.cachedValue }
        return "<Descriptor: \(pointer(of: self)), UUID = \(uuid), value = \(render(value))>"
    }
}

extension CharacteristicProperties: CustomStringConvertible {
    /// The set's members by name: `[read, notify]` (not `rawValue: 18`).
    public var description: String {
        let names: [(CharacteristicProperties, String)] = [
            (.broadcast, "broadcast"), (.read, "read"), (.writeWithoutResponse, "writeWithoutResponse"), (.write, "write"),
            (.notify, "notify"), (.indicate, "indicate"), (.authenticatedSignedWrites, "authenticatedSignedWrites"),
            (.extendedProperties, "extendedProperties"), (.notifyEncryptionRequired, "notifyEncryptionRequired"),
            (.indicateEncryptionRequired, "indicateEncryptionRequired"), (.reliableWrite, "reliableWrite"),
        ]
        var rest = self
        var parts: [String] = []
        for (member, name) in names where contains(member) {
            parts.append(name)
            rest.remove(member)
        }
        if !rest.isEmpty { parts.append("0x" + String(rest.rawValue, radix: 16)) }
        return "[" + parts.joined(separator: ", ") + "]"
    }
}

extension BleError: LocalizedError {
    /// `description`: `error.localizedDescription` says what happened and what to do, instead
    /// of Foundation's "The operation could not be completed".
    public var errorDescription: String? { description }
}

extension AttError: LocalizedError {
    /// `description`, for `error.localizedDescription`.
    public var errorDescription: String? { description }
}
