extension BlueZ {
    /// bluetoothd's own Device Information PnP ID (the Linux Foundation's USB vendor ID and
    /// BlueZ's product ID), which it serves and which `Modalias` shows for a peer that is BlueZ:
    /// such a server has bluetoothd's quirks (it refuses 511–512-byte single writes).
    public enum PnPID {
        /// Vendor 0x1D6B.
        public static let vendor: UInt16 = 0x1D6B
        /// Product 0x0246.
        public static let product: UInt16 = 0x0246

        /// `Modalias` as bluetoothd spells a PnP ID: `usb:vVVVVpPPPPdDDDD` for vendor ID source 2,
        /// `bluetooth:…` for source 1; nil for another source.
        public static func modalias(source: UInt8, vendor: UInt16, product: UInt16, version: UInt16) -> String? {
            let prefix: String
            switch source {
            case 1: prefix = "bluetooth"
            case 2: prefix = "usb"
            default: return nil
            }
            return prefix + ":v" + hex(vendor) + "p" + hex(product) + "d" + hex(version)
        }

        /// True when `modalias` names BlueZ's own vendor and product (any version, either source).
        public static func isBlueZ(modalias: String) -> Bool {
            let text = modalias.uppercased()
            let identity = "V" + hex(vendor) + "P" + hex(product)
            return text.hasPrefix("USB:" + identity) || text.hasPrefix("BLUETOOTH:" + identity)
        }

        private static func hex(_ value: UInt16) -> String {
            let digits = String(value, radix: 16, uppercase: true)
            return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        }
    }
}
