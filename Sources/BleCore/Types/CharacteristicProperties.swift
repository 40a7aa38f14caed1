/// What a characteristic supports, as CoreBluetooth's `CBCharacteristicProperties`, read from
/// BlueZ's `Flags` strings.
public struct CharacteristicProperties: OptionSet, Sendable, Hashable {
    /// The bits (CoreBluetooth's values).
    public let rawValue: UInt
    /// Properties from raw bits.
    public init(rawValue: UInt) { self.rawValue = rawValue }

    /// Set when BlueZ's `Flags` contain `broadcast`.
    public static let broadcast = CharacteristicProperties(rawValue: 0x01)
    /// Set when BlueZ's `Flags` contain `read`.
    public static let read = CharacteristicProperties(rawValue: 0x02)
    /// Set when BlueZ's `Flags` contain `write-without-response`.
    public static let writeWithoutResponse = CharacteristicProperties(rawValue: 0x04)
    /// Set when BlueZ's `Flags` contain `write`.
    public static let write = CharacteristicProperties(rawValue: 0x08)
    /// Set when BlueZ's `Flags` contain `notify`.
    public static let notify = CharacteristicProperties(rawValue: 0x10)
    /// Set when BlueZ's `Flags` contain `indicate`.
    public static let indicate = CharacteristicProperties(rawValue: 0x20)
    /// Set when BlueZ's `Flags` contain `authenticated-signed-writes`.
    public static let authenticatedSignedWrites = CharacteristicProperties(rawValue: 0x40)
    /// Set when BlueZ's `Flags` contain `extended-properties`.
    public static let extendedProperties = CharacteristicProperties(rawValue: 0x80)
    /// `encrypt-*` / `secure-*` notify.
    public static let notifyEncryptionRequired = CharacteristicProperties(rawValue: 0x100)
    /// `encrypt-*` / `secure-*` indicate.
    public static let indicateEncryptionRequired = CharacteristicProperties(rawValue: 0x200)
    /// `reliable-write` (BlueZ-only flag; no CoreBluetooth equivalent).
    public static let reliableWrite = CharacteristicProperties(rawValue: 0x1000)

    /// Maps BlueZ `Flags` (`["read", "notify", …]`).
    public init(bluezFlags flags: [String]) {
        typealias Flag = BlueZ.GattFlag
        var result: CharacteristicProperties = []
        for flag in flags {
            switch flag {
            case Flag.broadcast: result.insert(.broadcast)
            case Flag.read: result.insert(.read)
            case Flag.writeWithoutResponse: result.insert(.writeWithoutResponse)
            case Flag.write: result.insert(.write)
            case Flag.notify: result.insert(.notify)
            case Flag.indicate: result.insert(.indicate)
            case Flag.authenticatedSignedWrites: result.insert(.authenticatedSignedWrites)
            case Flag.extendedProperties: result.insert(.extendedProperties)
            case Flag.reliableWrite: result.insert(.reliableWrite)
            case Flag.encryptNotify, Flag.encryptAuthenticatedNotify, Flag.secureNotify: result.insert(.notifyEncryptionRequired)
            case Flag.encryptIndicate, Flag.encryptAuthenticatedIndicate, Flag.secureIndicate: result.insert(.indicateEncryptionRequired)
            default: break
            }
        }
        self = result
    }
}

/// How a characteristic value is written, as CoreBluetooth's `CBCharacteristicWriteType`.
public enum CharacteristicWriteType: Int, Sendable {
    /// A Write Request: `didWriteValueFor` reports the peripheral's answer (BlueZ `type: request`).
    case withResponse = 0
    /// A Write Command (BlueZ `type: command`, or the `AcquireWrite` socket): no answer; obey
    /// `canSendWriteWithoutResponse`.
    case withoutResponse = 1
    /// A reliable (prepare + execute) write (BlueZ `type: reliable`); BlueZ-only.
    case reliable = 2
}
