import Dispatch
import Synchronization

private let defaultOptions = Mutex(CentralManagerOptions())

extension CentralManagerOptions {
    /// The options used where ported code passes none: `CBCentralManager(delegate:queue:)`,
    /// `CBCentralManager(delegate:queue:options:)` with a CoreBluetooth dictionary, and BleDSL's
    /// `BleManager()` / `BleManager(options:)`.
    ///
    /// iOS code has no place for a bus or an adapter; set this once at start (before the first
    /// manager is made) to point unchanged code at another adapter, power it on, or at BleSim's
    /// private bus. Managers made earlier keep the options they were made with.
    public static var defaults: CentralManagerOptions {
        get { defaultOptions.withLock { $0 } }
        set { defaultOptions.withLock { $0 = newValue } }
    }

    /// `defaults` with CoreBluetooth's init options applied
    /// (`CBCentralManagerOptionRestoreIdentifierKey` turns on `restoreConnectedPeripherals`).
    public static func defaults(applying dictionary: [String: Any]?) -> CentralManagerOptions {
        var options = defaults
        if dictionary?[CBCentralManagerOptionRestoreIdentifierKey] != nil { options.restoreConnectedPeripherals = true }
        return options
    }
}

extension CentralManager {
    /// CoreBluetooth's `init(delegate:queue:options:)` with its options dictionary, on top of
    /// `CentralManagerOptions.defaults`.
    public convenience init(delegate: CentralManagerDelegate?, queue: DispatchQueue?, options: [String: Any]?) {
        self.init(delegate: delegate, queue: queue, options: CentralManagerOptions.defaults(applying: options))
    }
}
