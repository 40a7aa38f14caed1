import BleDBus
import BlueZVocabulary
import Foundation

/// Everything that can go wrong in BleKit's central role, as cases a caller can switch on.
/// Each `description` says what happened and what to do.
public enum BleError: Error, Equatable, Sendable, CustomStringConvertible {
    // MARK: org.bluez.Error.*
    /// `org.bluez.Error.Failed` with a message that is neither a connection reason nor an ATT error.
    case failed(String)
    /// `org.bluez.Error.InProgress`: another operation of the same kind is pending in bluetoothd.
    case inProgress
    /// `org.bluez.Error.NotReady`: the adapter is off or rfkill-blocked.
    case notReady
    /// `org.bluez.Error.NotAuthorized`
    case notAuthorized(String)
    /// `org.bluez.Error.NotPermitted` (e.g. "Read not permitted", "Notify acquired").
    case notPermitted(String)
    /// `org.bluez.Error.NotSupported`
    case notSupported
    /// `org.bluez.Error.InvalidArguments` (e.g. "Invalid Length", "Invalid offset").
    case invalidArguments(String)
    /// `org.bluez.Error.InvalidValueLength`
    case invalidValueLength
    /// `org.bluez.Error.InvalidOffset`
    case invalidOffset
    /// `org.bluez.Error.AlreadyConnected`
    case alreadyConnected
    /// `org.bluez.Error.NotConnected`, or `Failed "Not connected"`.
    case notConnected
    /// `org.bluez.Error.AlreadyExists`
    case alreadyExists
    /// `org.bluez.Error.DoesNotExist`
    case doesNotExist
    /// `org.bluez.Error.AuthenticationFailed`
    case authenticationFailed
    /// `org.bluez.Error.AuthenticationCanceled`
    case authenticationCanceled
    /// `org.bluez.Error.AuthenticationRejected`
    case authenticationRejected
    /// `org.bluez.Error.AuthenticationTimeout`
    case authenticationTimeout
    /// `org.bluez.Error.ConnectionAttemptFailed`
    case connectionAttemptFailed
    /// `org.bluez.Error.NotAvailable`
    case notAvailable
    /// `org.bluez.Error.Busy` (5.66 sends it with an empty message for a racing `Set Powered`).
    case busy
    /// `org.bluez.Error.ImproperlyConfigured`
    case improperlyConfigured
    /// `org.bluez.Error.BREDR.ProfileUnavailable`
    case profileUnavailable
    /// Another `org.bluez.Error.*` name this version of BleKit does not know.
    case bluez(name: String, message: String)

    // MARK: Connection and ATT
    /// `Failed "le-connection-…"` / `"br-connection-…"`: why bluetoothd could not connect.
    case connectionFailed(ConnectionFailureReason)
    /// `Failed "Operation failed with ATT error: 0x.."` or an ATT-derived BlueZ error: the peripheral refused.
    case att(AttError)

    // MARK: D-Bus
    /// The system bus cannot be reached.
    case noBus(String)
    /// The D-Bus policy refuses this process access to bluetoothd.
    case accessDenied(String)
    /// bluetoothd is not on the bus (`ServiceUnknown`, or activation failed).
    case serviceUnknown(String)
    /// No answer before the operation's deadline (bleak #691: BlueZ may never answer).
    case timeout(operation: String)
    /// Any other D-Bus failure.
    case dbus(String)

    // MARK: BleKit
    /// The link dropped (or `cancelPeripheralConnection` was called) while the operation was pending.
    case disconnected
    /// BlueZ no longer knows the device: unpaired devices expire TemporaryTimeout after their last
    /// advertisement (bleak #1176), which ends in `UnknownObject`.
    case deviceGone(address: String)
    /// `connect` did not complete within its timeout; BleKit called Disconnect to cancel it.
    case connectionTimeout
    /// bluetoothd left the bus (restart, crash); pending work was abandoned.
    case bluetoothRestarted
    /// The adapter is not powered or not present.
    case poweredOff
    /// A service the caller needs is not in the resolved GATT tree.
    case serviceNotFound(BluetoothUUID)
    /// The object (service, characteristic, descriptor) is no longer exported by BlueZ.
    case attributeGone
    /// The peripheral is not connected, so the operation was not sent.
    case peripheralNotConnected
    /// The characteristic does not support what was asked (e.g. notify without the notify flag).
    case operationNotSupported(String)
    /// The manager was released or the operation was superseded.
    case cancelled
    /// The `CentralManager` was released while the operation was pending; keep the manager
    /// alive for as long as its peripherals are used.
    case managerReleased
    /// BlueZ (or whatever owns `org.bluez`) answered with a reply of the wrong shape.
    case unexpectedReply(operation: String, detail: String)
    /// The value is longer than one write can carry on this link; it was not sent.
    case valueTooLong(length: Int, maximum: Int)
    /// The operation waited in BleKit's own queue (behind `ahead` earlier operations on the
    /// same attribute) past `CentralManagerOptions.queueTimeout` and was never sent.
    case queuedTooLong(operation: String, ahead: Int)
    /// `PeripheralManager.add(_:)` cannot serve the service as it is, and published nothing:
    /// `detail` says what is wrong (a characteristic or descriptor that is not mutable, an
    /// included service that was not added first).
    case invalidLocalAttribute(String)

    /// Maps a D-Bus failure from a BlueZ call. `address` names the device for `deviceGone`.
    static func from(_ error: DBusError, operation: String, address: String? = nil) -> BleError {
        switch error {
        case .remote(let name, let message):
            return fromRemote(name: name, message: message, address: address)
        case .timeout:
            return .timeout(operation: operation)
        case .disconnected:
            return .noBus("the D-Bus connection closed")
        case .cannotConnect(_, let detail):
            return .noBus(detail)
        case .noSessionBus:
            return .noBus(error.description)
        case .cancelled:
            return .cancelled
        default:
            return .dbus(bounded(error.description))
        }
    }

    /// Maps a D-Bus error reply by name.
    static func fromRemote(name: String, message: String, address: String? = nil) -> BleError {
        let text = Self.bounded(message).trimmingCharacters(in: .whitespacesAndNewlines)
        if let att = AttError.parse(text) { return .att(att) }
        switch name {
        case BlueZ.ErrorName.failed:
            if let parsed = ConnectionFailureReason.parse(text) { return .connectionFailed(parsed.reason) }
            if text == BlueZ.ErrorMessage.notConnected { return .notConnected }
            return .failed(text)
        case BlueZ.ErrorName.inProgress: return .inProgress
        case BlueZ.ErrorName.notReady: return .notReady
        case BlueZ.ErrorName.notAuthorized: return .notAuthorized(text)
        case BlueZ.ErrorName.notPermitted:
            switch text {
            case BlueZ.ErrorMessage.readNotPermitted: return .att(.readNotPermitted)
            case BlueZ.ErrorMessage.writeNotPermitted: return .att(.writeNotPermitted)
            default: return .notPermitted(text)
            }
        case BlueZ.ErrorName.notSupported: return .notSupported
        case BlueZ.ErrorName.invalidArguments:
            switch text {
            case BlueZ.ErrorMessage.invalidLength: return .att(.invalidAttributeValueLength)
            case BlueZ.ErrorMessage.invalidOffset: return .att(.invalidOffset)
            default: return .invalidArguments(text)
            }
        case BlueZ.ErrorName.invalidValueLength: return .invalidValueLength
        case BlueZ.ErrorName.invalidOffset: return .invalidOffset
        case BlueZ.ErrorName.alreadyConnected: return .alreadyConnected
        case BlueZ.ErrorName.notConnected: return .notConnected
        case BlueZ.ErrorName.alreadyExists: return .alreadyExists
        case BlueZ.ErrorName.doesNotExist: return .doesNotExist
        case BlueZ.ErrorName.authenticationFailed: return .authenticationFailed
        case BlueZ.ErrorName.authenticationCanceled: return .authenticationCanceled
        case BlueZ.ErrorName.authenticationRejected: return .authenticationRejected
        case BlueZ.ErrorName.authenticationTimeout: return .authenticationTimeout
        case BlueZ.ErrorName.connectionAttemptFailed: return .connectionAttemptFailed
        case BlueZ.ErrorName.notAvailable: return .notAvailable
        case BlueZ.ErrorName.busy: return .busy
        case BlueZ.ErrorName.improperlyConfigured: return .improperlyConfigured
        case BlueZ.ErrorName.profileUnavailable: return .profileUnavailable
        case FreedesktopDBus.ErrorName.unknownObject, FreedesktopDBus.ErrorName.unknownMethod:
            // A removed device's path answers UnknownObject (observed, with a trailing newline).
            if let address { return .deviceGone(address: address) }
            return .attributeGone
        case FreedesktopDBus.ErrorName.accessDenied: return .accessDenied(text)
        case FreedesktopDBus.ErrorName.serviceUnknown, FreedesktopDBus.ErrorName.nameHasNoOwner,
             FreedesktopDBus.ErrorName.spawnChildExited:
            // Without systemd, a call to an unowned org.bluez tries D-Bus activation and fails
            // with Spawn.ChildExited (observed), not ServiceUnknown.
            return .serviceUnknown(text)
        case FreedesktopDBus.ErrorName.noReply where text.hasPrefix(FreedesktopDBus.ErrorMessage.recipientDisconnected):
            // dbus-daemon's answer for every call bluetoothd held when it died (SIGKILL, crash):
            // not a timeout, and known at once (a pairing waited for its deadline otherwise).
            return .bluetoothRestarted
        case FreedesktopDBus.ErrorName.noReply, FreedesktopDBus.ErrorName.timeout, FreedesktopDBus.ErrorName.timedOut:
            return .timeout(operation: text)
        default:
            if name.hasPrefix(BlueZ.ErrorName.prefix) { return .bluez(name: name, message: text) }
            return .dbus(text.isEmpty ? name : "\(name): \(text)")
        }
    }

    /// The longest error text kept from a reply: a peer may send megabytes, which would then be
    /// copied into every error and log line.
    static let maximumTextLength = 512

    static func bounded(_ text: String) -> String {
        guard text.utf8.count > maximumTextLength else { return text }
        return String(text.prefix(maximumTextLength)) + "… (\(text.utf8.count) bytes in all)"
    }

    /// True for errors worth retrying the same request after a pause.
    public var isTransient: Bool {
        switch self {
        case .inProgress, .busy: return true
        case .connectionFailed(let reason): return reason.isTransient
        default: return false
        }
    }

    /// What happened and what to do.
    public var description: String {
        switch self {
        case .failed(let text): return "BlueZ reported a failure (\(text)). Retry; if it persists, check `journalctl -u bluetooth`."
        case .inProgress: return "BlueZ is still busy with an earlier request of this kind (InProgress). Wait for it to end, or disconnect and retry."
        case .notReady: return "The Bluetooth adapter is not ready (powered off or rfkill-blocked). Power it on (`bluetoothctl power on`, `rfkill unblock bluetooth`)."
        case .notAuthorized(let text): return "BlueZ refused: not authorized (\(text)). Pair with the device or run with the needed permissions."
        case .notPermitted(let text): return "BlueZ does not permit this (\(text)). Release the acquired socket or use another operation."
        case .notSupported: return "The device or BlueZ does not support this operation; check the characteristic's properties."
        case .invalidArguments(let text): return "BlueZ rejected the arguments (\(text)). Check value length and offset."
        case .invalidValueLength: return "The value has an invalid length for this attribute; send fewer bytes."
        case .invalidOffset: return "The offset is beyond the attribute's value."
        case .alreadyConnected: return "The device is already connected."
        case .notConnected: return "The device is not connected; connect it first."
        case .alreadyExists: return "It already exists (e.g. the device is already paired)."
        case .doesNotExist: return "BlueZ does not know it (e.g. no such device or pairing)."
        case .authenticationFailed: return "Authentication failed. Register a pairing agent, or remove the bond on both sides and pair again."
        case .authenticationCanceled: return "Authentication was cancelled."
        case .authenticationRejected: return "The device rejected authentication."
        case .authenticationTimeout: return "Authentication timed out; keep the device close and awake, then retry."
        case .connectionAttemptFailed: return "The connection attempt failed; make sure the device is advertising and retry."
        case .notAvailable: return "Not available on this adapter or device."
        case .busy: return "BlueZ is busy with a conflicting request (e.g. another power change). Retry shortly."
        case .improperlyConfigured: return "The attribute is improperly configured on the peripheral (e.g. CCCD missing)."
        case .profileUnavailable: return "The BR/EDR profile is unavailable on this device."
        case .bluez(let name, let message): return "BlueZ error \(name): \(message)"
        case .connectionFailed(let reason):
            switch reason {
            case .abortByLocal: return "The connection was aborted locally (le-connection-abort-by-local), often radio interference or a device that stopped advertising. Retry; move the device closer."
            case .canceled: return "The connection attempt was cancelled."
            default: return "The connection failed (\(reason.rawValue)). \(reason.isTransient ? "Retry after a pause." : "Check the device and adapter.")"
            }
        case .att(let att): return "The peripheral answered with an ATT error: \(att). Check permissions (pairing/encryption) and value length."
        case .noBus(let detail): return "Cannot reach the D-Bus system bus (\(detail)). Check that dbus-daemon runs and DBUS_SYSTEM_BUS_ADDRESS points to it."
        case .accessDenied(let detail): return "The D-Bus policy denies this user access to bluetoothd (\(detail)). Add the user to the 'bluetooth' group (`sudo usermod -aG bluetooth $USER`, then log in again) or allow it in /etc/dbus-1/system.d/bluetooth.conf."
        case .serviceUnknown(let detail): return "bluetoothd is not running on the bus (\(detail)). Start it: `sudo systemctl start bluetooth`."
        case .timeout(let operation): return "No answer to \(operation) before its deadline; the device or BlueZ is stuck. Retry, or disconnect and reconnect."
        case .dbus(let detail): return "D-Bus failure: \(detail)"
        case .disconnected: return "The peripheral disconnected before the operation finished. Reconnect and retry."
        case .deviceGone(let address): return "Device \(address) was not found: BlueZ removed it, probably TemporaryTimeout after scanning stopped. Scan again, then connect promptly."
        case .connectionTimeout: return "The connection did not complete in time (the attempt was cancelled). Make sure the device advertises and is in range, then retry."
        case .bluetoothRestarted: return "bluetoothd stopped or restarted; the operation was abandoned. BleKit reconnects to the new daemon automatically; retry when the state is poweredOn."
        case .poweredOff: return "The Bluetooth adapter is off or absent. Power it on and wait for state poweredOn."
        case .serviceNotFound(let uuid): return "Service \(uuid) is not in the device's GATT database. Check the UUID, or remove the device to clear BlueZ's GATT cache."
        case .attributeGone: return "The attribute is no longer exported by BlueZ (the device's GATT tree changed or it disconnected). Discover services again."
        case .peripheralNotConnected: return "The peripheral is not connected; connect it before using its attributes."
        case .operationNotSupported(let text): return "Not supported by this attribute: \(text)."
        case .cancelled: return "The operation was cancelled."
        case .managerReleased: return "The CentralManager was released while this was pending. Keep a strong reference to the manager while you use its peripherals."
        case .unexpectedReply(let operation, let detail): return "\(operation) got a reply of the wrong shape (\(detail)); the process owning org.bluez is not behaving like bluetoothd. Check which process owns org.bluez (`busctl status org.bluez`)."
        case .valueTooLong(let length, let maximum): return "The value is \(length) bytes but one write on this link carries at most \(maximum) (maximumWriteValueLength). Split it, or use a command with a length protocol; nothing was sent."
        case .invalidLocalAttribute(let detail): return "The service was not published: \(detail). Build services from MutableService, MutableCharacteristic and MutableDescriptor, and add included services before the services that include them."
        case .queuedTooLong(let operation, let ahead): return "\(operation) waited in BleKit's own queue behind \(ahead) earlier operations on the same attribute and was never sent; BlueZ answered everything it was sent. Issue fewer concurrent operations on one attribute, or raise CentralManagerOptions.queueTimeout."
        }
    }
}
