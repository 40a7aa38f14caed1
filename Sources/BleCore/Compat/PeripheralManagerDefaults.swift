import Dispatch
import Synchronization

private let defaultOptions = Mutex(PeripheralManagerOptions())

extension PeripheralManagerOptions {
    /// The options used where ported code passes none: `CBPeripheralManager(delegate:queue:)`
    /// and `CBPeripheralManager(delegate:queue:options:)` with a CoreBluetooth dictionary.
    ///
    /// iOS code has no place for a bus or an adapter; set this once at start (before the first
    /// manager is made) to point unchanged peripheral code at another adapter or at BleSim's
    /// private bus. Managers made earlier keep the options they were made with.
    public static var defaults: PeripheralManagerOptions {
        get { defaultOptions.withLock { $0 } }
        set { defaultOptions.withLock { $0 = newValue } }
    }

    /// `defaults` with CoreBluetooth's init options applied
    /// (`CBPeripheralManagerOptionRestoreIdentifierKey` sets `restoreIdentifier`).
    public static func defaults(applying dictionary: [String: Any]?) -> PeripheralManagerOptions {
        var options = defaults
        if let identifier = dictionary?[CBPeripheralManagerOptionRestoreIdentifierKey] {
            options.restoreIdentifier = identifier as? String ?? "\(identifier)"
        }
        return options
    }
}

extension PeripheralManager {
    /// CoreBluetooth's `init(delegate:queue:options:)` with its options dictionary, on top of
    /// `PeripheralManagerOptions.defaults`.
    public convenience init(delegate: PeripheralManagerDelegate?, queue: DispatchQueue?, options: [String: Any]?) {
        self.init(delegate: delegate, queue: queue, options: PeripheralManagerOptions.defaults(applying: options))
    }

    /// CoreBluetooth's `init(delegate:queue:)`: `PeripheralManagerOptions.defaults`.
    public convenience init(delegate: PeripheralManagerDelegate?, queue: DispatchQueue?) {
        self.init(delegate: delegate, queue: queue, options: PeripheralManagerOptions.defaults)
    }
}
