import Foundation

/// Apple iBeacon manufacturer data: company 0x004C, type 0x02, length 0x15, a 16-byte proximity
/// UUID, major and minor (big-endian) and the calibrated TX power at 1 m (signed).
public enum IBeaconDecoder {
    /// Decodes the payload after the company id; nil when it is not an iBeacon.
    public static func decode(company: UInt16, payload: Data) -> DecodedAdvertisement? {
        let bytes = [UInt8](payload)
        guard company == 0x004C, bytes.count == 23, bytes[0] == 0x02, bytes[1] == 0x15 else { return nil }
        let uuid = Data(bytes[2..<18]).lowercaseHex
        let major = Int(bytes[18]) << 8 | Int(bytes[19])
        let minor = Int(bytes[20]) << 8 | Int(bytes[21])
        let power = Int(Int8(bitPattern: bytes[22]))
        return DecodedAdvertisement(brand: "GENERIC", model: "iBeacon", modelID: "IBEACON", type: "BCON",
                                    fields: [("mfid", .string("4c00")), ("uuid", .string(uuid)), ("major", .integer(major)),
                                             ("minor", .integer(minor)), ("txpower", .integer(power))])
    }
}
