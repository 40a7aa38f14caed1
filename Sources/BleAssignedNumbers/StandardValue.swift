/// Reads the values of the common standard characteristics and descriptors as text, for
/// tools that show a value without knowing the device (`blekit read`, `blekit gatt`).
public enum StandardValue {
    /// The characteristic's value as text, when the UUID is one BleKit knows how to read
    /// (battery level, heart rate measurement, PnP ID, the Device Information strings, the
    /// device name and appearance); nil otherwise or when the value is malformed.
    public static func describe(characteristic uuid: String, value: [UInt8]) -> String? {
        switch AssignedNumbers.key(uuid) {
        case "2a19": return BatteryLevel(value)?.description
        case "2a37": return HeartRateMeasurement(value)?.description
        case "2a50": return PnPID(value)?.description
        case "2a01":
            guard value.count == 2 else { return nil }
            let appearance = UInt16(value[0]) | UInt16(value[1]) << 8
            return AssignedNumbers.appearanceName(appearance) ?? "appearance 0x\(String(appearance, radix: 16))"
        case "2a00", "2a24", "2a25", "2a26", "2a27", "2a28", "2a29": return text(value)
        default: return nil
        }
    }

    /// The descriptor's value as text, for the user description (2901), the client
    /// configuration (2902) and the presentation format (2904).
    public static func describe(descriptor uuid: String, value: [UInt8]) -> String? {
        switch AssignedNumbers.key(uuid) {
        case "2901": return text(value)
        case "2902":
            guard value.count == 2 else { return nil }
            let bits = value[0]
            let on = [bits & 1 != 0 ? "notifications" : nil, bits & 2 != 0 ? "indications" : nil].compactMap { $0 }
            return on.isEmpty ? "off" : on.joined(separator: " and ") + " on"
        case "2904": return PresentationFormat(value)?.description
        default: return nil
        }
    }

    private static func text(_ value: [UInt8]) -> String? {
        let trimmed = value.last == 0 ? Array(value.dropLast()) : value
        guard let text = String(validating: trimmed, as: UTF8.self), !text.contains(where: { $0.isNewline }) else { return nil }
        return "\"\(text)\""
    }
}
