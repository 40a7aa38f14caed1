import Foundation

/// Whether this process may use Bluetooth, as CoreBluetooth's `CBManagerAuthorization`.
///
/// iOS asks the user; Linux asks bluetoothd's D-Bus policy (`/etc/dbus-1/system.d/bluetooth.conf`:
/// root and the `bluetooth` group may talk to `org.bluez`). The raw values are iOS's.
public enum ManagerAuthorization: Int, Sendable, CustomStringConvertible {
    /// Not known yet: bluetoothd is not on the bus (or has not answered), so its policy cannot
    /// be tried.
    case notDetermined = 0
    /// The system keeps this process off the bus itself (a sandbox refused the system bus's
    /// socket): only an administrator can change it.
    case restricted = 1
    /// The D-Bus policy refuses this user's calls to bluetoothd: add the user to the
    /// `bluetooth` group (`sudo usermod -aG bluetooth $USER`, then log in again) or allow it in
    /// `/etc/dbus-1/system.d/bluetooth.conf`.
    case denied = 2
    /// bluetoothd accepts this process's calls.
    case allowedAlways = 3

    /// The verdict a manager's state and its error give: `denied` for a refused call,
    /// `restricted` for a refused bus socket, `allowedAlways` once bluetoothd answered.
    init(state: ManagerState, error: BleError?) {
        switch error {
        case .accessDenied?:
            self = .denied
        case .noBus(let detail)? where detail.localizedCaseInsensitiveContains("permission denied"):
            self = .restricted
        default:
            switch state {
            case .poweredOn, .poweredOff: self = .allowedAlways
            case .unauthorized: self = .denied
            case .unknown, .resetting: self = .notDetermined
            case .unsupported:
                // Unsupported because bluetoothd or the bus is not there says nothing of the
                // policy; unsupported because bluetoothd has no usable adapter means it answered.
                switch error {
                case .serviceUnknown?, .noBus?, .timeout?, .dbus?: self = .notDetermined
                default: self = .allowedAlways
                }
            }
        }
    }

    /// `allowedAlways`, `denied`, …
    public var description: String {
        switch self {
        case .notDetermined: return "notDetermined"
        case .restricted: return "restricted"
        case .denied: return "denied"
        case .allowedAlways: return "allowedAlways"
        }
    }
}
