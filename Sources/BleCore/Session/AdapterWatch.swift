import BleDBus
import BlueZVocabulary
import Foundation

/// Which role an `AdapterWatch` chooses an adapter for: the roles prefer different adapters
/// when the app names none, and the peripheral role needs one that can serve GATT.
enum AdapterRole {
    /// Scans and connects: prefers a powered adapter that is not advertising (an adapter does
    /// not hear its own advertisements, so a peripheral on this machine would not be found).
    case central
    /// Serves and advertises: prefers a powered adapter that is not discovering (leaving it to
    /// a central on this machine), and needs `GattManager1` on it.
    case peripheral
}

/// What an `AdapterWatch` tells its manager, in the order things happened.
enum AdapterEvent {
    /// A fresh copy of BlueZ's objects was loaded (at start, or bluetoothd came back); the
    /// adapter is chosen and the state set before this arrives.
    case loaded
    /// bluetoothd left the bus: everything registered with it, and every link, is gone.
    case daemonLost
    /// The bus connection closed under the manager (`state` is `unsupported` for good).
    case busLost
    /// The adapter in use was removed (unplugged, or its driver unbound).
    case adapterRemoved(ObjectPath)
    /// This adapter is the one in use now (first choice, or a replacement).
    case adapterChosen(ObjectPath)
    /// The manager's state changed; `AdapterWatch.stateError` says why when it is not `poweredOn`.
    case stateChanged(from: ManagerState, to: ManagerState)
}

/// One manager's view of its adapter and of bluetoothd: which adapter it uses, whether that is
/// powered (and powering it on when asked), the daemon leaving and returning, and how long an
/// absence may last before the state says bluetoothd is gone. Both roles use it, so they agree
/// on every state (issue 27: the lifecycle was written twice and had drifted).
///
/// It listens to the session's cache events (`handle(_:)`, the one function that changes it) and
/// tells its manager through `onEvent`.
@BleLoop
final class AdapterWatch {
    /// What the app asked for.
    struct Configuration {
        /// The adapter by name (`hci1`) or address; nil chooses one by `role`.
        var wanted: String?
        /// Sets `Powered=true` when the adapter is off.
        var powerOn: Bool
        /// How long `resetting` lasts after bluetoothd left before the state is `unsupported`.
        var returnTimeout: Duration
        var role: AdapterRole
    }

    let configuration: Configuration
    /// Weak: the manager owns both, and peripherals keep the session after the manager is gone.
    private weak var session: BlueZSession?
    /// Receives every event (the manager's handler).
    var onEvent: (@BleLoop (AdapterEvent) -> Void)?

    private(set) var adapterPath: ObjectPath?
    private(set) var state: ManagerState = .unknown
    /// Why the state is not `poweredOn`, when there is more to say than the state.
    private(set) var stateError: BleError?
    /// Retries a failed GetManagedObjects while bluetoothd is on the bus.
    private var loadRetry: LoopTimer?
    /// Runs while bluetoothd is away: `resetting` turns into `unsupported` when it fires.
    private var daemonAbsence: LoopTimer?
    private var stopped = false

    nonisolated init(session: BlueZSession, configuration: Configuration) {
        self.session = session
        self.configuration = configuration
    }

    /// Timers that are running (for diagnostics).
    var activeTimers: Int { [loadRetry, daemonAbsence, powerOnGrace].filter { $0?.isActive == true }.count }

    /// The adapter's address, when one is in use.
    var adapterAddress: String? {
        adapterPath.flatMap { session?.cache?.properties($0, BlueZ.adapter)?[BlueZ.Adapter1.address] }
    }

    // MARK: Events

    /// Follows one of the cache's events.
    func handle(_ event: CacheEvent) {
        guard !stopped else { return }
        switch event {
        case .notified:
            break
        case .loaded:
            loadRetry?.cancel()
            daemonAbsence?.cancel()
            daemonAbsence = nil
            stateError = nil
            chooseAdapter()
            onEvent?(.loaded)
        case .loadFailed(let error):
            stateError = error
            if case .accessDenied = error { return setState(.unauthorized) }
            setState(.unsupported)
            // A daemon that just claimed its name may not answer GetManagedObjects yet; try
            // again while it is on the bus.
            loadRetry = LoopTimer.scheduled(after: .seconds(1)) { [weak self] in self?.session?.cache?.reload() }
        case .daemonLost:
            adapterPath = nil
            power = .idle
            setState(.resetting)
            onEvent?(.daemonLost)
            watchDaemonAbsence()
        case .added(_, let interfaces):
            if interfaces.contains(BlueZ.adapter) || interfaces.contains(BlueZ.GattManager1.interface) { chooseAdapter() }
        case .removed(let path, let interfaces, _):
            guard interfaces.contains(BlueZ.adapter), path == adapterPath else { break }
            adapterPath = nil
            power = .idle
            onEvent?(.adapterRemoved(path))
            chooseAdapter()
        case .changed(let path, let interface, let changed, _):
            guard interface == BlueZ.adapter, path == adapterPath,
                  BlueZ.Adapter1.powered.isPresent(in: changed) || BlueZ.Adapter1.powerState.isPresent(in: changed) else { break }
            updateState()
        }
    }

    /// The bus could not be opened, or closed under the manager: `unsupported`, saying why.
    func busFailed(_ error: BleError, lost: Bool) {
        guard !stopped else { return }
        daemonAbsence?.cancel()
        loadRetry?.cancel()
        if lost {
            adapterPath = nil
            onEvent?(.busLost)
        }
        stateError = error
        setState(.unsupported)
    }

    /// The manager closed: no more events, no more timers.
    func stop() {
        stopped = true
        powerOnGrace?.cancel()
        daemonAbsence?.cancel()
        loadRetry?.cancel()
    }

    // MARK: Choosing and powering

    private func chooseAdapter() {
        guard let cache = session?.cache, cache.isLoaded else { return }
        let adapters = cache.all(with: BlueZ.adapter)
        if let current = adapterPath, adapters.contains(current) { return updateState() }
        func powered(_ path: ObjectPath) -> Bool { cache.properties(path, BlueZ.adapter)?[BlueZ.Adapter1.powered] == true }
        if let wanted = configuration.wanted?.uppercased() {
            adapterPath = adapters.first {
                $0.lastElement.uppercased() == wanted || cache.properties($0, BlueZ.adapter)?[BlueZ.Adapter1.address]?.uppercased() == wanted
            }
        } else {
            let busy: (ObjectPath) -> Bool
            switch configuration.role {
            case .central:
                busy = { (cache.properties($0, BlueZ.LEAdvertisingManager1.interface)?[BlueZ.LEAdvertisingManager1.activeInstances] ?? 0) > 0 }
            case .peripheral:
                busy = { cache.properties($0, BlueZ.adapter)?[BlueZ.Adapter1.discovering] == true }
            }
            adapterPath = adapters.first { powered($0) && !busy($0) } ?? adapters.first(where: powered) ?? adapters.first
        }
        if let adapterPath {
            BleLog.info("\(configuration.role == .central ? "central" : "peripheral manager") using adapter \(adapterPath)")
        }
        updateState()
        if let adapterPath { onEvent?(.adapterChosen(adapterPath)) }
    }

    private func updateState() {
        guard let cache = session?.cache, cache.isLoaded else { return }
        guard let adapterPath, let properties = cache.properties(adapterPath, BlueZ.adapter) else {
            stateError = nil
            return setState(.unsupported)
        }
        if configuration.role == .peripheral, cache.properties(adapterPath, BlueZ.GattManager1.interface) == nil {
            stateError = .operationNotSupported("the adapter \(adapterPath.lastElement) has no GattManager1 (no LE peripheral role)")
            return setState(.unsupported)
        }
        // PowerState exists only with experimental features (5.66 has none); Powered decides otherwise.
        let powerState = properties[BlueZ.Adapter1.powerState]
        let powered = properties[BlueZ.Adapter1.powered] == true && (powerState == nil || powerState == BlueZ.Adapter1.PowerStateValue.on)
        if powered {
            power = .idle
            powerOnGrace?.cancel()
            stateError = nil
            return setState(.poweredOn)
        }
        switch power {
        case .idle where configuration.powerOn && powerState != BlueZ.Adapter1.PowerStateValue.offBlocked:
            powerOn(adapterPath)
            // Starting (or back from resetting): the state waits for bluetoothd's answer
            // instead of saying poweredOff for the moment it takes, which a caller waiting for
            // poweredOn would take as the verdict. An adapter that was on and went off says so.
            if state == .poweredOn || state == .poweredOff { setState(.poweredOff) }
        case .poweringOn:
            break
        case .idle:
            stateError = nil
            setState(.poweredOff)
        case .answered:
            // Still off after BleKit asked: stateError keeps bluetoothd's refusal, if it gave one.
            setState(.poweredOff)
        }
    }

    /// Where a power-on this watch asked for is.
    private enum PowerRequest {
        case idle
        /// `Set Powered=true` sent, no answer yet.
        case poweringOn
        /// Answered (refused, or accepted and the adapter stayed off): not asked again until the
        /// adapter was on once, so a controller that will not power on is no loop of calls.
        case answered
    }

    private var power = PowerRequest.idle

    private func powerOn(_ adapterPath: ObjectPath) {
        power = .poweringOn
        session?.call(adapterPath, BlueZ.properties, FreedesktopDBus.Properties.set,
                      [.string(BlueZ.adapter), .string(BlueZ.Adapter1.powered.name), .variant(BlueZ.Adapter1.powered.encode(true))]) { [weak self] result in
            guard let self, case .poweringOn = self.power, self.adapterPath == adapterPath else { return }
            switch result {
            case .failure(let error):
                BleLog.warning("could not power on \(adapterPath): \(error)")
                self.stateError = error
                self.power = .answered
                self.updateState()
            case .success:
                // bluetoothd replies before it announces Powered=true (adapter.c emits the
                // property from an idle callback after the reply): wait for it, not forever.
                self.powerOnGrace = LoopTimer.scheduled(after: Self.powerOnGrace) { [weak self] in
                    guard let self, case .poweringOn = self.power else { return }
                    self.power = .answered
                    self.stateError = .failed("bluetoothd accepted Powered=true for \(adapterPath.lastElement), but the adapter stayed off")
                    self.updateState()
                }
            }
        }
    }

    /// How long Powered=true may take to show after bluetoothd accepted it.
    static let powerOnGrace = Duration.seconds(5)
    private var powerOnGrace: LoopTimer?

    private func setState(_ newState: ManagerState) {
        guard newState != state else { return }
        let previous = state
        state = newState
        onEvent?(.stateChanged(from: previous, to: newState))
    }

    /// bluetoothd does not come back on its own (not restarted, not installed): after
    /// `returnTimeout` the state says so instead of `resetting` forever.
    private func watchDaemonAbsence() {
        daemonAbsence?.cancel()
        let limit = configuration.returnTimeout
        daemonAbsence = LoopTimer.scheduled(after: limit) { [weak self] in
            guard let self, !self.stopped, self.state == .resetting else { return }
            self.daemonAbsence = nil
            self.stateError = .serviceUnknown("bluetoothd left the bus and has not returned within \(limit)")
            self.setState(.unsupported)
        }
    }
}
