import Foundation

/// Who may read or write a local characteristic or descriptor, as CoreBluetooth's
/// `CBAttributePermissions`, plus the authenticated and Secure Connections levels BlueZ offers.
///
/// bluetoothd enforces them before it asks BleKit (a central on a link that is not encrypted
/// gets Insufficient Encryption/Authentication and no request reaches the app).
public struct AttributePermissions: OptionSet, Sendable, Hashable {
    /// The raw bits.
    public let rawValue: UInt
    /// Bits as given.
    public init(rawValue: UInt) { self.rawValue = rawValue }

    /// Readable on any link.
    public static let readable = AttributePermissions(rawValue: 0x01)
    /// Writable on any link.
    public static let writeable = AttributePermissions(rawValue: 0x02)
    /// Readable on an encrypted link (BlueZ `encrypt-read`).
    public static let readEncryptionRequired = AttributePermissions(rawValue: 0x04)
    /// Writable on an encrypted link (BlueZ `encrypt-write`).
    public static let writeEncryptionRequired = AttributePermissions(rawValue: 0x08)
    /// Readable on an encrypted, authenticated (MITM-protected) link (`encrypt-authenticated-read`).
    public static let readAuthenticationRequired = AttributePermissions(rawValue: 0x10)
    /// Writable on an encrypted, authenticated link (`encrypt-authenticated-write`).
    public static let writeAuthenticationRequired = AttributePermissions(rawValue: 0x20)
    /// Readable on a Secure Connections link (`secure-read`).
    public static let readSecureConnectionsRequired = AttributePermissions(rawValue: 0x40)
    /// Writable on a Secure Connections link (`secure-write`).
    public static let writeSecureConnectionsRequired = AttributePermissions(rawValue: 0x80)
    /// Every access asks the app first (BlueZ `authorize`): reads and writes always reach the delegate.
    public static let authorizationRequired = AttributePermissions(rawValue: 0x100)

    /// The BlueZ flag for reading with these permissions, or nil when not readable.
    func readFlag() -> String? {
        if contains(.readSecureConnectionsRequired) { return BlueZ.GattFlag.secureRead }
        if contains(.readAuthenticationRequired) { return BlueZ.GattFlag.encryptAuthenticatedRead }
        if contains(.readEncryptionRequired) { return BlueZ.GattFlag.encryptRead }
        if contains(.readable) { return BlueZ.GattFlag.read }
        return nil
    }

    /// The BlueZ flag for writing with these permissions, or nil when not writable.
    func writeFlag() -> String? {
        if contains(.writeSecureConnectionsRequired) { return BlueZ.GattFlag.secureWrite }
        if contains(.writeAuthenticationRequired) { return BlueZ.GattFlag.encryptAuthenticatedWrite }
        if contains(.writeEncryptionRequired) { return BlueZ.GattFlag.encryptWrite }
        if contains(.writeable) { return BlueZ.GattFlag.write }
        return nil
    }

    /// True when any read permission is set.
    var allowsRead: Bool { readFlag() != nil }
    /// True when any write permission is set.
    var allowsWrite: Bool { writeFlag() != nil }
}
