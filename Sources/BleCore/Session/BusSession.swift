import BleDBus
import Foundation

/// What the bus session tells each of its clients, whatever role they play.
enum BusEvent {
    /// A change to BlueZ's objects (device, adapter, GATT), bluetoothd leaving or returning.
    case objects(CacheEvent)
    /// The bus connection closed under the session: nothing more will come.
    case busLost
}

/// The one BlueZ session of a bus in this process: one connection, one cache of BlueZ's
/// objects, and what bluetoothd keeps once per D-Bus sender (discovery sessions, StartNotify
/// sessions), shared by every central manager, peripheral manager and agent on that bus.
///
/// Clients (`BlueZSession`, one per manager) attach and detach; the first attach opens the
/// connection and the last detach closes it. A two-role app thus holds one connection and
/// one copy of BlueZ's objects, and bluetoothd sees one client.
@BleLoop
final class BusSession {
    /// Open sessions by bus; a detached-from-all session leaves at once.
    private static var open: [String: BusSession] = [:]

    private enum Phase {
        case opening([@BleLoop (Result<Void, BleError>) -> Void])
        case open
        case closed
    }

    let key: String
    private var phase: Phase = .opening([])
    private(set) var connection: Connection?
    private(set) var cache: ObjectCache?
    /// Attached clients, in attach order.
    private var clients: [BlueZSession] = []
    /// The clients that route peripherals (centrals): notifications go only to them.
    private var notificationRouters: [BlueZSession] = []
    /// How the last load ended, replayed to a client that attaches later.
    private var loadOutcome: CacheEvent?
    private var discoveries: [ObjectPath: DiscoveryShare] = [:]
    /// Object trees clients export for bluetoothd alone to call (see `acceptCallsOnlyFromBlueZ`).
    private var exportRoots: [ObjectIdentifier: [ObjectPath]] = [:]
    private var notifySessions: [ObjectPath: SenderClaim] = [:]
    /// AcquireNotify sockets held by a client of this session, shared with the others.
    private var acquiredNotify: [ObjectPath: AcquiredNotifyShare] = [:]

    private init(key: String) {
        self.key = key
    }

    /// Whether the connection closed (with its last client, or under the session).
    var isClosed: Bool {
        if case .closed = phase { return true }
        return false
    }

    /// Attaches `client` to its bus's session, opening the connection when it is the first.
    /// Throws the mapped error when the bus cannot be reached.
    /// `shared` false opens a session (a connection) for `client` alone.
    static func attach(_ client: BlueZSession, to bus: BleBus, shared: Bool = true) async throws(BleError) -> BusSession {
        let key = Self.key(bus)
        let session: BusSession
        if shared, let existing = open[key] {
            session = existing
        } else {
            session = BusSession(key: key)
            if shared { open[key] = session }
            Task { @BleLoop in await session.connect(bus) }
        }
        // A client before the bus answers: the last one to give up closes it.
        session.clients.append(client)
        do {
            try await session.whenOpen()
        } catch {
            session.clients.removeAll { $0 === client }
            throw error
        }
        return session
    }

    private static func key(_ bus: BleBus) -> String {
        switch bus {
        // The system bus is wherever DBUS_SYSTEM_BUS_ADDRESS says when the connection opens.
        case .system: return "system " + (ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "")
        case .address(let text): return text
        }
    }

    private func whenOpen() async throws(BleError) {
        let result: Result<Void, BleError> = await withCheckedContinuation { continuation in
            switch phase {
            case .open: continuation.resume(returning: .success(()))
            case .closed: continuation.resume(returning: .failure(.noBus("the D-Bus connection closed")))
            case .opening(var waiters):
                waiters.append { continuation.resume(returning: $0) }
                phase = .opening(waiters)
            }
        }
        try result.get()
    }

    private func connect(_ bus: BleBus) async {
        let address: BusAddress
        switch bus {
        case .system: address = .system
        case .address(let text): address = .address(text)
        }
        let result: Result<Void, BleError>
        do {
            let connection = try await Connection.open(address)
            adopt(connection)
            result = .success(())
        } catch {
            result = .failure(BleError.from(error, operation: "opening the bus"))
        }
        guard case .opening(let waiters) = phase else { return }
        if case .failure = result {
            phase = .closed
            Self.forget(self)
        } else {
            phase = .open
        }
        for waiter in waiters { waiter(result) }
        // Every client that asked gave up before the bus answered.
        if case .open = phase, clients.isEmpty { close() }
    }

    private func adopt(_ connection: Connection) {
        self.connection = connection
        if BleLog.level >= .trace {
            connection.tracer = { direction, message in
                BleLog.log(.trace, "\(direction == .sent ? "→" : "←") \(message)")
            }
        }
        connection.onDisconnect { [weak self] in
            guard let self, case .open = self.phase else { return }
            self.lost()
        }
        // One filter per connection: it guards the exports of every client.
        connection.objects.callFilter = { [weak self] call in self?.refusesCall(call) ?? false }
        let cache = ObjectCache(connection: connection)
        cache.onEvent = { [weak self] event in self?.cacheEvent(event) }
        cache.notificationRouter = self
        self.cache = cache
        do {
            try cache.start()
        } catch {
            // The signals cannot be watched: the cache never loads, and every client says why.
            loadOutcome = .loadFailed(BleError.from(error, operation: "subscribing to BlueZ's signals"))
        }
    }

    /// Tells a client that just attached how the load went so far: clients attached before
    /// heard it as it happened.
    func replayLoad(to client: BlueZSession) {
        if let loadOutcome, !client.heardLoadOutcome { client.busEvent(.objects(loadOutcome)) }
    }

    /// Detaches `client`: what it held is released, and the last client out closes the bus.
    func detach(_ client: BlueZSession) {
        let id = ObjectIdentifier(client)
        clients.removeAll { $0 === client }
        notificationRouters.removeAll { $0 === client }
        exportRoots.removeValue(forKey: id)
        for share in discoveries.values { share.claim.leaveAll(of: id) }
        for claim in notifySessions.values { claim.leaveAll(of: id) }
        if clients.isEmpty, case .open = phase { close() }
    }

    private func close() {
        phase = .closed
        Self.forget(self)
        cache?.stop()
        connection?.close()
    }

    private func lost() {
        phase = .closed
        Self.forget(self)
        let answers = forgetClaims(.noBus("the D-Bus connection closed"))
        for client in clients { client.busEvent(.busLost) }
        for answer in answers { answer() }
    }

    private static func forget(_ session: BusSession) {
        if open[session.key] === session { open.removeValue(forKey: session.key) }
    }

    // MARK: Exports

    /// Calls to objects under `roots` are answered only when they come from bluetoothd (the
    /// owner of `org.bluez`): another process on the bus must not play the daemon to a
    /// GATT application or an advertisement.
    func acceptCallsOnlyFromBlueZ(under roots: [ObjectPath], for client: BlueZSession) {
        exportRoots[ObjectIdentifier(client), default: []].append(contentsOf: roots)
    }

    private func refusesCall(_ call: IncomingCall) -> Bool {
        guard exportRoots.values.contains(where: { roots in roots.contains { call.path.isDescendant(of: $0, orEqual: true) } }) else {
            return false
        }
        let owner = cache?.owner ?? connection?.signals.currentOwner(of: BlueZ.service)
        if let owner, call.sender == owner { return false }
        BleLog.warning("refused \(call.member) on \(call.path) from \(call.sender): not the owner of org.bluez")
        call.fail(name: BlueZ.ErrorName.notAuthorized, message: BlueZ.ErrorMessage.notAuthorized)
        return true
    }

    // MARK: Events

    /// Makes `client` receive notifications (it routes peripherals).
    func routesNotifications(_ client: BlueZSession) {
        guard !notificationRouters.contains(where: { $0 === client }) else { return }
        notificationRouters.append(client)
    }

    private func cacheEvent(_ event: CacheEvent) {
        switch event {
        case .loaded, .loadFailed: loadOutcome = event
        case .daemonLost: loadOutcome = nil
        default: break
        }
        // What bluetoothd dropped by itself is forgotten before any client hears of it, so a
        // client's reaction (a new scan, a new subscription) asks bluetoothd again; those who
        // waited for it are answered after the clients heard why.
        let answers = releasedByBlueZ(event)
        for client in clients { client.busEvent(.objects(event)) }
        for answer in answers { answer() }
    }

    /// Forgets what bluetoothd dropped with `event`; returns the answers owed to its waiters.
    private func releasedByBlueZ(_ event: CacheEvent) -> [@BleLoop () -> Void] {
        switch event {
        case .daemonLost:
            return forgetClaims(.bluetoothRestarted)
        case .removed(let path, let interfaces, _):
            var answers: [@BleLoop () -> Void] = []
            if interfaces.contains(BlueZ.adapter), let share = discoveries.removeValue(forKey: path) { answers += share.claim.forget(.poweredOff) }
            if interfaces.contains(BlueZ.gattCharacteristic), let claim = notifySessions.removeValue(forKey: path) {
                answers += claim.forget(.attributeGone)
            }
            return answers
        case .changed(let path, BlueZ.adapter, let changed, _):
            guard let share = discoveries[path], share.claim.state == .held,
                  changed[BlueZ.Adapter1.discovering] == false || changed[BlueZ.Adapter1.powered] == false else { return [] }
            // Powered off, or discovery ended under us: bluetoothd holds no session of ours.
            return share.claim.forget(.notReady)
        default:
            return []
        }
    }

    private func forgetClaims(_ reason: BleError) -> [@BleLoop () -> Void] {
        let answers = discoveries.values.flatMap { $0.claim.forget(reason) } + notifySessions.values.flatMap { $0.forget(reason) }
        discoveries.removeAll()
        notifySessions.removeAll()
        acquiredNotify.removeAll()
        return answers
    }

    // MARK: Notifications (the hot path)

    /// A notification for the characteristic of the last one: delivered by the one router's
    /// fast path when there is one router; false sends it the long way.
    func deliverToLastNotified(_ path: ObjectPath, _ value: Data, cacheVersion: UInt64) -> Bool {
        guard notificationRouters.count == 1 else { return false }
        return notificationRouters[0].deliverToLastNotified(path, value, cacheVersion: cacheVersion)
    }

    /// A notification of a known characteristic, given to every router (each central of the
    /// process has its own peripheral object for the device).
    func routeNotification(_ path: ObjectPath, _ value: Data, cacheVersion: UInt64) {
        if notificationRouters.count == 1 {
            return notificationRouters[0].routeNotification(path, value, cacheVersion: cacheVersion)
        }
        for router in notificationRouters where !router.deliverToLastNotified(path, value, cacheVersion: cacheVersion) {
            router.routeNotification(path, value, cacheVersion: cacheVersion)
        }
    }

    // MARK: Per-sender state

    /// The shared discovery session of `adapter`.
    func discovery(on adapter: ObjectPath, timeout: Duration) -> DiscoveryShare {
        if let share = discoveries[adapter] { return share }
        let share = DiscoveryShare(adapter: adapter, bus: self, timeout: timeout)
        discoveries[adapter] = share
        return share
    }

    /// The shared StartNotify session of the characteristic at `path`.
    func notifySession(_ path: ObjectPath, timeout: Duration) -> SenderClaim {
        if let claim = notifySessions[path] { return claim }
        let claim = SenderClaim(acquire: { [weak self] done in
            guard let self else { return done(.failure(.noBus("not connected to the bus"))) }
            self.call(path, BlueZ.gattCharacteristic, BlueZ.GattCharacteristic1.Method.startNotify, timeout: timeout) { result in
                switch result {
                // InProgress: bluetoothd has a session of ours already (after a reconnect).
                case .success, .failure(.inProgress): done(.success(()))
                case .failure(let error): done(.failure(error))
                }
            }
        }, release: { [weak self] done in
            guard let self else { return done(.success(())) }
            self.call(path, BlueZ.gattCharacteristic, BlueZ.GattCharacteristic1.Method.stopNotify, timeout: timeout) { result in
                switch result {
                // "No notify session started", or no bus: nothing is held any more.
                case .success, .failure(.failed), .failure(.noBus), .failure(.bluetoothRestarted): done(.success(()))
                case .failure(let error): done(.failure(error))
                }
            }
        })
        notifySessions[path] = claim
        return claim
    }

    /// The share of the AcquireNotify socket a client holds for the characteristic at `path`,
    /// when its owner still holds it on a live link.
    func acquiredNotify(_ path: ObjectPath) -> AcquiredNotifyShare? {
        guard let share = acquiredNotify[path] else { return nil }
        guard share.owner.isLive else {
            acquiredNotify.removeValue(forKey: path)
            return nil
        }
        return share
    }

    /// Makes `owner` the holder of the socket of `path`: a new share, or `existing` (a share
    /// handed over with its riders).
    func ownAcquiredNotify(_ path: ObjectPath, _ owner: AcquiredNotifyShare.Member, existing: AcquiredNotifyShare?) -> AcquiredNotifyShare {
        let share = existing ?? AcquiredNotifyShare(path: path, owner: owner)
        acquiredNotify[path] = share
        return share
    }

    /// Forgets `share` (its socket closed).
    func dropAcquiredNotify(_ share: AcquiredNotifyShare) {
        if acquiredNotify[share.path] === share { acquiredNotify.removeValue(forKey: share.path) }
    }

    /// Calls a BlueZ method — every call of the process to bluetoothd on this bus, a client's
    /// (through `BlueZSession.call`) or a claim's; `completion` runs on the loop with the reply
    /// body or a mapped error (`address` names the device in a connection failure). Returns the
    /// call's handle, to abandon it; nil when none was sent.
    @discardableResult
    func call(_ path: ObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = [],
              timeout: Duration, address: String? = nil,
              completion: @escaping @BleLoop (Result<[DBusValue], BleError>) -> Void) -> CallHandle? {
        guard let connection, connection.isOpen, case .open = phase else {
            completion(.failure(.noBus("not connected to the bus")))
            return nil
        }
        guard cache?.owner != nil else { completion(.failure(.bluetoothRestarted)); return nil }
        BleLog.debug("call \(interface).\(member) \(path)")
        // Sent before this returns: no hop, and nothing the caller sends next can overtake it.
        let id = connection.callAtOnce(destination: BlueZ.service, path: path, interface: interface, member: member, arguments: arguments,
                                       timeout: timeout) { result in
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
