/// The PnP ID characteristic (2A50) of the Device Information service: who made the device.
public struct PnPID: Sendable, Equatable, CustomStringConvertible {
    /// Where `vendorID` is assigned.
    public enum VendorIDSource: Sendable, Equatable {
        /// A Bluetooth SIG company identifier.
        case bluetoothSIG
        /// A USB Implementers Forum vendor ID.
        case usb
        /// A value the specification reserves.
        case reserved(UInt8)
    }

    /// The authority of `vendorID`.
    public let vendorIDSource: VendorIDSource
    /// The vendor.
    public let vendorID: UInt16
    /// The vendor's product.
    public let productID: UInt16
    /// The product's version (0xJJMN: major JJ, minor M, sub-minor N).
    public let productVersion: UInt16

    /// Parses the 7-byte value; nil for any other length.
    public init?(_ bytes: [UInt8]) {
        guard bytes.count == 7 else { return nil }
        switch bytes[0] {
        case 1: vendorIDSource = .bluetoothSIG
        case 2: vendorIDSource = .usb
        default: vendorIDSource = .reserved(bytes[0])
        }
        vendorID = UInt16(bytes[1]) | UInt16(bytes[2]) << 8
        productID = UInt16(bytes[3]) | UInt16(bytes[4]) << 8
        productVersion = UInt16(bytes[5]) | UInt16(bytes[6]) << 8
    }

    /// The vendor's name, when the source is the Bluetooth SIG and the company is known.
    public var vendorName: String? {
        vendorIDSource == .bluetoothSIG ? AssignedNumbers.companyName(vendorID) : nil
    }

    /// `"vendor 0x1D6B (Linux Foundation), product 0x0246, version 5.66"` style.
    public var description: String {
        let source: String
        switch vendorIDSource {
        case .bluetoothSIG: source = "Bluetooth SIG"
        case .usb: source = "USB"
        case .reserved(let value): source = "source \(value)"
        }
        let name = vendorName.map { " (\($0))" } ?? ""
        let major = productVersion >> 8, minor = (productVersion >> 4) & 0x0f, sub = productVersion & 0x0f
        return "\(source) vendor 0x\(Self.hex(vendorID))\(name), product 0x\(Self.hex(productID)), version \(major).\(minor).\(sub)"
    }

    private static func hex(_ value: UInt16) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - text.count)) + text
    }
}
