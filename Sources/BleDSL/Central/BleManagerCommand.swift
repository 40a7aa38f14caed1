import Foundation

/// Decides which discovered peripherals count: return nil to drop one, or a (modified) info.
public protocol PeripheralFilter {
    /// Keeps, modifies or (nil) drops `peripheralInfo`.
    func filter(peripheralInfo: PeripheralInfo) -> PeripheralInfo?
}

/// Sees the filtered list of discovered peripherals after every advertisement.
public protocol DiscoverPeripheral {
    /// The whole list so far.
    func discover(peripheralGroup: [PeripheralInfo])
}

/// Gets the connected peripheral assigned (before the command's handler runs).
public protocol PeripheralHandler: AnyObject {
    /// The connected peripheral.
    var peripheral: Peripheral? { get set }
    /// The link dropped (a BleKit addition; default: nothing).
    func peripheralDidDisconnect(error: Error?)
}

extension PeripheralHandler {
    /// Does nothing.
    public func peripheralDidDisconnect(error: Error?) {}
}

/// Hears the disconnects of the peripheral its command connected, for as long as that link
/// lives — even after later `execute` calls.
public protocol PeripheralDidDisConnect {
    /// `peripheral` disconnected; `error` is nil after a requested disconnect.
    func centralManager(_ central: CentralManager, didDisconnectPeripheral peripheral: Peripheral, error: Error?)
}

/// What to connect to.
public enum ConnectTarget {
    /// A peripheral `identifier` or address, compared case-insensitively. With
    /// `retrieveServices`, BlueZ's already-connected devices offering them are searched first.
    case uuid(String, retrieveServices: [BluetoothUUID]? = nil)
    /// This peripheral, without scanning.
    case peripheral(Peripheral)
    /// The first scanned (and filtered) peripheral satisfying the predicate.
    case predicate((PeripheralInfo) -> Bool)
}

/// How to reconnect after the link drops unexpectedly.
public struct ReconnectPolicy: Sendable {
    /// Delay before the first attempt.
    public var initialDelay: TimeInterval
    /// Each further delay is multiplied by this.
    public var multiplier: Double
    /// The cap on the growing delay between reconnect attempts.
    public var maximumDelay: TimeInterval
    /// Attempts before giving up (the handler then gets `.reconnectExhausted`).
    public var maximumAttempts: Int

    /// Exponential back-off: `initialDelay`, ×`multiplier` up to `maximumDelay`, `maximumAttempts` times.
    public static func exponentialBackoff(initialDelay: TimeInterval = 0.5, multiplier: Double = 2,
                                          maximumDelay: TimeInterval = 30, maximumAttempts: Int = 5) -> ReconnectPolicy {
        ReconnectPolicy(initialDelay: initialDelay, multiplier: multiplier, maximumDelay: maximumDelay,
                        maximumAttempts: maximumAttempts)
    }

    /// The delay before attempt `attempt` (1-based).
    public func delay(forAttempt attempt: Int) -> TimeInterval {
        min(maximumDelay, initialDelay * pow(multiplier, Double(max(0, attempt - 1))))
    }
}

/// One item of a central command, as in FXBlueTooth, plus BleKit's timeouts and reconnect policy.
public enum BleManagerCommandItem {
    /// Only peripherals advertising one of these services.
    case scanServices([BluetoothUUID])
    /// Scan options (`CBCentralManagerScanOptionAllowDuplicatesKey`, …).
    case scanOptions([String: Any])
    /// Sees the discovered list.
    case discover(DiscoverPeripheral)
    /// Filters discovered peripherals.
    case filter(PeripheralFilter)
    /// What to connect to.
    case connect(ConnectTarget)
    /// Connect options.
    case connectInfo([String: Any])
    /// Gets the connected peripheral.
    case handle(PeripheralHandler)
    /// Disconnects this peripheral.
    case cancelConnect(Peripheral)
    /// Hears disconnects of the peripheral this command connects.
    case didDisConnect(PeripheralDidDisConnect)
    /// Fail with `.scanTimeout` when no target was found in time. A command with a connect
    /// target gets `BleManagerCommand.defaultScanTimeout` without this item; `.infinity` scans
    /// until found.
    case scanTimeout(TimeInterval)
    /// How long the command waits for the adapter to be powered on before failing
    /// (default `BleManagerCommand.defaultPowerOnTimeout`; `.infinity` waits for ever).
    case powerOnTimeout(TimeInterval)
    /// Fail with `.centralConnectError(.timeout)` (and cancel) when connecting takes longer.
    case connectTimeout(TimeInterval)
    /// Reconnect after unexpected disconnects.
    case reconnect(ReconnectPolicy)
}

/// Central command items folded into one value; order does not matter, the last of a kind wins.
public struct BleManagerCommand {
    /// Services to scan for.
    public var scanServices: [BluetoothUUID]?
    /// CoreBluetooth-style scan options (`CBCentralManagerScanOptionAllowDuplicatesKey`).
    public var scanOptions: [String: Any]?
    /// Discovery listener.
    public var discover: DiscoverPeripheral?
    /// Decides which discovered peripherals are kept; the others are not reported or connected.
    public var filter: PeripheralFilter?
    /// Connect target.
    public var connect: ConnectTarget?
    /// Connect options.
    public var connectInfo: [String: Any]?
    /// Connected-peripheral receiver.
    public var handle: PeripheralHandler?
    /// Peripheral to disconnect.
    public var cancelConnect: Peripheral?
    /// Disconnect listener.
    public var didDisConnect: PeripheralDidDisConnect?
    /// Scan timeout in seconds.
    public var scanTimeout: TimeInterval?
    /// Connect timeout in seconds.
    public var connectTimeout: TimeInterval?
    /// Reconnect policy.
    public var reconnect: ReconnectPolicy?
    /// Power-on wait in seconds.
    public var powerOnTimeout: TimeInterval?

    /// The scan deadline of a command with a connect target and no `.scanTimeout`: 30 s.
    public static let defaultScanTimeout: TimeInterval = 30
    /// How long a command waits for `poweredOn` without `.powerOnTimeout`: 10 s.
    public static let defaultPowerOnTimeout: TimeInterval = 10

    /// Folds `items`.
    public init(_ items: [BleManagerCommandItem]? = nil) {
        for item in items ?? [] {
            switch item {
            case .scanServices(let value): scanServices = value
            case .scanOptions(let value): scanOptions = value
            case .discover(let value): discover = value
            case .filter(let value): filter = value
            case .connect(let value): connect = value
            case .connectInfo(let value): connectInfo = value
            case .handle(let value): handle = value
            case .cancelConnect(let value): cancelConnect = value
            case .didDisConnect(let value): didDisConnect = value
            case .scanTimeout(let value): scanTimeout = value
            case .connectTimeout(let value): connectTimeout = value
            case .reconnect(let value): reconnect = value
            case .powerOnTimeout(let value): powerOnTimeout = value
            }
        }
    }
}
