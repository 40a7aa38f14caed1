import Foundation

/// Google Eddystone service data (UUID 0xFEAA): UID (0x00), URL (0x10) and TLM (0x20) frames,
/// as the Eddystone protocol specification lays them out (big-endian fields).
public enum EddystoneDecoder {
    /// The 16-bit service UUID.
    public static let serviceUUID: UInt16 = 0xFEAA

    private static let schemes = ["http://www.", "https://www.", "http://", "https://"]
    private static let expansions = [".com/", ".org/", ".edu/", ".net/", ".info/", ".biz/", ".gov/",
                                     ".com", ".org", ".edu", ".net", ".info", ".biz", ".gov"]

    /// Decodes one frame; nil for unknown or truncated frames.
    public static func decode(_ data: Data) -> DecodedAdvertisement? {
        let bytes = [UInt8](data)
        guard let frame = bytes.first else { return nil }
        switch frame {
        case 0x00:
            guard bytes.count >= 18 else { return nil }
            return DecodedAdvertisement(brand: "GENERIC", model: "Eddystone UID", modelID: "EDDYSTONE_UID", type: "BCON",
                                        fields: [("txpower", .integer(Int(Int8(bitPattern: bytes[1])))),
                                                 ("namespace", .string(Data(bytes[2..<12]).lowercaseHex)),
                                                 ("instance", .string(Data(bytes[12..<18]).lowercaseHex))])
        case 0x10:
            guard bytes.count >= 3, Int(bytes[2]) < schemes.count else { return nil }
            var url = schemes[Int(bytes[2])]
            for byte in bytes[3...] {
                if Int(byte) < expansions.count {
                    url += expansions[Int(byte)]
                } else if byte > 0x20 && byte < 0x7F {
                    url.unicodeScalars.append(Unicode.Scalar(byte))
                } else {
                    return nil
                }
            }
            return DecodedAdvertisement(brand: "GENERIC", model: "Eddystone URL", modelID: "EDDYSTONE_URL", type: "BCON",
                                        fields: [("txpower", .integer(Int(Int8(bitPattern: bytes[1])))), ("url", .string(url))])
        case 0x20:
            guard bytes.count >= 14, bytes[1] == 0x00 else { return nil }
            var result = DecodedAdvertisement(brand: "GENERIC", model: "Eddystone TLM", modelID: "EDDYSTONE_TLM", type: "BCON", fields: [])
            let millivolts = Int(bytes[2]) << 8 | Int(bytes[3])
            if millivolts != 0 { result.add("volt", .number(Double(millivolts) / 1000)) }
            let temperature = Int16(bitPattern: UInt16(bytes[4]) << 8 | UInt16(bytes[5]))
            // 0x8000 means "not supported"; the value is signed 8.8 fixed point.
            if temperature != Int16.min { result.add("tempc", .number(BTHomeDecoder.rounded(Double(temperature) / 256, factor: 0.01))) }
            let count = bytes[6..<10].reduce(0) { $0 << 8 | Int($1) }
            let uptime = bytes[10..<14].reduce(0) { $0 << 8 | Int($1) }
            result.add("count", .integer(count))
            result.add("uptime", .number(Double(uptime) / 10))
            return result
        default:
            return nil
        }
    }
}
