import Foundation

/// Builds BTHome v2 service data (bthome.io/format) from readings in Theengs' key names, the
/// inverse of `BTHomeDecoder`: an unencrypted, regularly sent frame (device information 0x40),
/// objects in ascending id order, each value divided by its factor and written little-endian.
public enum BTHomeEncoder {
    /// Why readings cannot be encoded.
    public struct EncodingError: Error, CustomStringConvertible, Sendable {
        /// What is wrong.
        public var description: String
    }

    /// The object id BleKit writes for each key: the most precise of BTHome's ids for it.
    static let preferred: [String: UInt8] = [
        "packet": 0x00, "batt": 0x01, "tempc": 0x02, "hum": 0x03, "pres": 0x04, "lux": 0x05, "weight": 0x06,
        "dewpoint": 0x08, "count": 0x09, "energy": 0x0A, "power": 0x0B, "volt": 0x0C, "pm25": 0x0D, "pm10": 0x0E,
        "co2": 0x12, "tvoc": 0x13, "moist": 0x14, "motion": 0x21, "door": 0x1A, "window": 0x2D, "open": 0x11,
        "current": 0x43, "uv": 0x46,
    ]

    /// The keys `encode` accepts.
    public static var keys: [String] { preferred.keys.sorted() }

    /// Encodes `readings`; a key BTHome has no object for, or a value out of the object's range, is an error.
    public static func encode(_ readings: [(key: String, value: Double)]) throws(EncodingError) -> Data {
        var objects: [(id: UInt8, bytes: [UInt8])] = []
        for (key, value) in readings {
            guard let id = preferred[key], let object = BTHomeDecoder.objects[id] else {
                throw EncodingError(description: "BTHome has no object for '\(key)' (known: \(keys.joined(separator: ", ")))")
            }
            let scaled = (value / object.factor).rounded()
            let bits = 8 * object.size
            let range: ClosedRange<Double> = object.signed
                ? -pow(2, Double(bits - 1))...(pow(2, Double(bits - 1)) - 1)
                : 0...(pow(2, Double(bits)) - 1)
            guard value.isFinite, range.contains(scaled) else {
                throw EncodingError(description: "\(key)=\(value) does not fit BTHome object 0x\(String(id, radix: 16)) (\(object.size) bytes, factor \(object.factor))")
            }
            let raw = UInt64(bitPattern: Int64(scaled))
            objects.append((id, (0..<object.size).map { UInt8(truncatingIfNeeded: raw >> (8 * UInt64($0))) }))
        }
        var data = Data([0x40])
        // Receivers require ascending ids (the format says so; bthome-ble warns otherwise).
        for object in objects.sorted(by: { $0.id < $1.id }) {
            data.append(object.id)
            data.append(contentsOf: object.bytes)
        }
        return data
    }

    /// Parses `tempc=21.5,hum=40` into readings.
    public static func parse(_ text: String) throws(EncodingError) -> [(key: String, value: Double)] {
        var readings: [(key: String, value: Double)] = []
        for part in text.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, let value = Double(pair[1]) else {
                throw EncodingError(description: "'\(part)' is not KEY=NUMBER")
            }
            readings.append((pair[0], value))
        }
        return readings
    }
}
