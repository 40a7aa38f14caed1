import Foundation

/// How a `PeripheralManager` is set up.
public struct PeripheralManagerOptions: Sendable {
    /// The bus; `.system` unless testing against BleSim.
    public var bus: BleBus
    /// The adapter to serve and advertise on, by name (`hci0`) or address. Nil picks a powered
    /// adapter, preferring one that is not discovering: a central on the same machine should
    /// scan from another adapter (an adapter does not hear its own advertisements).
    public var adapter: String?
    /// How long a read or write request may stay unanswered before BleKit answers it with
    /// ATT's Unlikely Error. Below bluetoothd's own D-Bus timeout (25 s) and ATT's 30 s.
    public var requestTimeout: Duration
    /// Offer bluetoothd `AcquireWrite`/`AcquireNotify` sockets for characteristics with
    /// write-without-response and notify: writes and notifications then bypass the bus.
    public var acquireSockets: Bool
    /// Notifications sent through the bus (`PropertiesChanged`) that may be on their way to
    /// bluetoothd at once; `updateValue` returns false beyond it until bluetoothd catches up.
    public var notificationWindow: Int
    /// CoreBluetooth's restore identifier: when set, `peripheralManager(_:willRestoreState:)`
    /// tells which services and advertisement BleKit registered again after bluetoothd
    /// restarted or the adapter came back (see `CBPeripheralManagerOptionRestoreIdentifierKey`).
    public var restoreIdentifier: String?
    /// Sets `Powered=true` on the serving adapter when it is off (BlueZ's Powered is not
    /// persistent), as `CentralManagerOptions.powerOnAdapter` does for the central.
    public var powerOnAdapter: Bool
    /// How long `state` stays `resetting` after bluetoothd left the bus before it turns into
    /// `unsupported` with `stateError` saying bluetoothd is not running (services and
    /// advertisements are still registered again when it comes back later).
    public var bluetoothdReturnTimeout: Duration
    /// Share the process's one connection to the bus with the other managers and agents on it
    /// (the default); false gives this manager a connection of its own, as `CentralManagerOptions.sharesBusConnection`.
    public var sharesBusConnection: Bool

    /// Defaults suited to real hardware.
    public init(bus: BleBus = .system, adapter: String? = nil, requestTimeout: Duration = .seconds(5),
                acquireSockets: Bool = true, notificationWindow: Int = 32, restoreIdentifier: String? = nil,
                powerOnAdapter: Bool = false, bluetoothdReturnTimeout: Duration = .seconds(15),
                sharesBusConnection: Bool = true) {
        self.sharesBusConnection = sharesBusConnection
        self.restoreIdentifier = restoreIdentifier
        self.powerOnAdapter = powerOnAdapter
        self.bluetoothdReturnTimeout = bluetoothdReturnTimeout
        self.bus = bus
        self.adapter = adapter
        self.requestTimeout = requestTimeout
        self.acquireSockets = acquireSockets
        self.notificationWindow = max(1, notificationWindow)
    }
}
