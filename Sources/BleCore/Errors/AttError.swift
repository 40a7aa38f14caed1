/// An ATT protocol error code (Core spec Vol 3 Part F 3.4.1.1), parsed from BlueZ's text
/// `"Operation failed with ATT error: 0x0e"` (BlueZ only gives the code as text; bleak #1075).
public enum AttError: Equatable, Hashable, Sendable, CustomStringConvertible {
    /// 0x01
    case invalidHandle
    /// 0x02
    case readNotPermitted
    /// 0x03
    case writeNotPermitted
    /// 0x04
    case invalidPDU
    /// 0x05
    case insufficientAuthentication
    /// 0x06
    case requestNotSupported
    /// 0x07
    case invalidOffset
    /// 0x08
    case insufficientAuthorization
    /// 0x09
    case prepareQueueFull
    /// 0x0a
    case attributeNotFound
    /// 0x0b
    case attributeNotLong
    /// 0x0c
    case insufficientEncryptionKeySize
    /// 0x0d
    case invalidAttributeValueLength
    /// 0x0e
    case unlikelyError
    /// 0x0f
    case insufficientEncryption
    /// 0x10
    case unsupportedGroupType
    /// 0x11
    case insufficientResources
    /// 0x80–0x9f: defined by the peripheral's application.
    case application(UInt8)
    /// Any other code (reserved or profile-defined, 0xe0–0xff).
    case other(UInt8)

    /// The code from its byte.
    public init(code: UInt8) {
        let known: [UInt8: AttError] = [0x01: .invalidHandle, 0x02: .readNotPermitted, 0x03: .writeNotPermitted, 0x04: .invalidPDU,
                                        0x05: .insufficientAuthentication, 0x06: .requestNotSupported, 0x07: .invalidOffset,
                                        0x08: .insufficientAuthorization, 0x09: .prepareQueueFull, 0x0a: .attributeNotFound,
                                        0x0b: .attributeNotLong, 0x0c: .insufficientEncryptionKeySize,
                                        0x0d: .invalidAttributeValueLength, 0x0e: .unlikelyError, 0x0f: .insufficientEncryption,
                                        0x10: .unsupportedGroupType, 0x11: .insufficientResources]
        if let value = known[code] { self = value } else if (0x80...0x9f).contains(code) { self = .application(code) } else { self = .other(code) }
    }

    /// The code byte.
    public var code: UInt8 {
        switch self {
        case .invalidHandle: return 0x01
        case .readNotPermitted: return 0x02
        case .writeNotPermitted: return 0x03
        case .invalidPDU: return 0x04
        case .insufficientAuthentication: return 0x05
        case .requestNotSupported: return 0x06
        case .invalidOffset: return 0x07
        case .insufficientAuthorization: return 0x08
        case .prepareQueueFull: return 0x09
        case .attributeNotFound: return 0x0a
        case .attributeNotLong: return 0x0b
        case .insufficientEncryptionKeySize: return 0x0c
        case .invalidAttributeValueLength: return 0x0d
        case .unlikelyError: return 0x0e
        case .insufficientEncryption: return 0x0f
        case .unsupportedGroupType: return 0x10
        case .insufficientResources: return 0x11
        case .application(let code), .other(let code): return code
        }
    }

    /// Finds `ATT error: 0x..` in a BlueZ error message.
    static func parse(_ message: String) -> AttError? {
        guard let range = message.range(of: BlueZ.ErrorMessage.attErrorMarker) else { return nil }
        let digits = message[range.upperBound...].prefix { $0.isHexDigit }
        guard !digits.isEmpty, let code = UInt8(digits, radix: 16) else { return nil }
        return AttError(code: code)
    }

    /// The name and code.
    public var description: String {
        let hex = "0x" + (code < 0x10 ? "0" : "") + String(code, radix: 16)
        switch self {
        case .application: return "application error \(hex)"
        case .other: return "ATT error \(hex)"
        default:
            let names: [UInt8: String] = [0x01: "invalid handle", 0x02: "read not permitted", 0x03: "write not permitted",
                                          0x04: "invalid PDU", 0x05: "insufficient authentication", 0x06: "request not supported",
                                          0x07: "invalid offset", 0x08: "insufficient authorization", 0x09: "prepare queue full",
                                          0x0a: "attribute not found", 0x0b: "attribute not long",
                                          0x0c: "insufficient encryption key size", 0x0d: "invalid attribute value length",
                                          0x0e: "unlikely error", 0x0f: "insufficient encryption", 0x10: "unsupported group type",
                                          0x11: "insufficient resources"]
            return "\(names[code] ?? "ATT error") (\(hex))"
        }
    }
}
