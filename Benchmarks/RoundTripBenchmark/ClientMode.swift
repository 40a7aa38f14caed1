/// What a client process measures. The first four are also `ble_roundtrip`'s (the libdbus
/// baseline) and `roundtrip.py`'s (bleak) modes; the others are BleKit-only variants of the same
/// D-Bus exchanges, set against the baseline mode they share (`baseline`).
enum ClientMode: String, CaseIterable, Sendable {
    /// StartNotify; each round trip is WriteValue + the PropertiesChanged(Value) signal.
    case signal
    /// AcquireNotify; each round trip is WriteValue + one packet on the socket.
    case acquire
    /// StartNotify; one write makes the simulator push a burst of notifications, counted by a
    /// plain delegate.
    case ingest
    /// The same burst over AcquireNotify. The simulator drops what a full socket cannot take
    /// (as bluetoothd does), so the client reports what it lost.
    case ingestAcquire = "ingest-acquire"
    /// `signal` through the BleDSL engine (`DeviceCharacteristicValue.executable`).
    case engineSignal = "dsl-signal"
    /// `acquire` through the BleDSL engine.
    case engineAcquire = "dsl-acquire"
    /// `ingest` counted by a BleDSL `.longConnection` command (a stream consumer).
    case streamSignal = "stream-signal"
    /// `ingest-acquire` counted by a BleDSL `.longConnection` command.
    case streamAcquire = "stream-acquire"
    /// A 64 KiB response in MTU − 3 packets at MTU 23, reassembled with `.goon` (StartNotify).
    case goon23 = "goon-23"
    /// The same at MTU 517.
    case goon517 = "goon-517"

    /// The modes a run measures by default, in report order.
    static let measured: [ClientMode] = [.signal, .engineSignal, .acquire, .engineAcquire, .ingest, .streamSignal,
                                         .ingestAcquire, .streamAcquire, .goon23, .goon517]

    var isIngest: Bool { [.ingest, .ingestAcquire, .streamSignal, .streamAcquire].contains(self) }
    var usesAcquire: Bool { [.acquire, .ingestAcquire, .engineAcquire, .streamAcquire].contains(self) }
    var usesEngine: Bool { [.engineSignal, .engineAcquire, .streamSignal, .streamAcquire, .goon23, .goon517].contains(self) }
    var isMultiPacket: Bool { self == .goon23 || self == .goon517 }
    /// The mode the C client and bleak run for the same D-Bus exchanges (nil: BleKit only).
    var baseline: ClientMode? {
        switch self {
        case .signal, .engineSignal: return .signal
        case .acquire, .engineAcquire: return .acquire
        case .ingest, .streamSignal: return .ingest
        case .ingestAcquire, .streamAcquire: return .ingestAcquire
        case .goon23, .goon517: return nil
        }
    }
    /// The service the client looks for (the multi-packet peripherals have their own).
    var serviceShortUUID: UInt16 {
        switch self {
        case .goon23: return 0xff10
        case .goon517: return 0xff20
        default: return 0xff00
        }
    }
    /// What one measured operation is, for the report.
    var unit: String { isIngest ? "notification" : isMultiPacket ? "KiB" : "round trip" }
    var title: String {
        switch self {
        case .signal: return "round trip, StartNotify (signal), BleCore"
        case .acquire: return "round trip, AcquireNotify (socket), BleCore"
        case .ingest: return "ingest, StartNotify (signal), delegate"
        case .ingestAcquire: return "ingest, AcquireNotify (socket), delegate"
        case .engineSignal: return "round trip, StartNotify (signal), BleDSL engine"
        case .engineAcquire: return "round trip, AcquireNotify (socket), BleDSL engine"
        case .streamSignal: return "ingest, StartNotify (signal), `.longConnection`"
        case .streamAcquire: return "ingest, AcquireNotify (socket), `.longConnection`"
        case .goon23: return "64 KiB response, MTU 23, `.goon`"
        case .goon517: return "64 KiB response, MTU 517, `.goon`"
        }
    }
}
