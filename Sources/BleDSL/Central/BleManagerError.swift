import Foundation

/// Why a `BleManager` command failed.
public enum BleManagerError: Error, CustomStringConvertible {
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
    /// A later `execute` replaced this command while it was still scanning or connecting.
    case superseded
    /// Free-form error (kept for FXBlueTooth source compatibility; BleKit does not produce it).
    case custom(String)

    /// What happened and what to do.
    public var description: String {
        switch self {
        case .centralStateError(let reason):
            switch reason {
            case .unknown, .resetting: return "Bluetooth is not ready yet (\(reason)); retry in a moment."
            case .unsupported: return "No Bluetooth adapter was found. Plug one in, or use BleSim (blekit sim)."
            case .unauthorized: return "BlueZ refused access. Run as a member of the 'bluetooth' group or adjust the D-Bus policy for org.bluez."
            case .poweredOff: return "The Bluetooth adapter is powered off. Power it on (bluetoothctl power on) or set CentralManagerOptions.autoPowerOn."
            }
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
}
