import Foundation

/// Which bus a `Connection` talks to.
public enum BusAddress: Sendable, Equatable, CustomStringConvertible {
    /// The system bus, where BlueZ lives. Honours `DBUS_SYSTEM_BUS_ADDRESS` as libdbus does.
    case system
    /// The session bus named by `DBUS_SESSION_BUS_ADDRESS`.
    case session
    /// An explicit address such as `unix:path=/tmp/bus.sock`.
    case address(String)

    /// libdbus's compiled-in system bus socket, used when the variable is unset.
    public static let defaultSystemBusAddress = "unix:path=/var/run/dbus/system_bus_socket"

    /// The address string to connect to, read from the environment for `.system`/`.session`.
    public func resolve(environment: [String: String] = ProcessInfo.processInfo.environment) throws(DBusError) -> String {
        switch self {
        case .system:
            if let value = environment["DBUS_SYSTEM_BUS_ADDRESS"], !value.isEmpty { return value }
            return BusAddress.defaultSystemBusAddress
        case .session:
            guard let value = environment["DBUS_SESSION_BUS_ADDRESS"], !value.isEmpty else { throw .noSessionBus }
            return value
        case .address(let value):
            guard !value.isEmpty, !value.utf8.contains(0) else {
                throw .invalidArgument("'\(value)' is not a D-Bus address such as unix:path=/run/dbus/system_bus_socket")
            }
            return value
        }
    }

    /// `system`, `session` or the address.
    public var description: String {
        switch self {
        case .system: return "system bus"
        case .session: return "session bus"
        case .address(let value): return value
        }
    }
}
