import Foundation

/// Which D-Bus bus BleKit talks to bluetoothd on.
public enum BleBus: Sendable, Equatable {
    /// The system bus (where bluetoothd lives); honours `DBUS_SYSTEM_BUS_ADDRESS`.
    case system
    /// An explicit address such as `unix:path=/tmp/bus.sock` (a private bus with BleSim).
    case address(String)
}

/// How a `CentralManager` is set up.
public struct CentralManagerOptions: Sendable {
    /// The bus; `.system` unless testing against BleSim.
    public var bus: BleBus
    /// The adapter by name (`hci1`) or address; nil picks the first powered adapter.
    public var adapter: String?
    /// Sets `Powered=true` on the adapter when it is off (BlueZ's Powered is not persistent).
    public var powerOnAdapter: Bool
    /// Adopts devices BlueZ already has connected at start, reported via `willRestoreState`.
    public var restoreConnectedPeripherals: Bool
    /// The deadline of each GATT operation (read, write, notify change, descriptor access).
    public var operationTimeout: Duration
    /// The deadline of `connect`; on expiry BleKit calls `Disconnect`, which cancels the attempt.
    public var connectTimeout: Duration
    /// How many times a transient connect failure (InProgress, le-connection-abort-by-local) is retried.
    public var connectRetries: Int
    /// The first pause before a retry; doubled each time (bleak-retry-connector waits ≥ 0.5 s).
    public var retryBackoff: Duration
    /// How long to wait for GATT objects after `ServicesResolved=true` before trusting the tree:
    /// bluetoothd can announce ServicesResolved before exporting the objects (bluez #1489).
    public var servicesResolvedGrace: Duration
    /// How long a GATT operation may wait in BleKit's own per-attribute queue before it is
    /// sent; past it the operation fails with `.queuedTooLong` (never sent), which tells a
    /// backlog on this side from a device or daemon that does not answer (`.timeout`).
    public var queueTimeout: Duration
    /// How long `state` stays `resetting` after bluetoothd left the bus before it turns into
    /// `unsupported` with `stateError` saying bluetoothd is not running (it still recovers when
    /// the daemon comes back later).
    public var bluetoothdReturnTimeout: Duration
    /// Share the process's one connection to the bus (and its one copy of BlueZ's objects)
    /// with the other managers and agents on it (the default). False gives this manager a
    /// connection of its own: bluetoothd then sees it as another client, with its own
    /// discovery and notify sessions, as a manager in another process would be.
    public var sharesBusConnection: Bool

    /// Defaults suited to real hardware.
    public init(bus: BleBus = .system, adapter: String? = nil, powerOnAdapter: Bool = false,
                restoreConnectedPeripherals: Bool = false, operationTimeout: Duration = .seconds(10),
                connectTimeout: Duration = .seconds(30), connectRetries: Int = 3, retryBackoff: Duration = .milliseconds(500),
                servicesResolvedGrace: Duration = .seconds(2), queueTimeout: Duration = .seconds(60),
                bluetoothdReturnTimeout: Duration = .seconds(15), sharesBusConnection: Bool = true) {
        self.bus = bus
        self.adapter = adapter
        self.sharesBusConnection = sharesBusConnection
        self.powerOnAdapter = powerOnAdapter
        self.restoreConnectedPeripherals = restoreConnectedPeripherals
        self.operationTimeout = operationTimeout
        self.connectTimeout = connectTimeout
        self.connectRetries = connectRetries
        self.retryBackoff = retryBackoff
        self.servicesResolvedGrace = servicesResolvedGrace
        self.queueTimeout = queueTimeout
        self.bluetoothdReturnTimeout = bluetoothdReturnTimeout
    }
}

/// How a scan filters; BleKit re-applies every filter itself, because bluetoothd merges the
/// discovery filters of all clients with a logical OR.
public struct ScanOptions: Sendable, Equatable {
    /// The radio transport BlueZ scans on.
    public enum Transport: String, Sendable {
        /// LE and BR/EDR.
        case auto
        /// LE only.
        case le
        /// BR/EDR only.
        case bredr
    }

    /// Report a peripheral on every advertisement, not once per scan.
    public var allowDuplicates: Bool
    /// Ignore advertisements weaker than this (dBm).
    public var rssiThreshold: Int?
    /// Only peripherals whose name or address starts with this (BlueZ `Pattern`, 5.54).
    public var pattern: String?
    /// The transport; `.le` by default.
    public var transport: Transport

    /// A scan setup.
    public init(allowDuplicates: Bool = false, rssiThreshold: Int? = nil, pattern: String? = nil, transport: Transport = .le) {
        self.allowDuplicates = allowDuplicates
        self.rssiThreshold = rssiThreshold
        self.pattern = pattern
        self.transport = transport
    }

    /// CoreBluetooth's dictionary: `CBCentralManagerScanOptionAllowDuplicatesKey`.
    public init(dictionary: [String: Any]?) {
        self.init(allowDuplicates: dictionary?[CBCentralManagerScanOptionAllowDuplicatesKey] as? Bool ?? false)
    }
}
