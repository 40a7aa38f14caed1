import BleDBus
import Foundation

/// The one BlueZ session a `CentralManager` and all its `Peripheral`s share: the bus
/// connection, the object cache, one call helper whose completion runs on the loop, and a router
/// that delivers each of BlueZ's events straight to the object registered for its path.
///
/// Peripherals hold their session strongly and the session outlives the manager's facade: when
/// the app releases a `CentralManager`, the session closes with `.managerReleased`, and every
/// operation still pending on any peripheral ends with that error (delivered on the manager's
/// callback queue) instead of vanishing.
@BleLoop
final class BlueZSession {
    /// Where the session is in its life.
    enum Phase {
        case idle
        case opening
        case open
        /// Closed for good; every call fails with the reason.
        case closed(BleError)
    }

    nonisolated let options: CentralManagerOptions
    /// Where delegate callbacks run (the manager's queue, or the loop).
    nonisolated let callbacks: CallbackQueue
    private(set) var phase: Phase = .idle
    /// The bus's one session, shared with every other manager of the process on that bus.
    private(set) var bus: BusSession?
    /// The bus session's connection and cache (the same for every client of the bus).
    private(set) var connection: Connection?
    private(set) var cache: ObjectCache?
    /// Adapter-, device- and daemon-level events, and the cache's load/loss events: the manager's.
    var onObjectEvent: (@BleLoop (CacheEvent) -> Void)?
    /// The bus connection closed under us.
    var onBusLost: (@BleLoop () -> Void)?
    /// The central whose delegates hear a peripheral's connection events; peripherals reach it
    /// only through here, and outlive it.
    weak var central: CentralManager?
    /// Peripherals by the path of their `Device1` object: GATT events are routed by the device
    /// part of their path, found in one pass over the path's bytes.
    private var routes: [ObjectPath: Peripheral] = [:]
    /// GATT object paths already routed once: the next event of the same characteristic finds
    /// its peripheral with one lookup, without building its device path again.
    private var attributeRoutes: [ObjectPath: Peripheral] = [:]
    /// The path each routed peripheral is registered under.
    private var routedPaths: [ObjectIdentifier: ObjectPath] = [:]
    /// Where the last notification went, valid while neither version moved: a stream of
    /// notifications on one characteristic (nearly all of them) is delivered after one string
    /// comparison instead of four hash lookups of its path.
    private var lastNotified: LastNotified?
    /// Bumped whenever a routing table or a peripheral's characteristic map changes.
    private var routeVersion: UInt64 = 0

    private struct LastNotified {
        let path: ObjectPath
        let peripheral: Peripheral
        let characteristic: Characteristic
        let cacheVersion: UInt64
        let routeVersion: UInt64
    }

    /// - Parameter sharesBus: whether to use the bus's shared session (nil: as
    ///   `options.sharesBusConnection` says); false makes this client a D-Bus client of its own
    ///   to bluetoothd (an agent for incoming pairings: bluetoothd keeps one agent per client).
    nonisolated init(options: CentralManagerOptions, callbacks: CallbackQueue, sharesBus: Bool? = nil) {
        self.options = options
        self.callbacks = callbacks
        self.sharesBus = sharesBus ?? options.sharesBusConnection
    }

    /// Whether this client uses the bus's shared session or a connection of its own.
    nonisolated let sharesBus: Bool

    var isOpen: Bool {
        if case .open = phase { return true }
        return false
    }

    /// The reason the session closed, if it did.
    var closedReason: BleError? {
        if case .closed(let reason) = phase { return reason }
        return nil
    }

    // MARK: Life

    /// Attaches to the bus's one session (opening it when this is its first client). Throws
    /// the mapped error when the bus is not there.
    func open() async throws(BleError) {
        guard case .idle = phase else { return }
        phase = .opening
        let bus: BusSession
        do {
            bus = try await BusSession.attach(self, to: options.bus, shared: sharesBus)
        } catch {
            if case .opening = phase { phase = .idle }
            throw error
        }
        guard case .opening = phase else {
            // Closed while the bus was being opened.
            bus.detach(self)
            return
        }
        self.bus = bus
        connection = bus.connection
        cache = bus.cache
        phase = .open
        if central != nil || !routes.isEmpty { bus.routesNotifications(self) }
        let waiting = openWaiters
        openWaiters.removeAll()
        for body in waiting { body() }
        bus.replayLoad(to: self)
        // Lost between `attach`'s answer and now: the client heard nothing of it.
        if bus.isClosed { onBusLost?() }
    }

    /// Runs `body` once the bus connection is up: at once when it is, never when the session closed.
    func whenOpen(_ body: @escaping @BleLoop () -> Void) {
        switch phase {
        case .open: body()
        case .idle, .opening: openWaiters.append(body)
        case .closed: break
        }
    }

    private var openWaiters: [@BleLoop () -> Void] = []

    /// Ends the session: every registered peripheral's pending operations end with `reason`,
    /// subscriptions and sockets are released, the bus connection closes.
    func close(_ reason: BleError) {
        if case .closed = phase { return }
        phase = .closed(reason)
        openWaiters.removeAll()
        let peripherals = Array(routes.values)
        for peripheral in peripherals { peripheral.sessionClosed(reason) }
        routes.removeAll()
        routedPaths.removeAll()
        attributeRoutes.removeAll()
        notificationRoutesChanged()
        // The bus closes with its last client; another manager of the process may still use it.
        bus?.detach(self)
    }

    /// Queues `body` for the central's delegates (nothing when the manager was released).
    func emitCentral(_ body: @escaping @Sendable (CentralManagerDelegate, CentralManager) -> Void) {
        guard let central else { return }
        central.emit { body($0, central) }
    }

    // MARK: Routing

    /// Makes `peripheral` receive the events of the device at `path` and below.
    func route(_ path: ObjectPath, to peripheral: Peripheral) {
        // The reverse map finds the peripheral's old path in one lookup: scanning every route
        // per device made loading a crowd of devices quadratic (seconds for 5,000).
        let key = ObjectIdentifier(peripheral)
        if let existing = routedPaths[key], existing != path, routes[existing] === peripheral {
            routes.removeValue(forKey: existing)
        }
        routes[path] = peripheral
        routedPaths[key] = path
        bus?.routesNotifications(self)
        attributeRoutes.removeAll()
        notificationRoutesChanged()
    }

    /// Forgets where the last notification went (see `lastNotified`).
    func notificationRoutesChanged() {
        routeVersion &+= 1
        lastNotified = nil
    }

    /// The peripheral registered for the device at `path`.
    func peripheral(at path: ObjectPath) -> Peripheral? { routes[path] }

    /// The peripheral whose device holds `path` (a service, characteristic or descriptor).
    func peripheral(containing path: ObjectPath) -> Peripheral? {
        if let known = attributeRoutes[path] { return known }
        guard let device = path.ancestor(depth: ObjectCache.deviceDepth), let peripheral = routes[device] else { return nil }
        attributeRoutes[path] = peripheral
        return peripheral
    }

    /// A notification for the same characteristic as the last one, while nothing changed in
    /// the cache (`cacheVersion`) or the routes since: delivered, and true. False otherwise,
    /// and the caller checks and routes it the long way.
    func deliverToLastNotified(_ path: ObjectPath, _ value: Data, cacheVersion: UInt64) -> Bool {
        guard let last = lastNotified, last.cacheVersion == cacheVersion, last.routeVersion == routeVersion,
              last.path == path else { return false }
        last.peripheral.valueNotified(last.characteristic, value)
        return true
    }

    /// A notification from the cache (which knows the characteristic), routed to its peripheral;
    /// remembered for `deliverToLastNotified` with the cache's version.
    func routeNotification(_ path: ObjectPath, _ value: Data, cacheVersion: UInt64) {
        guard let peripheral = peripheral(containing: path), let characteristic = peripheral.characteristicsByPath[path] else { return }
        lastNotified = LastNotified(path: path, peripheral: peripheral, characteristic: characteristic,
                                    cacheVersion: cacheVersion, routeVersion: routeVersion)
        peripheral.valueNotified(characteristic, value)
    }

    /// Every registered peripheral.
    var peripherals: [Peripheral] { Array(routes.values) }

    /// Whether a load's outcome reached this client (the bus replays it to late clients).
    private(set) var heardLoadOutcome = false

    /// What the bus session saw, for this client.
    func busEvent(_ event: BusEvent) {
        // A client still waiting for `attach` to return has not read the cache yet: what
        // happens meanwhile reaches it as the load's replay once it is open (`replayLoad`).
        guard isOpen else { return }
        switch event {
        case .objects(let change):
            switch change {
            case .loaded, .loadFailed, .daemonLost: heardLoadOutcome = true
            default: break
            }
            route(change)
        case .busLost: onBusLost?()
        }
    }

    private func route(_ event: CacheEvent) {
        switch event {
        case .added, .removed, .daemonLost, .loaded, .loadFailed: notificationRoutesChanged()
        case .changed, .notified: break
        }
        switch event {
        case .changed(let path, let interface, let changed, let invalidated):
            switch interface {
            case BlueZ.gattCharacteristic, BlueZ.gattDescriptor:
                peripheral(containing: path)?.attributeChanged(path, interface: interface, changed: changed)
            case BlueZ.device:
                routes[path]?.deviceChanged(changed, invalidated: invalidated)
                onObjectEvent?(event)
            default:
                onObjectEvent?(event)
            }
        case .added(let path, let interfaces):
            if interfaces.contains(where: BlueZ.isGattInterface) {
                peripheral(containing: path)?.gattObjectAdded(path)
            } else {
                // A device object added again may carry a new Modalias (see `peerIsBlueZ`).
                routes[path]?.blueZPeerVerdict = nil
                onObjectEvent?(event)
            }
        case .removed(let path, let interfaces, _):
            if interfaces.contains(where: BlueZ.isGattInterface) {
                let owner = peripheral(containing: path)
                attributeRoutes.removeValue(forKey: path)
                owner?.gattObjectRemoved(path)
            } else {
                onObjectEvent?(event)
            }
        case .notified(let path, let value):
            peripheral(containing: path)?.valueNotified(path, value)
        case .daemonLost, .loaded, .loadFailed:
            attributeRoutes.removeAll()
            for peripheral in routes.values { peripheral.blueZPeerVerdict = nil }
            onObjectEvent?(event)
        }
    }

    // MARK: Calls

    /// Calls a BlueZ method; `completion` runs on the loop with the reply body or a mapped error.
    /// The D-Bus deadline defaults to the operation deadline plus a second, so the operation's
    /// own timer (which names the operation) fires first.
    /// Returns the call's handle, to abandon it (see `Connection.abandonCall`); nil when none was sent.
    @discardableResult
    func call(_ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = [],
              timeout: Duration? = nil, address: String? = nil,
              completion: @escaping @BleLoop (Result<[DBusValue], BleError>) -> Void) -> CallHandle? {
        if let reason = closedReason { completion(.failure(reason)); return nil }
        // Its own copy of `BusSession.call`, not a call through it: every GATT operation goes
        // out here, and handing the completion on cost ~280 instructions a round trip
        // (callgrind, acquire mode: 59,899 through it, 59,620 with this copy).
        guard let connection, connection.isOpen else { completion(.failure(.noBus("not connected to the bus"))); return nil }
        guard cache?.owner != nil else { completion(.failure(.bluetoothRestarted)); return nil }
        BleLog.debug("call \(interface).\(member) \(path)")
        // Sent before this returns: no hop, and nothing the caller sends next can overtake it.
        let id = connection.callAtOnce(destination: BlueZ.service, path: path, interface: interface, member: member, arguments: arguments,
                              timeout: timeout ?? options.operationTimeout + .seconds(1)) { result in
            // A switch, not `mapError`: a closure inside loop-isolated code pays a runtime check
            // of the executor, on every reply.
            switch result {
            case .success(let body):
                completion(.success(body))
            case .failure(let failure):
                let error = BleError.from(failure, operation: member, address: address)
                BleLog.debug("\(member) \(path) failed: \(error)")
                completion(.failure(error))
            }
        }
        return CallHandle(connection: connection, id: id)
    }
}
