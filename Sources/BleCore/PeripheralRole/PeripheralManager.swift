import BleDBus
import Dispatch
import Foundation

// @unchecked: an any-thread facade like `CentralManager` (see ThreadingModel.md): its state is
// @BleLoop-isolated or behind a lock.
/// The peripheral role over BlueZ, shaped like CoreBluetooth's `CBPeripheralManager`: a GATT
/// server and advertiser on one adapter of this machine.
///
/// The services added here are exported as one BlueZ GATT application (an ObjectManager tree)
/// and registered with `GattManager1.RegisterApplication`; advertisements are
/// `LEAdvertisement1` objects registered with `LEAdvertisingManager1`. Both are registered
/// again by themselves when bluetoothd restarts. The exported objects answer only the current
/// owner of `org.bluez`: any other caller gets `org.bluez.Error.NotAuthorized` and changes nothing.
///
/// What bluetoothd 5.66 does not tell a peripheral app, and so BleKit cannot either: which
/// central subscribed through `StartNotify` (the first subscriber starts it, the last one's
/// leaving stops it; BleKit names the central when only one is connected, else
/// `Central.unidentified`), and notifying a single central (every value goes to every
/// subscribed central; `onSubscribedCentrals` cannot narrow it, see `updateValue`).
public final class PeripheralManager: Manager, @unchecked Sendable {
    /// The options it was made with.
    public let options: PeripheralManagerOptions
    /// Receives every event after `delegate`.
    public let multiDelegate = PeripheralManagerMultiDelegate()
    let session: BlueZSession
    private let delegateBox = Locked<WeakDelegate>(WeakDelegate())
    private struct WeakDelegate { weak var value: PeripheralManagerDelegate? }
    /// Distinct object paths for several managers in one process.
    private static let counter = Locked<Int>(0)
    /// The root of this manager's GATT application.
    let applicationRoot: ObjectPath
    /// The parent of its advertisement objects.
    let advertisingRoot: ObjectPath

    /// The primary delegate (held weakly, as CoreBluetooth does).
    public var delegate: PeripheralManagerDelegate? {
        get { delegateBox.value.value }
        set { delegateBox.value = WeakDelegate(value: newValue) }
    }

    // Loop-confined state.
    /// The adapter and bluetoothd as this manager sees them (shared with the central role).
    let adapterWatch: AdapterWatch
    @BleLoop var currentState: ManagerState = .unknown
    @BleLoop var currentStateError: BleError? { adapterWatch.stateError }
    @BleLoop var adapterPath: ObjectPath? { adapterWatch.adapterPath }
    @BleLoop var closed = false
    @BleLoop var services: [ExportedService] = []
    @BleLoop var nextServiceIndex = 0
    /// Services added before the bus connection was open.
    @BleLoop var queuedServices: [MutableService] = []
    @BleLoop var application = ApplicationRegistration()
    @BleLoop var centralsByPath: [ObjectPath: Central] = [:]
    /// Centrals whose connection the delegates heard about (so each link is reported once).
    @BleLoop var connectedAnnounced: Set<ObjectPath> = []
    @BleLoop var advertisements: [ObjectPath: AdvertisementRecord] = [:]
    @BleLoop var nextAdvertisementIndex = 0
    /// The advertisement of CoreBluetooth's `startAdvertising(_:)`, held by the manager.
    @BleLoop var compatibilityAdvertisement: AdvertisementRegistration?
    @BleLoop var flow = NotificationFlow()
    @BleLoop var warnedAboutSubsets = false
    /// A request named a device that is not on the serving adapter (said once).
    @BleLoop var warnedAboutUnknownDevices = false
    /// bluetoothd (or the adapter) went away with services or advertisements registered, which
    /// BleKit registers again: `willRestoreState` is due before the next `poweredOn`.
    @BleLoop var restorationDue = false
    /// Requests handed to the delegates whose answer (or deadline) has not come yet.
    @BleLoop var unansweredRequestCount = 0
    /// Datagrams on `AcquireWrite` sockets longer than the MTU, reported and not delivered.
    @BleLoop var discardedWrites = 0

    /// Starts a manager; `peripheralManagerDidUpdateState` follows once bluetoothd has answered.
    public init(delegate: PeripheralManagerDelegate?, queue: DispatchQueue?, options: PeripheralManagerOptions) {
        self.options = options
        let number = Self.counter.withLock { value -> Int in
            value += 1
            return value
        }
        let process = ProcessInfo.processInfo.processIdentifier
        applicationRoot = (try? ObjectPath("/org/blekit/peripheral\(process)_\(number)")) ?? "/org/blekit/peripheral"
        advertisingRoot = (try? ObjectPath("/org/blekit/advertising\(process)_\(number)")) ?? "/org/blekit/advertising"
        let session = BlueZSession(options: CentralManagerOptions(bus: options.bus, adapter: options.adapter,
                                                                  operationTimeout: .seconds(10),
                                                                  bluetoothdReturnTimeout: options.bluetoothdReturnTimeout,
                                                                  sharesBusConnection: options.sharesBusConnection),
                                   callbacks: CallbackQueue(queue: queue))
        self.session = session
        adapterWatch = AdapterWatch(session: session, configuration: AdapterWatch.Configuration(
            wanted: options.adapter, powerOn: options.powerOnAdapter, returnTimeout: options.bluetoothdReturnTimeout, role: .peripheral))
        super.init()
        delegateBox.value = WeakDelegate(value: delegate)
        LoopBridge.async { [self] in
            Task { @BleLoop in await self.open() }
        }
    }


    deinit {
        let session = self.session
        LoopBridge.async { session.close(.cancelled) }
    }

    // MARK: State

    /// The serving adapter's state.
    public override var state: ManagerState { LoopBridge.sync { self.currentState } }
    /// Why `state` is `unsupported` or `unauthorized`, if known.
    public override var stateError: BleError? { LoopBridge.sync { self.currentStateError } }
    /// The adapter served on (`hci0`), when one is.
    public var adapterName: String? { LoopBridge.sync { self.adapterPath.map { String($0.lastElement) } } }
    /// True while any advertisement of this manager is registered.
    public var isAdvertising: Bool { LoopBridge.sync { self.advertisements.values.contains { $0.registration?.isActive == true } } }
    /// True while the GATT application is registered with bluetoothd.
    public var isServing: Bool { LoopBridge.sync { self.application.registered } }
    /// The centrals connected to the serving adapter now.
    public var connectedCentrals: [Central] { LoopBridge.sync { self.centralsByPath.values.filter(\.isConnected).sorted { $0.address < $1.address } } }

    // MARK: Services

    /// Adds a service (and its characteristics and descriptors) to the application;
    /// `didAdd` follows once bluetoothd has it. bluetoothd reads an application once, so each
    /// change registers the whole application again (centrals then see Service Changed).
    public func add(_ service: MutableService) {
        LoopBridge.async { self.addService(service) }
    }

    /// Removes a service.
    public func remove(_ service: MutableService) {
        LoopBridge.async { self.removeServices { $0 === service } }
    }

    /// Removes every service (the application is unregistered).
    public func removeAllServices() {
        LoopBridge.async { self.removeServices { _ in true } }
    }

    // MARK: Requests and notifications

    /// Answers a read or write request, once: later answers are ignored (and logged). For a
    /// write, answering the first request of a `didReceiveWrite` batch answers them all.
    /// Returns false when the request had already been answered (or timed out).
    @discardableResult
    public func respond(to request: ATTRequest, withResult result: ATTResult) -> Bool {
        LoopBridge.sync { self.answer(request, result) }
    }

    /// Sends `value` to the centrals subscribed to `characteristic` (a notification, or an
    /// indication when it only indicates). Returns false when the outgoing queue is full: wait
    /// for `peripheralManagerIsReady(toUpdateSubscribers:)`, then send again. Returns true with
    /// nothing sent when no central is subscribed.
    ///
    /// bluetoothd 5.66 sends every value to every subscribed central, through the
    /// characteristic's `AcquireNotify` socket or its `PropertiesChanged(Value)`; it has no way
    /// to address one central. A `centrals` list that leaves out a subscriber is therefore
    /// refused (false, and a warning), never silently widened; nil or all subscribers is fine.
    @discardableResult
    public func updateValue(_ value: Data, for characteristic: MutableCharacteristic, onSubscribedCentrals centrals: [Central]?) -> Bool {
        let box = LoopBound(centrals)
        return LoopBridge.sync { self.sendUpdate(value, for: characteristic, to: box.value) }
    }

    // MARK: Advertising

    /// CoreBluetooth's `startAdvertising`: replaces this manager's previous such advertisement;
    /// `peripheralManagerDidStartAdvertising` follows.
    public func startAdvertising(_ advertisementData: [String: Any]?) {
        let advertisement = Advertisement(dictionary: advertisementData)
        let registration = makeRegistration(advertisement)
        LoopBridge.async {
            if let previous = self.compatibilityAdvertisement { self.endAdvertisement(path: (try? ObjectPath(previous.path)) ?? .root, cancelled: true) }
            self.compatibilityAdvertisement = registration
            self.beginAdvertisement(registration)
        }
    }

    /// Registers `advertisement` as one more advertisement (as far as the controller has
    /// instances); keep the handle: releasing it unregisters the advertisement.
    public func startAdvertising(_ advertisement: Advertisement) -> AdvertisementRegistration {
        let registration = makeRegistration(advertisement)
        LoopBridge.async { self.beginAdvertisement(registration) }
        return registration
    }

    /// Stops every advertisement of this manager (handles turn `cancelled`).
    public func stopAdvertising() {
        LoopBridge.async {
            self.compatibilityAdvertisement = nil
            for path in Array(self.advertisements.keys) { self.endAdvertisement(path: path, cancelled: true) }
        }
    }

    /// What the adapter's advertising manager offers now (nil before an adapter is known).
    public var advertisingCapabilities: AdvertisingCapabilities? { LoopBridge.sync { self.currentCapabilities() } }

    /// Stops serving: advertisements and the application are unregistered, the bus connection closes.
    public func close() {
        LoopBridge.async { self.shutDown() }
    }

    /// The underlying D-Bus connection. Loop-isolated.
    @BleLoop public var dbusConnection: Connection? { session.connection }

    private func makeRegistration(_ advertisement: Advertisement) -> AdvertisementRegistration {
        let index = Self.counter.withLock { value -> Int in
            value += 1
            return value
        }
        return AdvertisementRegistration(advertisement: advertisement, path: advertisingRoot.rawValue + "/advertisement\(index)", manager: self)
    }

    // MARK: Loop side

    /// Calls every delegate, on the callback queue.
    @BleLoop func emit(_ body: @escaping @Sendable (PeripheralManagerDelegate) -> Void) {
        let primary = Unchecked(delegate)
        let multi = multiDelegate.isEmpty ? nil : multiDelegate
        session.callbacks.deliver {
            if let delegate = primary.value { body(delegate) }
            if let multi { body(multi) }
        }
    }

    @BleLoop func setState(_ newState: ManagerState) {
        guard newState != currentState else { return }
        if newState == .poweredOn, restorationDue {
            restorationDue = false
            announceRestoration()
        }
        BleLog.info("peripheral manager state \(currentState) → \(newState)")
        currentState = newState
        AuthorizationProbe.learned(state: newState, error: currentStateError)
        emit { $0.peripheralManagerDidUpdateState(self) }
    }
}
