import Foundation

/// Bluetooth SIG service data: the Battery service (0x180F, one byte of percent, as Theengs'
/// `ServiceData` model reads it) and Environmental Sensing characteristics advertised as
/// service data under their own UUIDs (0x2A6E temperature, 0x2A6F humidity, 0x2A6D pressure,
/// 0x2A19 battery level), with the SIG characteristics' scales.
public enum SIGServiceDataDecoder {
    /// Decodes the service data of `uuid` (16-bit form); nil for other UUIDs or bad lengths.
    public static func decode(uuid: UInt16, _ data: Data) -> DecodedAdvertisement? {
        let bytes = [UInt8](data)
        func sensor(_ fields: [(String, JSONValue)]) -> DecodedAdvertisement {
            DecodedAdvertisement(brand: "GENERIC", model: "Service data", modelID: "ServiceData", type: "THB", fields: fields)
        }
        switch uuid {
        case 0x180F, 0x2A19:
            guard bytes.count == 1 else { return nil }
            return DecodedAdvertisement(brand: "GENERIC", model: "Service data", modelID: "ServiceData", type: "BATT",
                                        fields: [("batt", .integer(Int(bytes[0])))])
        case 0x2A6E:
            guard bytes.count == 2 else { return nil }
            let raw = Int16(bitPattern: UInt16(bytes[0]) | UInt16(bytes[1]) << 8)
            return sensor([("tempc", .number(BTHomeDecoder.rounded(Double(raw) * 0.01, factor: 0.01)))])
        case 0x2A6F:
            guard bytes.count == 2 else { return nil }
            let raw = UInt16(bytes[0]) | UInt16(bytes[1]) << 8
            return sensor([("hum", .number(BTHomeDecoder.rounded(Double(raw) * 0.01, factor: 0.01)))])
        case 0x2A6D:
            guard bytes.count == 4 else { return nil }
            let raw = bytes.reversed().reduce(0) { $0 << 8 | Int($1) }
            // Pascal with 0.1 resolution, published in hPa as Theengs does.
            return sensor([("pres", .number(BTHomeDecoder.rounded(Double(raw) / 1000, factor: 0.001)))])
        default:
            return nil
        }
    }
}
