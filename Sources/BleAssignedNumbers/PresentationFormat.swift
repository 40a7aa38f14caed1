/// The Characteristic Presentation Format descriptor (2904): how to show a characteristic's value.
public struct PresentationFormat: Sendable, Equatable, CustomStringConvertible {
    /// The value's format (0x04 uint8, 0x06 uint16, 0x0E sint16, 0x14 float32, 0x19 UTF-8 string…).
    public let format: UInt8
    /// The base-10 exponent: the shown value is `raw × 10^exponent`.
    public let exponent: Int8
    /// The unit, an assigned number (0x27AD percentage, 0x272F degree Celsius…).
    public let unit: UInt16
    /// The namespace of `descriptionCode` (1: Bluetooth SIG).
    public let namespace: UInt8
    /// The description code within `namespace`.
    public let descriptionCode: UInt16

    /// Parses the 7-byte value; nil for any other length.
    public init?(_ bytes: [UInt8]) {
        guard bytes.count == 7 else { return nil }
        format = bytes[0]
        exponent = Int8(bitPattern: bytes[1])
        unit = UInt16(bytes[2]) | UInt16(bytes[3]) << 8
        namespace = bytes[4]
        descriptionCode = UInt16(bytes[5]) | UInt16(bytes[6]) << 8
    }

    /// The format's name in the Assigned Numbers, if it is one of the common ones.
    public var formatName: String? {
        let names: [UInt8: String] = [0x01: "boolean", 0x04: "uint8", 0x06: "uint16", 0x08: "uint32", 0x0A: "uint64",
                                      0x0C: "sint8", 0x0E: "sint16", 0x10: "sint32", 0x12: "sint64", 0x14: "float32",
                                      0x15: "float64", 0x16: "medfloat16", 0x17: "medfloat32", 0x19: "utf8s", 0x1A: "utf16s",
                                      0x1B: "struct"]
        return names[format]
    }

    /// `"uint8, exponent 0, unit 0x27AD"`.
    public var description: String {
        let hexUnit = String(unit, radix: 16, uppercase: true)
        return "\(formatName ?? "format 0x" + String(format, radix: 16)), exponent \(exponent), unit 0x\(String(repeating: "0", count: max(0, 4 - hexUnit.count)) + hexUnit)"
    }
}
