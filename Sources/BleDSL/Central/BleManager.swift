import BleRuntime
import Synchronization
import Foundation

/// FXBlueTooth's central entry point: `execute(commandItems:handler:)` scans, filters, connects
/// and hands the connected peripheral to the command's `handle` object.
///
/// Beyond FXBlueTooth: commands wait for `poweredOn` instead of failing while the state is
/// unknown; connect events are matched to their target; `handle.peripheral` is assigned before
/// the handler runs (and discovery starts by itself); a peripheral's disconnects reach the
/// listeners of the command that connected it, even after later `execute` calls; scan and
/// connect timeouts; an optional reconnect policy; several peripherals connected at once (one
/// `execute` each). The handler and listeners run on BleKit's loop thread, in order.
public final class BleManager: Sendable {
    /// What a command's handler hears.
    public enum Event {
        /// The target is connected (again, after a reconnect) and its services are resolved.
        case connected(Peripheral)
        /// The link dropped; `error` is nil after a requested disconnect.
        case disconnected(Peripheral, error: Error?)
    }

    /// The handler of one `execute`.
    public typealias Handler = (Result<Event, BleManagerError>) -> Void

    /// The central manager and its multicast delegate, as FXBlueTooth's nested type.
    public final class CentralManager: CentralManagerDelegate, Sendable {
        /// The BleCore central manager (CoreBluetooth's `CBCentralManager`).
        public let centralManager: BleCore.CentralManager
        /// Add your own `CentralManagerDelegate`s here to hear the same events.
        public var multiDelegate: CentralManagerMultiDelegate { centralManager.multiDelegate }
        /// Peripherals BlueZ already had connected when the manager started (with
        /// `restoreConnectedPeripherals`).
        public var restorePeripheral: [Peripheral] { restored.value }
        /// Written by the restore callback on the loop, read by the app from any thread.
        private let restored = LoopLock<[Peripheral]>([])
        let sessions: SessionRouter

        init(options: CentralManagerOptions) {
            centralManager = BleCore.CentralManager(delegate: nil, queue: nil, options: options)
            sessions = SessionRouter(central: centralManager)
            centralManager.multiDelegate.addDelegate(self)
        }

        /// Routes the state to waiting commands.
        public func centralManagerDidUpdateState(_ central: BleCore.CentralManager) {
            let state = central.state
            BleLoop.assumeIsolated { sessions.stateChanged(state) }
        }

        /// Remembers restored peripherals for `.uuid` targets.
        public func centralManager(_ central: BleCore.CentralManager, willRestoreState dict: [String: Any]) {
            if let peripherals = dict[CBCentralManagerRestoredStatePeripheralsKey] as? [Peripheral] { restored.value = peripherals }
        }

        /// Routes a discovery to the scanning command.
        public func centralManager(_ central: BleCore.CentralManager, didDiscover peripheral: Peripheral,
                                   advertisementData: AdvertisementData, rssi RSSI: Int) {
            BleLoop.assumeIsolated { sessions.discovered(peripheral, advertisementData, RSSI) }
        }

        /// Routes a connection to the command whose target it is.
        public func centralManager(_ central: BleCore.CentralManager, didConnect peripheral: Peripheral) {
            BleLoop.assumeIsolated { sessions.connected(peripheral) }
        }

        /// Routes a failure to the command whose target it is.
        public func centralManager(_ central: BleCore.CentralManager, didFailToConnect peripheral: Peripheral, error: Error?) {
            BleLoop.assumeIsolated { sessions.failedToConnect(peripheral, error) }
        }

        /// Routes a disconnect to the command that connected the peripheral.
        public func centralManager(_ central: BleCore.CentralManager, didDisconnectPeripheral peripheral: Peripheral, error: Error?) {
            BleLoop.assumeIsolated { sessions.disconnected(peripheral, error) }
        }
    }

    /// The BleCore manager behind the DSL and its multicast delegate, in FXBlueTooth's nested
    /// shape: add a delegate there to hear what the DSL hears.
    public let centralManager: CentralManager

    /// How long a command with a connect target scans when it has no `.scanTimeout` item
    /// (`BleManagerCommand.defaultScanTimeout`, 30 s, unless changed): FXBlueTooth scanned
    /// for ever, silently, when the target was absent. `.infinity` restores that.
    public var defaultScanTimeout: TimeInterval {
        get { centralManager.sessions.defaultScanTimeout.withLock { $0 } }
        set { centralManager.sessions.defaultScanTimeout.withLock { $0 = newValue } }
    }

    /// Whether a command replaced by a later `execute` before it connected ends with
    /// `.failure(.superseded)`. False by default: as on iOS, where FXBlueTooth drops the old
    /// handler, the README's `startScan()` then `connect(uuid:)` prints no scan error. Set it
    /// to hear replacements (they are also logged at info level either way).
    public var reportsSupersededCommands: Bool {
        get { centralManager.sessions.reportsSuperseded.load(ordering: .relaxed) }
        set { centralManager.sessions.reportsSuperseded.store(newValue, ordering: .relaxed) }
    }

    /// A manager with `CentralManagerOptions.defaults` (the system bus's first powered adapter
    /// unless the program set other defaults); `options` as CoreBluetooth's init options
    /// (`CBCentralManagerOptionRestoreIdentifierKey` turns on restoration).
    public convenience init(options: [String: Any]? = nil) {
        self.init(centralOptions: CentralManagerOptions.defaults(applying: options))
    }

    /// A manager with BleCore options (bus, adapter, timeouts).
    public init(centralOptions: CentralManagerOptions) {
        centralManager = CentralManager(options: centralOptions)
    }

    /// Runs a command built from `commandItems`; see `execute(command:handler:)`.
    public func execute(commandItems: [BleManagerCommandItem]? = nil, handler: Handler? = nil) {
        execute(command: BleManagerCommand(commandItems), handler: handler)
    }

    /// Runs `command`: waits for the adapter, scans (or retrieves) the target, connects, assigns
    /// `handle.peripheral`, then calls `handler` with `.connected`; later `.disconnected` (and,
    /// with a reconnect policy, `.connected` again). A command still scanning or connecting when
    /// the next `execute` comes is replaced (silently unless `reportsSupersededCommands`);
    /// connected ones live on. Every wait has a deadline: power-on (`.powerOnTimeout`, 10 s),
    /// the scan for a target (`.scanTimeout`, 30 s) and connecting (`.connectTimeout`, or the
    /// manager's `connectTimeout`).
    public func execute(command: BleManagerCommand? = nil, handler: Handler? = nil) {
        let box = LoopBound((command ?? BleManagerCommand(), handler))
        let router = centralManager.sessions
        LoopBridge.later {
            let (command, handler) = box.value
            router.start(command: command, handler: handler)
        }
    }

    /// Ends every command: stops scanning, cancels pending connects and disconnects the
    /// connected peripherals.
    public func cancelAll() {
        let router = centralManager.sessions
        LoopBridge.later { router.cancelAll() }
    }
}
