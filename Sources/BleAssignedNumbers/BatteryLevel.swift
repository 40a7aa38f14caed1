/// The Battery Level characteristic (2A19): the charge in percent.
public struct BatteryLevel: Sendable, Equatable, CustomStringConvertible {
    /// The charge, 0…100 %.
    public let percent: Int

    /// Parses the value; nil unless it is one byte within 0…100.
    public init?(_ bytes: [UInt8]) {
        guard bytes.count == 1, bytes[0] <= 100 else { return nil }
        percent = Int(bytes[0])
    }

    /// `"87 %"`.
    public var description: String { "\(percent) %" }
}
