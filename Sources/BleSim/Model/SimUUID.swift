import BleDBus
import BlueZVocabulary
import Foundation

/// Bluetooth UUID text handling as bluetoothd does it: 16- and 32-bit forms expand onto the
/// Bluetooth base UUID, and everything is exported as lower-case 128-bit text.
public enum SimUUID {
    static let baseSuffix = "-0000-1000-8000-00805f9b34fb"

    /// The lower-case 128-bit form of `text`, or nil when it is not a UUID.
    public static func full(_ text: String) -> String? {
        var value = text.lowercased()
        if value.hasPrefix("0x") { value.removeFirst(2) }
        let hex = CharacterSet(charactersIn: "0123456789abcdef")
        if value.count == 4 || value.count == 8, value.unicodeScalars.allSatisfy(hex.contains) {
            return String(repeating: "0", count: 8 - value.count) + value + baseSuffix
        }
        guard value.count == 36, UUID(uuidString: value) != nil else { return nil }
        return value
    }

    /// The 16-bit number when `text` is on the base UUID.
    public static func short(_ text: String) -> UInt16? {
        guard let full = full(text), full.hasSuffix(baseSuffix), full.hasPrefix("0000") else { return nil }
        return UInt16(full.dropFirst(4).prefix(4), radix: 16)
    }
}

/// Bluetooth device address text.
public enum SimAddress {
    /// `AA:BB:CC:DD:EE:FF`, any case.
    public static func isValid(_ text: String) -> Bool {
        BlueZ.Paths.isAddress(text)
    }

    /// `dev_AA_BB_CC_DD_EE_FF`, bluetoothd's object path element.
    public static func pathElement(_ address: String) -> String {
        BlueZ.Paths.deviceElement(address: address) ?? "dev_" + address.uppercased().replacingOccurrences(of: ":", with: "_")
    }
}

extension ObjectPath {
    /// A path the simulator assembles from parts it validated (adapter names, addresses,
    /// handles); should one still be invalid, it is reported and replaced rather than trapping.
    init(built text: String) {
        if let path = try? ObjectPath(text) {
            self = path
        } else {
            DBusLog.warning("BleSim built an invalid object path '\(text)'")
            self = "/org/bluez/invalid"
        }
    }
}
