import BleCore
import Foundation

/// Why a BleAsync call failed (FXBlueToothAsync's error, with the failed operation and BleKit's
/// underlying `BleError`). Cancellation is never one of these: a cancelled call ends with
/// `CancellationError`, so it cannot be mistaken for a timeout (FXBlueToothAsync defect 28).
public enum AsyncBleClientError: Error, LocalizedError, CustomStringConvertible, Sendable {
    /// The call that failed.
    public enum Operation: String, Sendable {
        /// Waiting for the adapter (`getState`).
        case state
        /// A scan (`scan`, `discoveries`).
        case scan
        /// `connect`.
        case connect
        /// `disconnect`.
        case disconnect
        /// `discover(serviceUUIDs:)`.
        case discoverServices
        /// `discover(characteristicUUIDs:for:)`.
        case discoverCharacteristics
        /// `discoverDescriptors(for:)`.
        case discoverDescriptors
        /// `discover(includedServiceUUIDs:for:)`.
        case discoverIncludedServices
        /// `read(for:)`.
        case readValue
        /// `write(_:to:type:)`.
        case writeValue
        /// `notifications(for:)`, `subscribe(to:)`.
        case notifications
        /// `readRSSI()`.
        case readRSSI
        /// `execute(_:)`, `responses(to:)`.
        case execute
        /// The peripheral role (requests, `updateValue`).
        case peripheralRole
        /// `pair()`.
        case pair

        /// The operation's name in messages.
        var label: String {
            switch self {
            case .state: return "waiting for Bluetooth"
            case .scan: return "scan"
            case .connect: return "connect"
            case .disconnect: return "disconnect"
            case .discoverServices: return "service discovery"
            case .discoverCharacteristics: return "characteristic discovery"
            case .discoverDescriptors: return "descriptor discovery"
            case .discoverIncludedServices: return "included service discovery"
            case .readValue: return "read"
            case .writeValue: return "write"
            case .notifications: return "notifications"
            case .readRSSI: return "RSSI read"
            case .execute: return "command"
            case .peripheralRole: return "peripheral role"
            case .pair: return "pairing"
            }
        }
    }

    /// The adapter is in `state` (off, missing, not allowed) — not a transitional state, which
    /// is waited out (FXBlueToothAsync defect 30).
    case bluetoothUnavailable(CBManagerState)
    /// Kept so that code matching it still compiles; BleAsync never throws it: calls of any
    /// kind may run at the same time.
    case busy
    /// The operation did not end within the timeout given to it. BleKit cancelled what it could
    /// in BlueZ (a connect attempt is ended with `Disconnect`).
    case timeout(Operation)
    /// No peripheral with this identifier is known to the adapter.
    case peripheralNotFound(UUID)
    /// The call cannot run now (`detail` says why).
    case invalidState(String)
    /// The connection attempt failed; `error` is BlueZ's reason.
    case connectFailed(CBPeripheral, BleError?)
    /// BlueZ (or BleKit) refused or failed the operation.
    case operationFailed(Operation, BleError)
    /// The link dropped (`error` nil: the app disconnected) or bluetoothd went away: the
    /// streams of this peripheral end with this, and so do its pending calls.
    case disconnected(CBPeripheral, BleError?)
    /// `stopScan()`, or the scan handler returned `.stop`, before a peripheral was chosen.
    case scanStopped

    /// The underlying `BleError`, when there is one.
    public var bleError: BleError? {
        switch self {
        case .connectFailed(_, let error), .disconnected(_, let error): return error
        case .operationFailed(_, let error): return error
        default: return nil
        }
    }

    /// The failed operation, when known.
    public var operation: Operation? {
        switch self {
        case .timeout(let operation), .operationFailed(let operation, _): return operation
        case .connectFailed: return .connect
        case .scanStopped: return .scan
        default: return nil
        }
    }

    var isTimeout: Bool {
        if case .timeout = self { return true }
        return false
    }

    /// What happened, in English.
    public var description: String {
        switch self {
        case .bluetoothUnavailable(let state): return "Bluetooth is unavailable (\(state))"
        case .busy: return "Another BLE operation is already in progress"
        case .timeout(let operation): return "BLE \(operation.label) timed out"
        case .peripheralNotFound(let identifier): return "No peripheral \(identifier) is known"
        case .invalidState(let detail): return "Invalid state: \(detail)"
        case .connectFailed(let peripheral, let error):
            return "Connecting to \(peripheral.address) failed\(error.map { ": \($0)" } ?? "")"
        case .operationFailed(let operation, let error): return "BLE \(operation.label) failed: \(error)"
        case .disconnected(let peripheral, let error):
            return "\(peripheral.address) disconnected\(error.map { ": \($0)" } ?? "")"
        case .scanStopped: return "The scan was stopped before a peripheral was chosen"
        }
    }

    /// Same as `description`.
    public var errorDescription: String? { description }
}
