import BlueZVocabulary
/// An ATT protocol error a peripheral answers with, and how bluetoothd reports it on D-Bus
/// (`create_gatt_dbus_error` in 5.66).
public enum AttError: Error, Sendable, Equatable {
    /// 0x02
    case readNotPermitted
    /// 0x03
    case writeNotPermitted
    /// 0x05
    case insufficientAuthentication
    /// 0x06
    case requestNotSupported
    /// 0x07
    case invalidOffset
    /// 0x08
    case insufficientAuthorization
    /// 0x0d
    case invalidAttributeValueLength
    /// 0x0f
    case insufficientEncryption
    /// Any other code, e.g. 0x0e (unlikely error) or an application error 0x80–0x9f.
    case other(UInt8)

    /// The ATT error code.
    public var code: UInt8 {
        switch self {
        case .readNotPermitted: return 0x02
        case .writeNotPermitted: return 0x03
        case .insufficientAuthentication: return 0x05
        case .requestNotSupported: return 0x06
        case .invalidOffset: return 0x07
        case .insufficientAuthorization: return 0x08
        case .invalidAttributeValueLength: return 0x0d
        case .insufficientEncryption: return 0x0f
        case .other(let code): return code
        }
    }

    /// The error for a code.
    public init(code: UInt8) {
        switch code {
        case 0x02: self = .readNotPermitted
        case 0x03: self = .writeNotPermitted
        case 0x05: self = .insufficientAuthentication
        case 0x06: self = .requestNotSupported
        case 0x07: self = .invalidOffset
        case 0x08: self = .insufficientAuthorization
        case 0x0d: self = .invalidAttributeValueLength
        case 0x0f: self = .insufficientEncryption
        default: self = .other(code)
        }
    }

    /// The D-Bus error name and message a BlueZ client receives.
    var dbusError: (name: String, message: String) {
        switch self {
        case .readNotPermitted: return (BlueZ.ErrorName.notPermitted, BlueZ.ErrorMessage.readNotPermitted)
        case .writeNotPermitted: return (BlueZ.ErrorName.notPermitted, BlueZ.ErrorMessage.writeNotPermitted)
        case .insufficientAuthentication, .insufficientEncryption: return (BlueZ.ErrorName.notPermitted, BlueZ.ErrorMessage.notPaired)
        case .invalidOffset: return (BlueZ.ErrorName.invalidArguments, BlueZ.ErrorMessage.invalidOffset)
        case .invalidAttributeValueLength: return (BlueZ.ErrorName.invalidArguments, BlueZ.ErrorMessage.invalidLength)
        case .insufficientAuthorization: return (BlueZ.ErrorName.notAuthorized, BlueZ.ErrorMessage.notAuthorized)
        case .requestNotSupported: return (BlueZ.ErrorName.notSupported, BlueZ.ErrorMessage.notSupported)
        case .other(let code):
            return (BlueZ.ErrorName.failed, BlueZ.ErrorMessage.attError(code))
        }
    }

}
