import Foundation

/// Why a `BleManager` command failed.
public enum BleManagerError: Error, CustomStringConvertible, LocalizedError {
    /// Why the adapter cannot be used.
    public enum CentralStateReason: Equatable, Sendable {
        /// The state is not known (kept for FXBlueTooth; BleKit waits instead of failing on it).
        case unknown
        /// bluetoothd is restarting (kept for FXBlueTooth; BleKit waits instead of failing on it).
        case resetting
        /// No adapter.
        case unsupported
        /// BlueZ refused us (D-Bus policy).
        case unauthorized
        /// The adapter is powered off.
        case poweredOff
    }

    /// Why a connection failed.
    public enum CentralConnectReason: Sendable {
        /// BlueZ reported a failure (`error` is a `BleError`).
        case failToConnect(Error?)
        /// The connection was not ready within the command's connect timeout; it was cancelled.
        case timeout(seconds: TimeInterval)
        /// The reconnect policy gave up after this many attempts.
        case reconnectExhausted(attempts: Int, lastError: Error?)
    }

    /// The adapter cannot be used.
    case centralStateError(reason: CentralStateReason)
    /// The connection failed.
    case centralConnectError(reason: CentralConnectReason)
    /// No matching peripheral was found within the command's scan timeout.
    case scanTimeout(seconds: TimeInterval)
    /// A later `execute` replaced this command while it was still scanning or connecting
    /// (only with `BleManager.reportsSupersededCommands`; by default the handler is dropped
    /// silently, as on iOS), or `cancelAll` ended it.
    case superseded
    /// Bluetooth cannot be used at all; `cause` says why: no system bus (`.noBus`), bluetoothd
    /// not running (`.serviceUnknown`), or the D-Bus policy refuses this process (`.accessDenied`).
    case bluetoothUnavailable(BleError)
    /// The adapter stayed powered off for the command's whole power-on wait.
    case poweredOffTimeout(seconds: TimeInterval)
    /// Connected, but the device lacks a service, characteristic or descriptor the command needs.
    case attributeNotFound(MissingAttribute)
    /// Free-form error (kept for FXBlueTooth source compatibility; BleKit does not produce it).
    case custom(String)

    /// What happened and what to do.
    public var description: String {
        switch self {
        case .centralStateError(let reason):
            switch reason {
            case .unknown, .resetting: return "Bluetooth is not ready yet (\(reason)); retry in a moment."
            case .unsupported: return "bluetoothd runs but has no Bluetooth adapter (or not the one asked for). Plug one in, check `bluetoothctl list` and `rfkill list`, or use BleSim (blekit sim)."
            case .unauthorized: return "BlueZ refused access. Run as a member of the 'bluetooth' group or adjust the D-Bus policy for org.bluez."
            case .poweredOff: return "The Bluetooth adapter is powered off. Power it on (bluetoothctl power on) or set CentralManagerOptions.powerOnAdapter."
            }
        case .bluetoothUnavailable(let cause):
            switch cause {
            case .noBus: return "No system bus, so no Bluetooth. \(cause)"
            case .serviceUnknown: return "No bluetoothd, so no Bluetooth. \(cause)"
            case .accessDenied: return "No permission to use Bluetooth. \(cause)"
            default: return "Bluetooth is unavailable. \(cause)"
            }
        case .poweredOffTimeout(let seconds):
            return "The Bluetooth adapter stayed powered off for \(seconds) s. Power it on (bluetoothctl power on) or set CentralManagerOptions.powerOnAdapter."
        case .attributeNotFound(let missing):
            return missing.description
        case .centralConnectError(let reason):
            switch reason {
            case .failToConnect(let error): return "Connecting failed: \(error.map { "\($0)" } ?? "unknown error")."
            case .timeout(let seconds): return "The peripheral was not ready within \(seconds) s; the attempt was cancelled. Check range and power, then retry."
            case .reconnectExhausted(let attempts, let error):
                return "Reconnecting gave up after \(attempts) attempts (last error: \(error.map { "\($0)" } ?? "none"))."
            }
        case .scanTimeout(let seconds):
            return "No matching peripheral was found within \(seconds) s. Check the filter, that it advertises, and that it is in range."
        case .superseded:
            return "A later execute replaced this command before it connected."
        case .custom(let text):
            return text
        }
    }

    /// `description`, for `error.localizedDescription`.
    public var errorDescription: String? { description }
}
