import BleRuntime
import Foundation
import Synchronization

/// One `execute`: its phases as an explicit state machine, on the loop.
@BleLoop
final class ConnectionSession {
    enum Phase {
        case waitingForPower
        case scanning
        case connecting(Peripheral, attempt: Int)
        case connected(Peripheral)
        case waitingToReconnect(Peripheral, attempt: Int, lastError: Error?)
        /// `cancelConnect`: waiting for the disconnect to report it.
        case disconnecting(Peripheral)
        case ended
    }

    let id: Int
    let command: BleManagerCommand
    let handler: BleManager.Handler?
    var phase: Phase = .waitingForPower
    var discovered: [PeripheralInfo] = []
    var scanTimer: LoopTimer?
    var connectTimer: LoopTimer?
    var reconnectTimer: LoopTimer?
    var powerTimer: LoopTimer?
    /// A disconnect we asked for is reported without error and never reconnected.
    var disconnectRequested = false

    init(id: Int, command: BleManagerCommand, handler: BleManager.Handler?) {
        self.id = id
        self.command = command
        self.handler = handler
    }

    var peripheral: Peripheral? {
        switch phase {
        case .connecting(let peripheral, _), .connected(let peripheral), .waitingToReconnect(let peripheral, _, _),
             .disconnecting(let peripheral):
            return peripheral
        case .waitingForPower, .scanning, .ended:
            return nil
        }
    }

    var isScanning: Bool {
        if case .scanning = phase { return true }
        return false
    }

    var isPreConnection: Bool {
        switch phase {
        case .waitingForPower, .scanning, .connecting: return true
        default: return false
        }
    }

    func cancelTimers() {
        scanTimer?.cancel()
        connectTimer?.cancel()
        reconnectTimer?.cancel()
        powerTimer?.cancel()
        powerTimer = nil
        scanTimer = nil
        connectTimer = nil
        reconnectTimer = nil
    }
}

/// Routes central events to the sessions they belong to, on the loop; its two settings are
/// read and written from any thread (through `BleManager`).
@BleLoop
final class SessionRouter {
    private let central: BleCore.CentralManager
    /// Whether a replaced command's handler hears `.superseded` (see `BleManager.reportsSupersededCommands`).
    nonisolated let reportsSuperseded = Atomic<Bool>(false)
    /// The scan deadline of commands with a target and no `.scanTimeout` (see `BleManager.defaultScanTimeout`).
    nonisolated let defaultScanTimeout = Mutex<TimeInterval>(BleManagerCommand.defaultScanTimeout)
    private var sessions: [ConnectionSession] = []
    private var nextID = 1

    nonisolated init(central: BleCore.CentralManager) {
        self.central = central
    }

    // MARK: Start

    func start(command: BleManagerCommand, handler: BleManager.Handler?) {
        // One scan at a time: an older command still looking for its target is replaced.
        for session in sessions where session.isPreConnection {
            if case .connecting(let peripheral, _) = session.phase { central.cancelPeripheralConnection(peripheral) }
            // Silent by default, as on iOS, where FXBlueTooth simply drops the old handler: the
            // README flow (startScan, then connect) would otherwise print an error every time.
            BleLog.log(.info, "BleManager: a new execute replaced command \(session.id) before it connected")
            end(session, with: reportsSuperseded.load(ordering: .relaxed) ? .failure(.superseded) : nil)
        }
        central.stopScan()
        let session = ConnectionSession(id: nextID, command: command, handler: handler)
        nextID += 1
        sessions.append(session)

        if let target = command.cancelConnect {
            session.phase = .disconnecting(target)
            session.disconnectRequested = true
            // The disconnect listeners of the session that connected it hear it; this one too.
            for other in sessions where other !== session && other.peripheral === target { other.disconnectRequested = true }
            central.cancelPeripheralConnection(target)
            return
        }
        if case .peripheral(let peripheral)? = command.connect {
            return beginConnecting(session, to: peripheral, attempt: 1)
        }
        if case .uuid(let text, let services)? = command.connect, let known = retrieve(text, services: services) {
            return beginConnecting(session, to: known, attempt: 1)
        }
        waitForPower(session)
        stateChanged(central.state)
    }

    /// Commands wait for `poweredOn` (not only while the state is unknown), but not forever.
    private func waitForPower(_ session: ConnectionSession) {
        let seconds = session.command.powerOnTimeout ?? BleManagerCommand.defaultPowerOnTimeout
        guard seconds.isFinite, seconds >= 0 else { return }
        session.powerTimer = LoopTimer.scheduled(after: .milliseconds(Int64(seconds * 1000))) { [weak self, weak session] in
            guard let self, let session, case .waitingForPower = session.phase else { return }
            self.end(session, with: .failure(self.unavailable(self.central.state, waited: seconds)))
        }
    }

    /// The error for a state that is not `poweredOn`, naming its real cause.
    private func unavailable(_ state: ManagerState, waited: TimeInterval?) -> BleManagerError {
        if state == .unsupported || state == .unauthorized || state == .resetting || state == .unknown, let cause = central.stateError {
            return .bluetoothUnavailable(cause)
        }
        if state == .poweredOff, let waited { return .poweredOffTimeout(seconds: waited) }
        return .centralStateError(reason: SessionRouter.reason(state))
    }

    private func isConnecting(_ session: ConnectionSession) -> Bool {
        if case .connecting = session.phase { return true }
        return false
    }

    private func retrieve(_ text: String, services: [BluetoothUUID]?) -> Peripheral? {
        let wanted = text.uppercased()
        func matches(_ peripheral: Peripheral) -> Bool {
            peripheral.identifier.uuidString.uppercased() == wanted || peripheral.address.uppercased() == wanted
        }
        if let services, let connected = central.retrieveConnectedPeripherals(withServices: services).first(where: matches) {
            return connected
        }
        if let uuid = UUID(uuidString: text), let known = central.retrievePeripherals(withIdentifiers: [uuid]).first {
            return known
        }
        return nil
    }

    // MARK: State

    func stateChanged(_ state: ManagerState) {
        for session in sessions {
            switch session.phase {
            case .waitingForPower:
                switch state {
                case .poweredOn:
                    // BlueZ's known devices are loaded only now: a target named by identifier
                    // may be known without a scan (one that advertises once per scan start, or
                    // not at all while connected elsewhere, would never be found by scanning).
                    if case .uuid(let text, let services)? = session.command.connect, let known = retrieve(text, services: services) {
                        beginConnecting(session, to: known, attempt: 1)
                    } else {
                        startScanning(session)
                    }
                // Off may be switched on (README: commands wait for poweredOn); the power timer
                // ends the wait.
                case .unknown, .resetting, .poweredOff: continue
                default: end(session, with: .failure(unavailable(state, waited: nil)))
                }
            case .scanning where state != .poweredOn:
                if state == .resetting || state == .unknown {
                    // bluetoothd is restarting: scan again once it is back.
                    session.phase = .waitingForPower
                } else {
                    end(session, with: .failure(unavailable(state, waited: nil)))
                }
            default:
                continue
            }
        }
    }

    static func reason(_ state: ManagerState) -> BleManagerError.CentralStateReason {
        switch state {
        case .unknown: return .unknown
        case .resetting: return .resetting
        case .unsupported: return .unsupported
        case .unauthorized: return .unauthorized
        case .poweredOff: return .poweredOff
        default: return .unknown
        }
    }

    private func startScanning(_ session: ConnectionSession) {
        session.phase = .scanning
        session.powerTimer?.cancel()
        session.powerTimer = nil
        // The scan timeout counts scanning time, not the wait for the adapter to power on. A
        // command looking for a target never scans silently forever: without `.scanTimeout` it
        // gets the default deadline; `.scanTimeout(.infinity)` is the explicit "forever".
        let deadline = session.command.scanTimeout ?? (session.command.connect == nil ? nil : defaultScanTimeout.withLock { $0 })
        if let seconds = deadline, seconds.isFinite, session.scanTimer == nil {
            session.scanTimer = LoopTimer.scheduled(after: .milliseconds(Int64(seconds * 1000))) { [weak self, weak session] in
                guard let self, let session, session.isScanning else { return }
                self.central.stopScan()
                self.end(session, with: .failure(.scanTimeout(seconds: seconds)))
            }
        }
        central.scanForPeripherals(withServices: session.command.scanServices, options: session.command.scanOptions)
    }

    // MARK: Discovery

    func discovered(_ peripheral: Peripheral, _ advertisement: AdvertisementData, _ rssi: Int) {
        guard let session = sessions.first(where: { $0.isScanning }) else { return }
        let command = session.command
        if let existing = session.discovered.first(where: { $0.peripheral === peripheral }) {
            existing.update(advertisement: advertisement, rssi: NSNumber(value: rssi))
        } else {
            let info = PeripheralInfo(peripheral: peripheral, advertisement: advertisement, rssi: NSNumber(value: rssi))
            // A filter that returns nil drops the device (FXBlueTooth ≤0.4 kept it anyway).
            if let kept = command.filter.map({ $0.filter(peripheralInfo: info) }) ?? info {
                session.discovered.append(kept)
            } else {
                return
            }
        }
        command.discover?.discover(peripheralGroup: session.discovered)
        guard case .scanning = session.phase else { return }
        switch command.connect {
        case .uuid(let text, _)?:
            let wanted = text.uppercased()
            if let match = session.discovered.first(where: {
                $0.peripheral.identifier.uuidString.uppercased() == wanted || $0.peripheral.address.uppercased() == wanted
            }) {
                central.stopScan()
                beginConnecting(session, to: match.peripheral, attempt: 1)
            }
        case .predicate(let predicate)?:
            if let match = session.discovered.first(where: predicate) {
                central.stopScan()
                beginConnecting(session, to: match.peripheral, attempt: 1)
            }
        default:
            break
        }
    }

    // MARK: Connecting

    private func beginConnecting(_ session: ConnectionSession, to peripheral: Peripheral, attempt: Int) {
        session.phase = .connecting(peripheral, attempt: attempt)
        session.scanTimer?.cancel()
        session.scanTimer = nil
        session.powerTimer?.cancel()
        session.powerTimer = nil
        if let seconds = session.command.connectTimeout, seconds.isFinite {
            session.connectTimer?.cancel()
            session.connectTimer = LoopTimer.scheduled(after: .milliseconds(Int64(seconds * 1000))) { [weak self, weak session] in
                guard let self, let session, case .connecting(let pending, _) = session.phase, pending === peripheral else { return }
                // Cancelling through Disconnect also cancels BlueZ's pending Connect.
                self.central.cancelPeripheralConnection(peripheral)
                self.end(session, with: .failure(.centralConnectError(reason: .timeout(seconds: seconds))))
            }
        }
        central.connect(peripheral, options: session.command.connectInfo)
    }

    func connected(_ peripheral: Peripheral) {
        // Only the session whose target this is hears it.
        guard let session = sessions.first(where: {
            if case .connecting(let pending, _) = $0.phase { return pending === peripheral }
            return false
        }) else { return }
        session.connectTimer?.cancel()
        session.connectTimer = nil
        session.phase = .connected(peripheral)
        // The command's handler hears what discovery does not find, by UUID.
        if let device = session.command.handle as? PeripheralDevice {
            device.onMissingAttribute = { [weak session] missing in session?.handler?(.failure(.attributeNotFound(missing))) }
        }
        // Before the handler runs, so the handler sees it attached; this starts discovery.
        session.command.handle?.peripheral = peripheral
        session.handler?(.success(.connected(peripheral)))
    }

    func failedToConnect(_ peripheral: Peripheral, _ error: Error?) {
        guard let session = sessions.first(where: {
            if case .connecting(let pending, _) = $0.phase { return pending === peripheral }
            return false
        }), case .connecting(_, let attempt) = session.phase else { return }
        session.connectTimer?.cancel()
        session.connectTimer = nil
        if let policy = session.command.reconnect, attempt > 1 {
            return scheduleReconnect(session, peripheral, attempt: attempt, error: error, policy: policy)
        }
        end(session, with: .failure(.centralConnectError(reason: .failToConnect(error))))
    }

    // MARK: Disconnects

    func disconnected(_ peripheral: Peripheral, _ error: Error?) {
        for session in sessions where session.peripheral === peripheral {
            session.command.didDisConnect?.centralManager(central, didDisconnectPeripheral: peripheral, error: error)
            session.command.handle?.peripheralDidDisconnect(error: error)
            session.handler?(.success(.disconnected(peripheral, error: error)))
            switch session.phase {
            case .connected:
                if let policy = session.command.reconnect, !session.disconnectRequested {
                    scheduleReconnect(session, peripheral, attempt: 1, error: error, policy: policy)
                } else {
                    end(session, with: nil)
                }
            case .disconnecting:
                end(session, with: nil)
            default:
                continue
            }
        }
    }

    private func scheduleReconnect(_ session: ConnectionSession, _ peripheral: Peripheral, attempt: Int, error: Error?,
                                   policy: ReconnectPolicy) {
        guard attempt <= policy.maximumAttempts else {
            return end(session, with: .failure(.centralConnectError(reason: .reconnectExhausted(attempts: policy.maximumAttempts,
                                                                                                lastError: error))))
        }
        session.phase = .waitingToReconnect(peripheral, attempt: attempt, lastError: error)
        let delay = policy.delay(forAttempt: attempt)
        session.reconnectTimer = LoopTimer.scheduled(after: .milliseconds(Int64(delay * 1000))) { [weak self, weak session] in
            guard let self, let session, case .waitingToReconnect(let target, let attempt, _) = session.phase else { return }
            self.beginConnecting(session, to: target, attempt: attempt + 1)
        }
    }

    // MARK: Ending

    private func end(_ session: ConnectionSession, with result: Result<BleManager.Event, BleManagerError>?) {
        guard case .ended = session.phase else {
            session.phase = .ended
            session.cancelTimers()
            sessions.removeAll { $0 === session }
            if let result { session.handler?(result) }
            return
        }
    }

    func cancelAll() {
        central.stopScan()
        for session in sessions {
            switch session.phase {
            case .connecting(let peripheral, _), .connected(let peripheral), .waitingToReconnect(let peripheral, _, _):
                session.disconnectRequested = true
                central.cancelPeripheralConnection(peripheral)
                if case .connected = session.phase { continue }
                end(session, with: .failure(.superseded))
            default:
                end(session, with: .failure(.superseded))
            }
        }
    }
}
