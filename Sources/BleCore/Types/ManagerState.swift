/// The central manager's state, as CoreBluetooth's `CBManagerState`.
public enum ManagerState: Int, Sendable, CustomStringConvertible {
    /// Not known yet: the manager is still talking to bluetoothd.
    case unknown = 0
    /// bluetoothd left the bus; BleKit waits for it to return and rebuilds its view.
    case resetting = 1
    /// No Bluetooth adapter (or no bluetoothd / no bus at all); see `CentralManager.stateError`.
    case unsupported = 2
    /// The D-Bus policy refuses this user access to bluetoothd; see `CentralManager.stateError`.
    case unauthorized = 3
    /// The adapter exists but is off (or rfkill-blocked).
    case poweredOff = 4
    /// Ready: scanning and connecting work.
    case poweredOn = 5

    /// The case name.
    public var description: String {
        switch self {
        case .unknown: return "unknown"
        case .resetting: return "resetting"
        case .unsupported: return "unsupported"
        case .unauthorized: return "unauthorized"
        case .poweredOff: return "poweredOff"
        case .poweredOn: return "poweredOn"
        }
    }
}

/// A peripheral's connection state, as CoreBluetooth's `CBPeripheralState`.
public enum PeripheralState: Int, Sendable, CustomStringConvertible {
    /// Not connected.
    case disconnected = 0
    /// `connect` is under way.
    case connecting = 1
    /// Connected and its services are resolved.
    case connected = 2
    /// `cancelPeripheralConnection` is under way.
    case disconnecting = 3

    /// The case name.
    public var description: String {
        switch self {
        case .disconnected: return "disconnected"
        case .connecting: return "connecting"
        case .connected: return "connected"
        case .disconnecting: return "disconnecting"
        }
    }
}
