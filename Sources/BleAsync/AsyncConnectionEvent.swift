import BleCore

/// A link coming up or going down, from `AsyncBleManager.connectionEvents()`.
public enum AsyncConnectionEvent: Sendable {
    /// Connected, services resolved.
    case connected(CBPeripheral)
    /// The link is gone; `error` nil when the app disconnected.
    case disconnected(CBPeripheral, BleError?)
}
