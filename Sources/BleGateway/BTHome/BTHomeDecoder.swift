import Foundation

/// BTHome v2 service data (UUID 0xFCD2, bthome.io/format): a device-information byte, then
/// object id + value pairs in ascending id order, little-endian, scaled by each id's factor.
public enum BTHomeDecoder {
    /// The 16-bit service UUID BTHome advertises under.
    public static let serviceUUID: UInt16 = 0xFCD2

    /// How one object id is laid out.
    struct Object {
        var key: String
        var size: Int
        var signed: Bool
        var factor: Double
    }

    /// Object ids with a fixed size; a frame with an id not listed here cannot be walked past it
    /// (the format carries no lengths), so decoding stops there and keeps what it read.
    static let objects: [UInt8: Object] = {
        var table: [UInt8: Object] = [:]
        func add(_ id: UInt8, _ key: String, _ size: Int, signed: Bool = false, _ factor: Double = 1) {
            table[id] = Object(key: key, size: size, signed: signed, factor: factor)
        }
        add(0x00, "packet", 1)
        add(0x01, "batt", 1)
        add(0x02, "tempc", 2, signed: true, 0.01)
        add(0x03, "hum", 2, 0.01)
        add(0x04, "pres", 3, 0.01)
        add(0x05, "lux", 3, 0.01)
        add(0x06, "weight", 2, 0.01)
        add(0x07, "weight_lb", 2, 0.01)
        add(0x08, "dewpoint", 2, signed: true, 0.01)
        add(0x09, "count", 1)
        add(0x0A, "energy", 3, 0.001)
        add(0x0B, "power", 3, 0.01)
        add(0x0C, "volt", 2, 0.001)
        add(0x0D, "pm25", 2)
        add(0x0E, "pm10", 2)
        let binary: [(UInt8, String)] = [
            (0x0F, "generic"), (0x10, "power_on"), (0x11, "open"), (0x15, "batt_low"), (0x16, "charging"), (0x17, "co"),
            (0x18, "cold"), (0x19, "connectivity"), (0x1A, "door"), (0x1B, "garage_door"), (0x1C, "gas_detected"),
            (0x1D, "heat"), (0x1E, "light"), (0x1F, "lock"), (0x20, "wet"), (0x21, "motion"), (0x22, "moving"),
            (0x23, "occupancy"), (0x24, "plug"), (0x25, "presence"), (0x26, "problem"), (0x27, "running"),
            (0x28, "safety"), (0x29, "smoke"), (0x2A, "sound"), (0x2B, "tamper"), (0x2C, "vibration"), (0x2D, "window"),
        ]
        for (id, key) in binary { add(id, key, 1) }
        add(0x12, "co2", 2)
        add(0x13, "tvoc", 2)
        add(0x14, "moist", 2, 0.01)
        add(0x2E, "hum", 1)
        add(0x2F, "moist", 1)
        add(0x3A, "button", 1)
        add(0x3C, "dimmer", 2)
        add(0x3D, "count", 2)
        add(0x3E, "count", 4)
        add(0x3F, "rotation", 2, signed: true, 0.1)
        add(0x40, "distance_mm", 2)
        add(0x41, "distance", 2, 0.1)
        add(0x42, "duration", 3, 0.001)
        add(0x43, "current", 2, 0.001)
        add(0x44, "speed", 2, 0.01)
        add(0x45, "tempc", 2, signed: true, 0.1)
        add(0x46, "uv", 1, 0.1)
        add(0x47, "volume", 2, 0.1)
        add(0x48, "volume_ml", 2)
        add(0x49, "flow", 2, 0.001)
        add(0x4A, "volt", 2, 0.1)
        add(0x4B, "gas", 3, 0.001)
        add(0x4C, "gas", 4, 0.001)
        add(0x4D, "energy", 4, 0.001)
        add(0x4E, "volume", 4, 0.001)
        add(0x4F, "water", 4, 0.001)
        add(0x50, "timestamp", 4)
        add(0x51, "acceleration", 2, 0.001)
        add(0x52, "gyroscope", 2, 0.001)
        add(0x55, "volume_storage", 4, 0.001)
        add(0x56, "conductivity", 2)
        add(0x57, "tempc", 1, signed: true)
        add(0x58, "tempc", 1, signed: true, 0.35)
        add(0x59, "count", 1, signed: true)
        add(0x5A, "count", 2, signed: true)
        add(0x5B, "count", 4, signed: true)
        add(0x5C, "power", 4, signed: true, 0.01)
        add(0x5D, "current", 2, signed: true, 0.001)
        add(0x5E, "direction", 2, 0.01)
        add(0x5F, "precipitation", 2, 0.1)
        add(0x60, "channel", 1)
        add(0x61, "rotational_speed", 2)
        return table
    }()

    /// Decodes a BTHome v2 frame; nil when it is not one (other version, too short).
    public static func decode(_ data: Data) -> DecodedAdvertisement? {
        let bytes = [UInt8](data)
        guard let info = bytes.first, info >> 5 == 2 else { return nil }
        var result = DecodedAdvertisement(brand: "GENERIC", model: "BTHome v2", modelID: "BTHome_V2", type: "THB", fields: [])
        if info & 0x01 != 0 {
            // Encrypted (AES-CCM with a per-device key the gateway does not have): say so, decode nothing.
            result.add("encr", .integer(1))
            return result
        }
        if info & 0x04 != 0 { result.add("trigger", .bool(true)) }
        var index = 1
        while index < bytes.count {
            let id = bytes[index]
            index += 1
            if id == 0x53 || id == 0x54 {
                guard index < bytes.count else { break }
                let length = Int(bytes[index])
                index += 1
                guard index + length <= bytes.count else { break }
                let payload = Data(bytes[index..<(index + length)])
                result.add(id == 0x53 ? "text" : "raw", .string(id == 0x53 ? String(decoding: payload, as: UTF8.self) : payload.lowercaseHex))
                index += length
                continue
            }
            guard let object = objects[id], index + object.size <= bytes.count else { break }
            var raw: UInt64 = 0
            for offset in 0..<object.size { raw |= UInt64(bytes[index + offset]) << (8 * UInt64(offset)) }
            index += object.size
            var value = Int64(bitPattern: raw)
            if object.signed && object.size < 8 {
                let shift = UInt64(64 - 8 * object.size)
                value = Int64(bitPattern: raw << shift) >> Int64(shift)
            }
            if object.factor == 1 {
                result.add(object.key, .integer(Int(value)))
            } else {
                result.add(object.key, .number(rounded(Double(value) * object.factor, factor: object.factor)))
            }
        }
        return result
    }

    /// Removes binary noise (23.93 not 23.930000000000003) at the factor's precision.
    /// A factor with no precision to round at (0, NaN, ∞: an operation command's `"scale": 0`
    /// once made `-log10` infinite, and `Int` of it trapped) leaves the value as it is, and so
    /// does one too small for a finite power of ten (below 1e-308).
    static func rounded(_ value: Double, factor: Double) -> Double {
        guard factor.isFinite, factor > 0 else { return value }
        // At most 324 (the smallest subnormal's -log10, rounded up): a whole number that fits.
        let digits = max(0, Int((-log10(factor)).rounded(.up)))
        let scale = pow(10, Double(digits))
        guard scale.isFinite, (value * scale).isFinite else { return value }
        return (value * scale).rounded() / scale
    }
}
