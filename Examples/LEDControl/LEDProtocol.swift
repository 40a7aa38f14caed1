import BleCore

/// The LED device of seed 000: one service with the LED's state, 0x00 off and 0x01 on;
/// writing it switches the LED, and subscribers hear every change.
enum LEDProtocol {
    static let service = CBUUID(string: "FF10")
    static let state = CBUUID(string: "FF11")
    static let name = "BleKit-LED"

    static func describe(_ value: UInt8?) -> String {
        switch value {
        case 0x00?: return "off"
        case 0x01?: return "on"
        case let other?: return "0x\(String(other, radix: 16))"
        case nil: return "(no value)"
        }
    }
}
