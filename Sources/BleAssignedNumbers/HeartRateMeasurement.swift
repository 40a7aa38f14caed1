/// The Heart Rate Measurement characteristic (2A37), as a heart rate sensor notifies it.
public struct HeartRateMeasurement: Sendable, Equatable, CustomStringConvertible {
    /// Whether the sensor touches the skin, when it can tell.
    public enum SensorContact: Sendable, Equatable {
        /// The sensor cannot detect contact.
        case notSupported
        /// Supported, and the sensor is not in contact.
        case notDetected
        /// Supported, and the sensor is in contact.
        case detected
    }

    /// Beats per minute.
    public let beatsPerMinute: Int
    /// Skin contact, as the flags report it.
    public let sensorContact: SensorContact
    /// Energy expended since the last reset, in kilojoules, when present.
    public let energyExpended: Int?
    /// The RR intervals (time between beats) in seconds, oldest first.
    public let rrIntervals: [Double]

    /// Parses the value; nil when it is shorter than its flags promise.
    public init?(_ bytes: [UInt8]) {
        guard let flags = bytes.first else { return nil }
        var index = 1
        func uint16() -> Int? {
            guard index + 1 < bytes.count else { return nil }
            defer { index += 2 }
            return Int(bytes[index]) | Int(bytes[index + 1]) << 8
        }
        if flags & 0x01 != 0 {
            guard let value = uint16() else { return nil }
            beatsPerMinute = value
        } else {
            guard index < bytes.count else { return nil }
            beatsPerMinute = Int(bytes[index])
            index += 1
        }
        switch (flags >> 1) & 0x03 {
        case 0x03: sensorContact = .detected
        case 0x02: sensorContact = .notDetected
        default: sensorContact = .notSupported
        }
        if flags & 0x08 != 0 {
            guard let value = uint16() else { return nil }
            energyExpended = value
        } else {
            energyExpended = nil
        }
        var intervals: [Double] = []
        if flags & 0x10 != 0 {
            while index < bytes.count {
                guard let value = uint16() else { return nil }
                intervals.append(Double(value) / 1024)
            }
        }
        rrIntervals = intervals
    }

    /// `"72 bpm, contact detected, RR 0.83 s"`.
    public var description: String {
        var parts = ["\(beatsPerMinute) bpm"]
        switch sensorContact {
        case .detected: parts.append("contact detected")
        case .notDetected: parts.append("no contact")
        case .notSupported: break
        }
        if let energyExpended { parts.append("\(energyExpended) kJ") }
        if !rrIntervals.isEmpty {
            parts.append("RR " + rrIntervals.map { String(Double(Int(($0 * 100).rounded())) / 100) + " s" }.joined(separator: " "))
        }
        return parts.joined(separator: ", ")
    }
}
