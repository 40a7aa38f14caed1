import BleDBus
import Foundation

/// A GATT characteristic (BlueZ `GattCharacteristic1`), as CoreBluetooth's `CBCharacteristic`.
public final class Characteristic: @unchecked Sendable {
    /// The characteristic UUID.
    public let uuid: BluetoothUUID
    /// What it supports (from BlueZ's `Flags`).
    public let properties: CharacteristicProperties
    let path: ObjectPath
    /// `NotifyAcquired` exists: BlueZ offers `AcquireNotify` (5.46+, notify but not indicate-only).
    let offersAcquireNotify: Bool
    /// `WriteAcquired` exists: BlueZ offers `AcquireWrite` (write-without-response only).
    let offersAcquireWrite: Bool
    private let forceStartNotify = Locked(false)

    @BleLoop weak var ownerService: Service?
    @BleLoop var cachedValue: Data?
    @BleLoop var discoveredDescriptors: [Descriptor]?
    @BleLoop var notify = NotifyChannel()
    @BleLoop var writer = WriteChannel()
    /// Reads sent whose `PropertiesChanged(Value)` has not arrived yet: bluetoothd emits it
    /// before the ReadValue reply, and it must not be reported as a notification (bleak #1343).
    @BleLoop var readsAwaitingSignal = 0

    @BleLoop init(path: ObjectPath, uuid: BluetoothUUID, properties: CharacteristicProperties, offersAcquireNotify: Bool,
                  offersAcquireWrite: Bool, service: Service) {
        self.path = path
        self.uuid = uuid
        self.properties = properties
        self.offersAcquireNotify = offersAcquireNotify
        self.offersAcquireWrite = offersAcquireWrite
        self.ownerService = service
    }

    /// The service it belongs to.
    public var service: Service? { LoopBridge.sync { self.ownerService } }
    /// The latest value read or notified.
    public var value: Data? { LoopBridge.sync { self.cachedValue } }
    /// True while notifications or indications are enabled by this manager.
    public var isNotifying: Bool { LoopBridge.sync { self.notify.isOn } }
    /// The descriptors found by `discoverDescriptors`, nil before.
    public var descriptors: [Descriptor]? { LoopBridge.sync { self.discoveredDescriptors } }

    /// Forces `StartNotify` instead of `AcquireNotify` for this characteristic. Some peripherals
    /// notify before the CCCD write response, which BlueZ's AcquireNotify path turns into fd EOF
    /// and a disconnect (bleak #1885); BleKit also switches by itself on EOF.
    public var prefersStartNotify: Bool {
        get { forceStartNotify.value }
        set { forceStartNotify.value = newValue }
    }
}

/// How notifications reach us for one characteristic.
struct NotifyChannel {
    enum Mode {
        case off
        /// AcquireNotify or StartNotify sent; values arriving now are delivered (the peripheral may
        /// notify before the reply, bleak #374).
        case enabling
        /// Notifications come on our end of bluetoothd's SEQPACKET socket.
        case acquired(descriptor: Int32, watch: FileDescriptorWatch)
        /// Notifications come as `PropertiesChanged(Value)`.
        case started
    }

    var mode: Mode = .off
    /// We hold a StartNotify session in bluetoothd (it outlives disconnects and is re-armed on
    /// reconnect, bleak #2002): release it on teardown.
    var hasStartSession = false
    /// Forced to StartNotify after an AcquireNotify EOF.
    var acquireFailed = false

    var isOn: Bool {
        switch mode {
        case .acquired, .started: return true
        case .off, .enabling: return false
        }
    }

    var acceptsSignals: Bool {
        switch mode {
        case .started, .enabling: return true
        case .off, .acquired: return false
        }
    }
}

/// Write-without-response flow control for one characteristic.
struct WriteChannel {
    enum Mode {
        /// Nothing acquired.
        case idle
        /// AcquireWrite sent.
        case acquiring
        /// Writing packets to our end of bluetoothd's socket.
        case acquired(descriptor: Int32)
        /// AcquireWrite is not available: one `WriteValue type=command` at a time.
        case commands
    }

    var mode: Mode = .idle
    /// Packets waiting for the socket to drain or the previous command to return.
    var backlog: [Data] = []
    /// A command write is awaiting its reply.
    var commandInFlight = false
    /// Waits for the socket to become writable after EAGAIN.
    var writableWatch: FileDescriptorWatch?

    var isBusy: Bool { !backlog.isEmpty || commandInFlight }
}
