/// Header names (bus, interface, member) that passed validation recently, so the same names
/// sent again are not walked byte by byte each time.
///
/// A connection sends a few names over and over (`org.bluez`, `org.bluez.GattCharacteristic1`,
/// `WriteValue`), usually the same string constants, which compare equal by identity. Owned by
/// one connection, used on its loop.
struct ValidatedNames {
    enum Kind {
        case busName
        case interface
        case member
        case errorName
    }

    /// How many names are kept.
    static let capacity = 8

    private var entries: [(kind: Kind, name: String)] = []
    private var nextSlot = 0

    init() {}

    /// True when `name` is a valid name of `kind`; remembers valid ones.
    mutating func isValid(_ name: String, as kind: Kind) -> Bool {
        for entry in entries where entry.kind == kind && entry.name == name { return true }
        let valid: Bool
        switch kind {
        case .busName: valid = DBusNames.isValidBusName(name)
        case .interface: valid = DBusNames.isValidInterface(name)
        case .member: valid = DBusNames.isValidMember(name)
        case .errorName: valid = DBusNames.isValidErrorName(name)
        }
        // Long names are rare and cost more to compare than to check.
        guard valid, name.utf8.count <= 64 else { return valid }
        if entries.count < Self.capacity {
            entries.append((kind, name))
        } else {
            entries[nextSlot] = (kind, name)
            nextSlot = (nextSlot + 1) % Self.capacity
        }
        return true
    }
}
