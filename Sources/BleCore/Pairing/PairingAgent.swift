import BleDBus
import BlueZVocabulary
import Dispatch
import Foundation

// @unchecked: an any-thread facade (see ThreadingModel.md); its mutable state is @BleLoop-
// isolated or behind a lock.
/// An opt-in pairing agent: BleKit's `org.bluez.Agent1` object, registered with bluetoothd's
/// `AgentManager1`, that hands each of bluetoothd's questions (passkey entry and display,
/// numeric comparison, authorization, service authorization) to `delegate` as a
/// `PairingRequest`, answered exactly once.
///
/// ```swift
/// let agent = PairingAgent(central: central, capability: .displayYesNo, delegate: self)
/// agent.start()
/// // func pairingAgent(_ agent: PairingAgent, didReceive request: PairingRequest) {
/// //     if case .confirmation(let passkey) = request.kind, userConfirms(passkey) { request.accept() } else { request.reject() }
/// // }
/// ```
///
/// Without a delegate (or with the default implementation) every request is refused, so an
/// agent never pairs anything the app did not decide on. Unanswered requests end after
/// `requestTimeout` with `org.bluez.Error.Canceled`.
///
/// Security: the agent answers method calls only from the current owner of `org.bluez`; any
/// other sender gets `org.bluez.Error.NotAuthorized` and nothing changes. When bluetoothd
/// restarts, the agent registers again by itself (`didRegister` follows each time).
///
/// Which agent bluetoothd asks: a `Pair` uses the agent registered on the caller's bus
/// connection, else the default agent; requests for pairings a peer starts (this machine is
/// the responder) go to the default agent. So an agent made with `init(central:)` answers the
/// central's own `pair()`; a process that serves (peripheral role) should pass
/// `makeDefault: true`. CoreBluetooth has no counterpart: on iOS pairing is system UI.
public final class PairingAgent: @unchecked Sendable {
    /// The IO capability registered with bluetoothd.
    public let capability: IOCapability
    /// The object path the agent is exported at.
    public let objectPath: String
    /// Whether it asks to be bluetoothd's default agent after registering.
    public let makesDefault: Bool
    /// How long a request may stay unanswered before it is answered `Canceled`. Keep it under
    /// bluetoothd's own agent timeout and SMP's 30 s.
    public let requestTimeout: Duration

    private let delegateBox = Locked<WeakDelegate>(WeakDelegate())
    private struct WeakDelegate { weak var value: PairingAgentDelegate? }

    /// Receives requests and events (held weakly). Nil: every request is refused.
    public var delegate: PairingAgentDelegate? {
        get { delegateBox.value.value }
        set { delegateBox.value = WeakDelegate(value: newValue) }
    }

    /// True while bluetoothd has the agent registered.
    public var isRegistered: Bool { registered.value }

    let session: BlueZSession
    private let ownsSession: Bool
    private let registered = Locked(false)
    private let path: ObjectPath
    @BleLoop private var running = false
    @BleLoop private var exported = false
    @BleLoop private var ownerWatch: SignalSubscription?
    @BleLoop private var blueZOwner: String?
    @BleLoop private var generation = 0
    @BleLoop private var pending: [PairingRequest] = []
    @BleLoop private var registerRetry: LoopTimer?
    /// bluetoothd called `Release`: it no longer has the agent, so nothing may ask it anything
    /// until it registers again.
    @BleLoop private var released = false

    private static let counter = Locked(0)

    /// An agent on `central`'s bus connection: bluetoothd asks it about the central's own
    /// `pair()` calls (and, when it is the default agent, about incoming pairings).
    public convenience init(central: CentralManager, capability: IOCapability = .keyboardDisplay,
                            delegate: PairingAgentDelegate? = nil, makeDefault: Bool = false,
                            requestTimeout: Duration = .seconds(25)) {
        self.init(session: central.session, ownsSession: false, capability: capability, delegate: delegate,
                  makeDefault: makeDefault, requestTimeout: requestTimeout)
    }

    /// An agent on a bus connection of its own (for a process without a central, e.g. one that
    /// only serves); it is the default agent unless `makeDefault` is false.
    ///
    /// - Parameters:
    ///   - options: which bus (the adapter and timeouts are not used).
    ///   - queue: where delegate callbacks run; nil means BleKit's loop thread.
    ///   - capability: what the agent can show and enter, which decides the pairing method.
    ///   - delegate: answers the requests (the default refuses them).
    ///   - makeDefault: whether bluetoothd asks it about pairings it did not start.
    ///   - requestTimeout: how long a request may wait for its answer before it is cancelled.
    public convenience init(options: CentralManagerOptions = CentralManagerOptions(), queue: DispatchQueue? = nil,
                            capability: IOCapability = .keyboardDisplay, delegate: PairingAgentDelegate? = nil,
                            makeDefault: Bool = true, requestTimeout: Duration = .seconds(25)) {
        self.init(session: BlueZSession(options: options, callbacks: CallbackQueue(queue: queue), sharesBus: false), ownsSession: true,
                  capability: capability, delegate: delegate, makeDefault: makeDefault, requestTimeout: requestTimeout)
    }

    /// An agent on an existing session (the peripheral role makes its own this way).
    init(session: BlueZSession, ownsSession: Bool, capability: IOCapability, delegate: PairingAgentDelegate?,
         makeDefault: Bool, requestTimeout: Duration) {
        self.session = session
        self.ownsSession = ownsSession
        self.capability = capability
        self.makesDefault = makeDefault
        self.requestTimeout = requestTimeout
        let number = Self.counter.withLock { value -> Int in
            value += 1
            return value
        }
        // Digits after a fixed prefix: always a valid path.
        path = (try? ObjectPath("/org/blekit/agent\(number)")) ?? "/org/blekit/agent"
        objectPath = path.rawValue
        delegateBox.value = WeakDelegate(value: delegate)
    }

    deinit {
        let session = self.session
        let owns = ownsSession
        let path = self.path
        let wasRegistered = registered.value
        // Released by the app: bluetoothd must not keep calling an object that is gone.
        LoopBridge.async {
            if wasRegistered {
                session.call(BlueZ.rootPath, BlueZ.AgentManager1.interface, BlueZ.AgentManager1.Method.unregisterAgent,
                             [.objectPath(path)]) { _ in }
            }
            session.connection?.objects.unregister(path)
            if owns { session.close(.cancelled) }
        }
    }

    // MARK: Public operations

    /// Exports the agent and registers it with bluetoothd (now, or when bluetoothd appears),
    /// and again after every bluetoothd restart. `didRegister` follows each registration.
    public func start() {
        LoopBridge.async { self.startOnLoop() }
    }

    /// Unregisters the agent and stops answering; pending requests are answered `Canceled`.
    public func stop() {
        LoopBridge.async { self.stopOnLoop() }
    }

    // MARK: - Loop side

    @BleLoop private func startOnLoop() {
        guard !running else { return }
        running = true
        if ownsSession {
            Task { @BleLoop in
                do {
                    try await self.session.open()
                } catch {
                    self.emit { $0.pairingAgent(self, didRegister: error) }
                }
            }
        }
        session.whenOpen { [weak self] in self?.sessionOpened() }
    }

    @BleLoop private func sessionOpened() {
        guard running, let connection = session.connection else { return }
        if !exported {
            connection.objects.register(path, interfaces: [agentInterface()])
            exported = true
        }
        do {
            ownerWatch = try connection.signals.watchName(BlueZ.service) { [weak self] owner in self?.ownerChanged(owner) }
        } catch {
            emit { $0.pairingAgent(self, didRegister: BleError.from(error, operation: "watching org.bluez")) }
        }
    }

    @BleLoop private func stopOnLoop() {
        guard running else { return }
        running = false
        generation += 1
        registerRetry?.cancel()
        registerRetry = nil
        ownerWatch?.cancel()
        ownerWatch = nil
        cancelPending(reason: "The agent stopped")
        if registered.value {
            registered.value = false
            session.call(BlueZ.rootPath, BlueZ.AgentManager1.interface, BlueZ.AgentManager1.Method.unregisterAgent,
                         [.objectPath(path)]) { result in
                if case .failure(let error) = result { BleLog.debug("UnregisterAgent: \(error)") }
            }
        }
        if exported {
            session.connection?.objects.unregister(path)
            exported = false
        }
        if ownsSession { session.close(.cancelled) }
    }

    @BleLoop private func ownerChanged(_ owner: String?) {
        guard running else { return }
        let previous = blueZOwner
        blueZOwner = owner
        guard owner != previous else { return }
        if previous != nil {
            // bluetoothd left: its registration went with it.
            generation += 1
            cancelPending(reason: "bluetoothd left the bus")
            if registered.value {
                registered.value = false
                emit { $0.pairingAgentWasReleased(self) }
            }
        }
        if owner != nil { register(attempt: 0) }
    }

    @BleLoop private func register(attempt: Int) {
        guard running, let connection = session.connection, let owner = blueZOwner else { return }
        generation += 1
        let current = generation
        connection.callAtOnce(destination: BlueZ.service, path: BlueZ.rootPath, interface: BlueZ.AgentManager1.interface,
                              member: BlueZ.AgentManager1.Method.registerAgent,
                              arguments: [.objectPath(path), .string(capability.rawValue)],
                              timeout: session.options.operationTimeout) { [weak self] result in
            guard let self, self.running, self.generation == current, self.blueZOwner == owner else { return }
            switch result {
            case .success:
                guard self.makesDefault else { return self.registrationDone(nil) }
                connection.callAtOnce(destination: BlueZ.service, path: BlueZ.rootPath, interface: BlueZ.AgentManager1.interface,
                                      member: BlueZ.AgentManager1.Method.requestDefaultAgent, arguments: [.objectPath(self.path)],
                                      timeout: self.session.options.operationTimeout) { [weak self] result in
                    guard let self, self.running, self.generation == current else { return }
                    // Registered either way; not being the default only narrows what it is asked.
                    self.registrationDone(nil)
                    if case .failure(let error) = result { BleLog.warning("RequestDefaultAgent failed: \(error)") }
                }
            case .failure(let error):
                let mapped = BleError.from(error, operation: BlueZ.AgentManager1.Method.registerAgent)
                // A daemon that just took its name may not export AgentManager1 yet.
                if case .remote(let name, _) = error, name.hasPrefix(FreedesktopDBus.ErrorName.unknownPrefix), attempt < 5 {
                    self.registerRetry = LoopTimer.scheduled(after: .milliseconds(200)) { [weak self] in
                        self?.register(attempt: attempt + 1)
                    }
                    return
                }
                BleLog.warning("RegisterAgent failed: \(mapped)")
                self.emit { $0.pairingAgent(self, didRegister: mapped) }
            }
        }
    }

    @BleLoop private func registrationDone(_ error: BleError?) {
        registered.value = error == nil
        if error == nil { released = false }
        BleLog.info("pairing agent \(path) registered (\(capability.rawValue)\(makesDefault ? ", default" : ""))")
        emit { $0.pairingAgent(self, didRegister: error) }
    }

    @BleLoop private func emit(_ body: @escaping @Sendable (PairingAgentDelegate) -> Void) {
        let target = Unchecked(delegate)
        guard target.value != nil else { return }
        session.callbacks.deliver { if let delegate = target.value { body(delegate) } }
    }

    // MARK: The exported object

    @BleLoop private func agentInterface() -> ExportedInterface {
        typealias M = BlueZ.Agent1.Method
        let device = ArgumentDescription("device", .objectPath)
        return ExportedInterface(BlueZ.Agent1.interface, methods: [
            ExportedMethod(M.release) { [weak self] call in self?.guarded(call) { $0.releaseArrived(call) } },
            ExportedMethod(M.requestPinCode, in: [device], out: [ArgumentDescription("pincode", .string)]) { [weak self] call in
                self?.guarded(call) { $0.deliver(.pinCode, call) }
            },
            ExportedMethod(M.displayPinCode, in: [device, ArgumentDescription("pincode", .string)]) { [weak self] call in
                self?.guarded(call) { agent in
                    guard case .string(let code) = call.arguments[1] else { return }
                    agent.deliver(.displayPinCode(code), call)
                }
            },
            ExportedMethod(M.requestPasskey, in: [device], out: [ArgumentDescription("passkey", .uint32)]) { [weak self] call in
                self?.guarded(call) { $0.deliver(.passkey, call) }
            },
            ExportedMethod(M.displayPasskey, in: [device, ArgumentDescription("passkey", .uint32), ArgumentDescription("entered", .uint16)]) {
                [weak self] call in
                self?.guarded(call) { agent in
                    guard case .uint32(let passkey) = call.arguments[1], case .uint16(let entered) = call.arguments[2] else { return }
                    agent.deliver(.displayPasskey(passkey: passkey, entered: entered), call)
                }
            },
            ExportedMethod(M.requestConfirmation, in: [device, ArgumentDescription("passkey", .uint32)]) { [weak self] call in
                self?.guarded(call) { agent in
                    guard case .uint32(let passkey) = call.arguments[1] else { return }
                    agent.deliver(.confirmation(passkey: passkey), call)
                }
            },
            ExportedMethod(M.requestAuthorization, in: [device]) { [weak self] call in
                self?.guarded(call) { $0.deliver(.authorization, call) }
            },
            ExportedMethod(M.authorizeService, in: [device, ArgumentDescription("uuid", .string)]) { [weak self] call in
                self?.guarded(call) { agent in
                    guard case .string(let uuid) = call.arguments[1] else { return }
                    agent.deliver(.serviceAuthorization(uuid: uuid.lowercased()), call)
                }
            },
            ExportedMethod(M.cancel) { [weak self] call in self?.guarded(call) { $0.bluetoothdCanceled(call) } },
        ])
    }

    /// Only bluetoothd may drive the agent: a call from any other sender is refused before it
    /// can change anything (a local process could otherwise confirm a pairing for the user).
    @BleLoop private func guarded(_ call: IncomingCall, _ body: @BleLoop (PairingAgent) -> Void) {
        let owner = blueZOwner ?? session.connection?.signals.currentOwner(of: BlueZ.service)
        guard running, let owner, call.sender == owner else {
            BleLog.warning("pairing agent: refused \(call.member) from \(call.sender), which is not org.bluez's owner")
            return call.fail(name: BlueZ.ErrorName.notAuthorized, message: "Only org.bluez may call this agent")
        }
        // After Release bluetoothd holds no registration: a request now is not bluetoothd's
        // (or is a broken one's) and must not reach the app as a pairing to decide.
        guard !released || call.member == BlueZ.Agent1.Method.release else {
            BleLog.warning("pairing agent: refused \(call.member) after bluetoothd released the agent")
            return call.fail(name: BlueZ.Agent1.ErrorName.rejected, message: "The agent was released by bluetoothd and is not registered")
        }
        body(self)
    }

    @BleLoop private func deliver(_ kind: PairingRequest.Kind, _ call: IncomingCall) {
        guard case .objectPath(let devicePath)? = call.arguments.first else {
            return call.fail(name: BlueZ.Agent1.ErrorName.rejected, message: "No device")
        }
        let address = session.cache?.properties(devicePath, BlueZ.device)?[BlueZ.Device1.address]
            ?? BlueZ.Paths.address(fromDeviceElement: String(devicePath.lastElement))
        let peripheral = session.central?.peripheral(at: devicePath)
        let request = PairingRequest(kind: kind, call: call, deviceAddress: address, peripheral: peripheral)
        BleLog.info("pairing agent: \(kind) for \(address ?? devicePath.rawValue)")
        if case .displayPasskey = kind {
            // Shown, not asked: bluetoothd expects no answer and waits for none.
            request.answerOnLoop(.accepted, text: "")
        } else {
            pending.append(request)
            request.onDeadline = { [weak self, weak request] in
                guard let self, let request else { return }
                self.pending.removeAll { $0 === request }
                self.emit { $0.pairingAgent(self, didCancel: request) }
            }
            request.arm(timeout: requestTimeout)
        }
        let target = Unchecked(delegate)
        guard target.value != nil else {
            // No decision maker: refuse, as bluetoothd does without an agent.
            request.answerOnLoop(.rejected, text: "No handler for pairing requests")
            pending.removeAll { $0 === request }
            return
        }
        session.callbacks.deliver { target.value?.pairingAgent(self, didReceive: request) }
        pending.removeAll { $0.isAnswered }
    }

    @BleLoop private func bluetoothdCanceled(_ call: IncomingCall) {
        call.reply()
        cancelPending(reason: "Canceled by bluetoothd")
    }

    @BleLoop private func releaseArrived(_ call: IncomingCall) {
        call.reply()
        released = true
        generation += 1
        cancelPending(reason: "Released by bluetoothd")
        guard registered.value else { return }
        registered.value = false
        emit { $0.pairingAgentWasReleased(self) }
    }

    @BleLoop private func cancelPending(reason: String) {
        let open = pending.filter { !$0.isAnswered }
        pending.removeAll()
        for request in open {
            request.answerOnLoop(.canceled, text: reason)
            emit { $0.pairingAgent(self, didCancel: request) }
        }
    }
}

extension PairingAgent {
    /// An agent for `peripheralManager`'s bus, by default the default agent: a serving process
    /// is the responder, and bluetoothd asks the default agent about pairings a central starts.
    ///
    /// It is a D-Bus client of its own to bluetoothd (its own connection), which keeps one agent
    /// per client: the process's managers share one client, whose agent slot belongs to a
    /// central's agent (`init(central:)`), the one bluetoothd asks about that central's `pair()`.
    public convenience init(peripheralManager: PeripheralManager, capability: IOCapability = .keyboardDisplay,
                            delegate: PairingAgentDelegate? = nil, makeDefault: Bool = true,
                            requestTimeout: Duration = .seconds(25)) {
        let serving = peripheralManager.session
        self.init(session: BlueZSession(options: serving.options, callbacks: serving.callbacks, sharesBus: false), ownsSession: true,
                  capability: capability, delegate: delegate, makeDefault: makeDefault, requestTimeout: requestTimeout)
    }
}
