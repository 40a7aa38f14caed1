import BleDBus
import Foundation

/// A read or write of a local characteristic by a central, as CoreBluetooth's `CBATTRequest`.
///
/// Answer it once with `PeripheralManager.respond(to:withResult:)`; for a read, set `value`
/// (the bytes from `offset` on) first. A request not answered within
/// `PeripheralManagerOptions.requestTimeout` is answered for you with ATT's Unlikely Error,
/// so the central is never left waiting. Writes that came through an `AcquireWrite` socket
/// (write without response) need no answer: `needsResponse` is false.
///
/// Long values: a long read arrives as one request per chunk, each with its `offset` (answer
/// with the bytes from there); a long (prepared) write arrives, once the central executes it,
/// as one request per prepared chunk with its offset, in order.
public final class ATTRequest: Sendable, CustomStringConvertible {
    /// Which central asked.
    public let central: Central
    /// The characteristic read or written.
    public let characteristic: MutableCharacteristic
    /// Where in the value the access starts (long reads and long writes).
    public let offset: Int
    /// The bytes written, or (for a read) the bytes to answer with.
    public var value: Data? {
        get { state.value }
        set { state.value = newValue }
    }
    /// The link's ATT MTU as bluetoothd passed it.
    public let mtu: Int
    /// The transport (`LE`), as bluetoothd passed it.
    public let link: String
    /// False for a write command that came through an acquired socket: there is nobody to answer.
    public let needsResponse: Bool
    private let state: Locked<Data?>
    /// The D-Bus call to answer (loop side).
    let call: LoopBound<IncomingCall?>
    /// True once answered (loop side).
    @BleLoop var answered = false
    @BleLoop var deadline: LoopTimer?
    let isRead: Bool

    init(central: Central, characteristic: MutableCharacteristic, offset: Int, value: Data?, mtu: Int, link: String,
         needsResponse: Bool, isRead: Bool, call: IncomingCall?) {
        self.central = central
        self.characteristic = characteristic
        self.offset = offset
        self.mtu = mtu
        self.link = link
        self.needsResponse = needsResponse
        self.isRead = isRead
        self.call = LoopBound(call)
        state = Locked(value)
    }

    /// `read/write of <uuid> at <offset> by <central>`.
    public var description: String {
        "\(isRead ? "read" : "write") of \(characteristic.uuid) at \(offset) by \(central.address)"
    }
}

/// How a request is answered: `.success`, or an ATT error (CoreBluetooth's `CBATTError.Code`
/// spellings work: `.invalidOffset`, `.insufficientAuthorization`, …).
public enum ATTResult: Sendable, Equatable {
    /// The access succeeded.
    case success
    /// The access failed with this ATT error.
    case failure(AttError)

    /// Read Not Permitted (0x02).
    public static var readNotPermitted: ATTResult { .failure(.readNotPermitted) }
    /// Write Not Permitted (0x03).
    public static var writeNotPermitted: ATTResult { .failure(.writeNotPermitted) }
    /// Request Not Supported (0x06).
    public static var requestNotSupported: ATTResult { .failure(.requestNotSupported) }
    /// Invalid Offset (0x07).
    public static var invalidOffset: ATTResult { .failure(.invalidOffset) }
    /// Insufficient Authorization (0x08).
    public static var insufficientAuthorization: ATTResult { .failure(.insufficientAuthorization) }
    /// Invalid Attribute Value Length (0x0d).
    public static var invalidAttributeValueLength: ATTResult { .failure(.invalidAttributeValueLength) }
    /// Unlikely Error (0x0e).
    public static var unlikelyError: ATTResult { .failure(.unlikelyError) }

    // The rest of CoreBluetooth's `CBATTError.Code`, so that every iOS `respond(to:withResult:)`
    // compiles. bluetoothd 5.66 passes none of these on from an app: the central gets
    // Unlikely Error (0x0e) for each, as `dbusError(isRead:)` says.

    /// Invalid Handle (0x01); reaches the central as Unlikely Error.
    public static var invalidHandle: ATTResult { .failure(.invalidHandle) }
    /// Invalid PDU (0x04); reaches the central as Unlikely Error.
    public static var invalidPdu: ATTResult { .failure(.invalidPDU) }
    /// Insufficient Authentication (0x05); reaches the central as Unlikely Error (bluetoothd
    /// checks authentication itself, from the permissions).
    public static var insufficientAuthentication: ATTResult { .failure(.insufficientAuthentication) }
    /// Prepare Queue Full (0x09); reaches the central as Unlikely Error.
    public static var prepareQueueFull: ATTResult { .failure(.prepareQueueFull) }
    /// Attribute Not Found (0x0a); reaches the central as Unlikely Error.
    public static var attributeNotFound: ATTResult { .failure(.attributeNotFound) }
    /// Attribute Not Long (0x0b); reaches the central as Unlikely Error.
    public static var attributeNotLong: ATTResult { .failure(.attributeNotLong) }
    /// Insufficient Encryption Key Size (0x0c); reaches the central as Unlikely Error.
    public static var insufficientEncryptionKeySize: ATTResult { .failure(.insufficientEncryptionKeySize) }
    /// Insufficient Encryption (0x0f); reaches the central as Unlikely Error (bluetoothd checks
    /// encryption itself, from the permissions).
    public static var insufficientEncryption: ATTResult { .failure(.insufficientEncryption) }
    /// Unsupported Group Type (0x10); reaches the central as Unlikely Error.
    public static var unsupportedGroupType: ATTResult { .failure(.unsupportedGroupType) }
    /// Insufficient Resources (0x11); reaches the central as Unlikely Error.
    public static var insufficientResources: ATTResult { .failure(.insufficientResources) }

    /// The D-Bus error that makes bluetoothd 5.66 send this ATT error, or nil for success.
    ///
    /// bluetoothd maps only some errors from the app: `NotPermitted` (read or write not
    /// permitted), `InvalidOffset`, `InvalidValueLength`, `NotAuthorized` (insufficient
    /// authorization), `NotSupported` (request not supported) and `Failed` with a message
    /// `0x80`…`0x9f` (an application error). Anything else reaches the central as Unlikely
    /// Error (0x0e); encryption and authentication errors come from bluetoothd's own checks of
    /// the permissions, never from the app.
    func dbusError(isRead: Bool) -> (name: String, message: String)? {
        guard case .failure(let error) = self else { return nil }
        switch error {
        case .readNotPermitted: return (BlueZ.ErrorName.notPermitted, BlueZ.ErrorMessage.readNotPermitted)
        case .writeNotPermitted: return (BlueZ.ErrorName.notPermitted, BlueZ.ErrorMessage.writeNotPermitted)
        case .invalidOffset: return (BlueZ.ErrorName.invalidOffset, BlueZ.ErrorMessage.invalidOffset)
        case .invalidAttributeValueLength: return (BlueZ.ErrorName.invalidValueLength, "Invalid value length")
        case .insufficientAuthorization: return (BlueZ.ErrorName.notAuthorized, BlueZ.ErrorMessage.notAuthorized)
        case .requestNotSupported: return (BlueZ.ErrorName.notSupported, BlueZ.ErrorMessage.notSupported)
        default:
            let code = error.code
            if (0x80...0x9f).contains(code) { return (BlueZ.ErrorName.failed, String(format: "0x%02x", code)) }
            if error != .unlikelyError {
                BleLog.warning("ATT error \(error) cannot be sent through bluetoothd 5.66; the central gets Unlikely Error (0x0e)")
            }
            return (BlueZ.ErrorName.failed, "0x0e")
        }
    }
}
