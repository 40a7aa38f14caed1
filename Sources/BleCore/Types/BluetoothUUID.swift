import BleAssignedNumbers
import Foundation

/// A Bluetooth UUID in its 16-, 32- or 128-bit form; equality is by the 128-bit value.
///
/// `BluetoothUUID("180d")`, `BluetoothUUID("0000180D-0000-1000-8000-00805F9B34FB")` and
/// `BluetoothUUID(UInt16(0x180d))` are equal. BlueZ always spells UUIDs as lowercase 128-bit
/// strings (even the 16-bit service-data keys), so this type is how BleKit compares them.
public struct BluetoothUUID: Hashable, Sendable, CustomStringConvertible {
    /// Why a string is not a UUID.
    public struct ParseError: Error, Equatable, Sendable, CustomStringConvertible {
        /// The rejected text.
        public var text: String
        /// What to write instead.
        public var description: String {
            "'\(text)' is not a Bluetooth UUID: use 4 or 8 hex digits (\"180d\") or the 128-bit form \"0000180d-0000-1000-8000-00805f9b34fb\"."
        }
    }

    /// The 16 bytes of the 128-bit value, big-endian.
    public let bytes: [UInt8]
    /// How many bits the UUID was given with (16, 32 or 128); does not affect equality.
    public let bitWidth: Int

    /// The Bluetooth base UUID `00000000-0000-1000-8000-00805F9B34FB`.
    public static let base = BluetoothUUID(bytes128: [0, 0, 0, 0, 0, 0, 0x10, 0, 0x80, 0, 0, 0x80, 0x5f, 0x9b, 0x34, 0xfb])

    private init(bytes128: [UInt8], bitWidth: Int = 128) {
        bytes = bytes128
        self.bitWidth = bitWidth
    }

    /// A 16-bit assigned number, expanded over the base UUID.
    public init(_ short: UInt16) {
        self.init(UInt32(short))
        self = BluetoothUUID(bytes128: bytes, bitWidth: 16)
    }

    /// A 32-bit assigned number, expanded over the base UUID.
    public init(_ value: UInt32) {
        var expanded = BluetoothUUID.base.bytes
        expanded[0] = UInt8(value >> 24)
        expanded[1] = UInt8((value >> 16) & 0xff)
        expanded[2] = UInt8((value >> 8) & 0xff)
        expanded[3] = UInt8(value & 0xff)
        self.init(bytes128: expanded, bitWidth: 32)
    }

    /// A Foundation UUID as a 128-bit Bluetooth UUID.
    public init(uuid: UUID) {
        let u = uuid.uuid
        self.init(bytes128: [u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15])
    }

    /// Parses 4 or 8 hex digits (optionally `0x`-prefixed) or the 36-character 128-bit form.
    public init(parsing text: String) throws(ParseError) {
        var hex = text.trimmingCharacters(in: .whitespaces).lowercased()
        if hex.hasPrefix("0x") { hex.removeFirst(2) }
        // ASCII only: `Character.isHexDigit` also accepts full-width digits (１８０ｄ), which
        // the integer parsers refuse; that mismatch trapped on outside text (found by
        // BadInputTests, kept in Fuzz/Regressions/uuid).
        let isHex: (String) -> Bool = { !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isHexDigit } }
        switch hex.count {
        case 4 where isHex(hex):
            guard let value = UInt16(hex, radix: 16) else { throw ParseError(text: text) }
            self.init(value)
        case 8 where isHex(hex):
            guard let value = UInt32(hex, radix: 16) else { throw ParseError(text: text) }
            self.init(value)
        case 36:
            let groups = hex.split(separator: "-", omittingEmptySubsequences: false)
            guard groups.map(\.count) == [8, 4, 4, 4, 12], groups.allSatisfy({ isHex(String($0)) }) else {
                throw ParseError(text: text)
            }
            let digits = Array(groups.joined())
            var result: [UInt8] = []
            for index in stride(from: 0, to: 32, by: 2) {
                guard let byte = UInt8(String(digits[index..<index + 2]), radix: 16) else { throw ParseError(text: text) }
                result.append(byte)
            }
            self.init(bytes128: result)
        default:
            throw ParseError(text: text)
        }
    }

    /// Parses like `init(parsing:)`, returning nil for invalid text.
    ///
    /// `BluetoothUUID("FFE")` with a literal calls this one and is nil: the type deliberately
    /// does not conform to `ExpressibleByStringLiteral`, whose initializer would win overload
    /// resolution for `T("literal")` and could only trap on a typo (ported `guard let` code
    /// compiled and crashed).
    public init?(_ text: String) {
        guard let parsed = try? BluetoothUUID(parsing: text) else { return nil }
        self = parsed
    }

    /// CoreBluetooth's spelling: `CBUUID(string:)`. Traps on invalid text, as CoreBluetooth
    /// does (it raises); for text from outside use `BluetoothUUID(_:)` or `init(parsing:)`.
    public init(string: String) {
        do { self = try BluetoothUUID(parsing: string) } catch { preconditionFailure(error.description) }
    }

    /// True when the value lies on the Bluetooth base UUID (so it has a 16- or 32-bit form).
    public var isBased: Bool { Array(bytes[4...]) == Array(BluetoothUUID.base.bytes[4...]) }

    /// The lowercase 128-bit string, as BlueZ spells it.
    public var uuidString128: String {
        let hex = bytes.map { String(format: "%02x", $0) }.joined()
        let c = Array(hex)
        return "\(String(c[0..<8]))-\(String(c[8..<12]))-\(String(c[12..<16]))-\(String(c[16..<20]))-\(String(c[20..<32]))"
    }

    /// The shortest form, uppercase as CoreBluetooth prints it: `180D`, or the 128-bit string.
    public var uuidString: String {
        if isBased && bytes[0] == 0 && bytes[1] == 0 { return String(format: "%02X%02X", bytes[2], bytes[3]) }
        if isBased { return String(format: "%02X%02X%02X%02X", bytes[0], bytes[1], bytes[2], bytes[3]) }
        return uuidString128.uppercased()
    }

    /// The SIG's name for an assigned number, as CoreBluetooth prints a `CBUUID` ("Battery"
    /// for 180F, "Battery Level" for 2A19); else the shortest form (`uuidString`).
    public var description: String { isBased ? AssignedNumbers.shortName(uuidString) ?? uuidString : uuidString }

    /// Equality by the 128-bit value.
    public static func == (lhs: BluetoothUUID, rhs: BluetoothUUID) -> Bool { lhs.bytes == rhs.bytes }
    /// Hashes the 128-bit value.
    public func hash(into hasher: inout Hasher) { hasher.combine(bytes) }
}
