import CDBus
import CGLib
import Foundation

/// A connection to a D-Bus bus, served by the shared GLib main loop.
///
/// Open one with `Connection.open(_:)`. Calls, signals and exported objects all go through it;
/// everything it does happens on `BleLoop`, so its state needs no locks. Completion-handler
/// variants may be called from any thread; their completions run on the loop thread.
@BleLoop
public final class Connection {
    /// The default deadline of a method call: well under libdbus's 25 s, because a BlueZ call
    /// that has not answered in 10 s is stuck and the caller should hear so.
    public static let standardTimeout: Duration = .seconds(10)

    /// What one traced message was.
    public enum TraceDirection: Sendable {
        /// We sent it.
        case sent
        /// We received it.
        case received
    }

    /// The address this connection was opened on.
    public nonisolated let address: String
    /// Our unique name on the bus (`:1.42`), known once `open` returns.
    public private(set) var uniqueName: String = ""
    /// The deadline of calls that do not give one.
    public var defaultTimeout: Duration = Connection.standardTimeout
    /// How many calls may await replies at once; later calls queue here. dbus-daemon refuses a
    /// connection more than 128 pending replies by default.
    public var maximumPendingCalls = 120
    /// Sees every message sent and received, for tests and debugging; nil costs nothing.
    public var tracer: (@BleLoop (TraceDirection, DBusMessage) -> Void)?

    /// True until the bus went away or `close()` was called.
    public var isOpen: Bool { state != .closed }

    /// Signal subscriptions and name-owner tracking.
    public private(set) lazy var signals = SignalRouter(connection: self)
    /// Objects this connection exports.
    public private(set) lazy var objects = ObjectRegistry(connection: self)

    private enum State: Equatable {
        case opening
        case open
        case closed
    }

    private var state: State = .opening
    nonisolated(unsafe) private let raw: OpaquePointer
    private var integration: LoopIntegration?
    // The call bookkeeping below is touched several times per call and per reply. Its dynamic
    // exclusivity checks (a thread-local access set, ~100 instructions each, a tenth of the
    // Swift side of a GATT round trip) are turned off: the state is confined to the loop
    // thread, and each use is a plain read or one mutation of a collection that never calls
    // out while it is being changed (completions run after the collections are updated).
    @exclusivity(unchecked) private var pendingCalls: [UInt32: PendingCall] = [:]
    @exclusivity(unchecked) private var queuedCalls: [PendingCall] = []
    @exclusivity(unchecked) private var callsByID: [UInt64: PendingCall] = [:]
    /// The deadlines of the calls in `callsByID` (and of some finished ones, dropped lazily).
    @exclusivity(unchecked) private var deadlines = DeadlineHeap<UInt64>()
    private var deadlineTimer: LoopTimer?
    /// The deadline `deadlineTimer` fires for.
    @exclusivity(unchecked) private var armedDeadline: Int?
    @exclusivity(unchecked) private var nextCallID: UInt64 = 1
    @exclusivity(unchecked) private var timeoutMemo = MicrosecondsMemo()
    private var dispatchScheduled = false
    private var disconnectHandlers: [UInt64: @BleLoop () -> Void] = [:]
    private var nextDisconnectHandlerID: UInt64 = 1
    /// Strings of received messages, reused by the next ones (see `StringCache`).
    @exclusivity(unchecked) private var receivedStrings = StringCache()
    /// Names this connection sent before (see `ValidatedNames`).
    @exclusivity(unchecked) private var sentNames = ValidatedNames()
    /// Headers of the method calls this connection made last (see `MessageTemplates`).
    @exclusivity(unchecked) private var sentTemplates = MessageTemplates()

    private init(raw: OpaquePointer, address: String) {
        self.raw = raw
        self.address = address
    }

    /// Opens a connection and registers on the bus (the `Hello` call), without blocking the
    /// loop: the socket connect is local and authentication runs through the loop.
    ///
    /// Fails with `.cannotConnect` when the bus is unreachable or refuses us.
    public static func open(_ bus: BusAddress, timeout: Duration = .seconds(10)) async throws(DBusError) -> Connection {
        let address = try bus.resolve()
        dbus_threads_init_default()
        let error = DBusErrorBox()
        guard let raw = dbus_connection_open_private(address, &error.raw) else {
            throw .cannotConnect(address: address, detail: error.isSet ? error.message : "unknown error")
        }
        // A library must never end its host process because a bus went away.
        dbus_connection_set_exit_on_disconnect(raw, 0)
        let connection = Connection(raw: raw, address: address)
        connection.attach()
        do throws(DBusError) {
            let reply = try await connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                  interface: "org.freedesktop.DBus", member: "Hello", timeout: timeout)
            let name: String
            do {
                name = try reply.argument(0, as: String.self)
            } catch {
                throw DBusError.decoding(error)
            }
            connection.uniqueName = name
            _ = dbus_bus_set_unique_name(raw, name)
            connection.state = .open
            return connection
        } catch {
            connection.close()
            switch error {
            case .decoding(let problem):
                throw .cannotConnect(address: address, detail: "bus answered Hello oddly: \(problem)")
            case .disconnected:
                throw .cannotConnect(address: address, detail: "the bus closed the connection during authentication")
            default:
                throw .cannotConnect(address: address, detail: error.description)
            }
        }
    }

    private func attach() {
        let integration = LoopIntegration(connection: raw, context: MainLoop.shared.context) { [weak self] in
            BleLoop.assumeIsolated(dispatchIncomingOnLoop, with: self)
        }
        self.integration = integration
        integration.attach()
        let weakBox = Unmanaged.passRetained(WeakConnection(self)).toOpaque()
        dbus_connection_add_filter(raw, connectionFilter, weakBox, connectionReleaseBox)
        let dispatchBox = Unmanaged.passRetained(WeakConnection(self)).toOpaque()
        dbus_connection_set_dispatch_status_function(raw, connectionDispatchStatusChanged, dispatchBox,
                                                     connectionReleaseBox)
        dbus_connection_set_wakeup_main_function(raw, connectionWakeUpLoop, nil, nil)
        scheduleDispatch()
    }

    /// libdbus queued received messages. While a watch is being handled the loop dispatches
    /// them as soon as libdbus returns, so only messages that arrive some other way need a
    /// dispatch scheduled.
    func incomingQueued() {
        guard integration?.isHandling != true else { return }
        scheduleDispatch()
    }

    func scheduleDispatch() {
        guard !dispatchScheduled, state != .closed else { return }
        dispatchScheduled = true
        LoopBridge.later { [weak self] in
            guard let self else { return }
            self.dispatchScheduled = false
            self.dispatchIncoming()
        }
    }

    func dispatchIncoming() {
        guard state != .closed else { return }
        // `dispatch` returns the status after it, so each message costs one locked libdbus call.
        var status = dbus_connection_get_dispatch_status(raw)
        while status == DBUS_DISPATCH_DATA_REMAINS {
            status = dbus_connection_dispatch(raw)
            if state == .closed { return }
        }
    }

    func handleIncoming(_ rawMessage: OpaquePointer) -> DBusHandlerResult {
        // A tracer sees every message decoded, so it turns the shortcuts off.
        if tracer == nil, signals.routeThroughShortcut(rawMessage) { return DBUS_HANDLER_RESULT_HANDLED }
        if tracer == nil, completeWithBodyOnly(rawMessage) { return DBUS_HANDLER_RESULT_HANDLED }
        let message: DBusMessage
        do {
            message = try DBusMessage(decoding: rawMessage, strings: &receivedStrings)
        } catch {
            return handleUndecodable(rawMessage, error: error)
        }
        tracer?(.received, message)
        switch message.kind {
        case .methodReturn, .error:
            completePending(replySerial: message.replySerial, with: message)
        case .signal:
            if message.interface == "org.freedesktop.DBus.Local", message.member == "Disconnected" {
                connectionLost()
                return DBUS_HANDLER_RESULT_HANDLED
            }
            signals.route(message)
        case .methodCall:
            objects.dispatch(message)
        }
        return DBUS_HANDLER_RESULT_HANDLED
    }

    /// A method return for a call that only wants the reply's body (every call but
    /// `callReturningMessage`): completed with the body alone, without decoding the header's
    /// five strings. dbus-daemon delivers only the replies we are owed, so the sender needs no
    /// check. False for anything else, which the general path decodes.
    private func completeWithBodyOnly(_ rawMessage: OpaquePointer) -> Bool {
        guard dbus_message_get_type(rawMessage) == Int32(DBUS_MESSAGE_TYPE_METHOD_RETURN) else { return false }
        let replySerial = dbus_message_get_reply_serial(rawMessage)
        // One hash lookup: taken out first, and put back in the rare case it wants the headers.
        guard let call = pendingCalls.removeValue(forKey: replySerial) else { return false }
        guard !call.wantsHeaders else {
            pendingCalls[replySerial] = call
            return false
        }
        let body: Result<[DBusValue], DBusError>
        do {
            body = .success(try MessageDecoder.decodeBody(of: rawMessage, strings: &receivedStrings))
        } catch {
            body = .failure(error)
        }
        guard retire(call) else { return true }
        call.completion.deliver(body: body, serial: dbus_message_get_serial(rawMessage), replySerial: replySerial)
        sendQueuedCalls()
        return true
    }

    /// libdbus validated the framing, but a value inside (a signature string) was unusable:
    /// answer a call with an error, fail a pending reply, drop a signal.
    private func handleUndecodable(_ rawMessage: OpaquePointer, error: DBusError) -> DBusHandlerResult {
        let type = dbus_message_get_type(rawMessage)
        if type == Int32(DBUS_MESSAGE_TYPE_METHOD_RETURN) || type == Int32(DBUS_MESSAGE_TYPE_ERROR) {
            let serial = dbus_message_get_reply_serial(rawMessage)
            if let call = pendingCalls.removeValue(forKey: serial) {
                finish(call, with: .failure(error))
            }
        } else if type == Int32(DBUS_MESSAGE_TYPE_METHOD_CALL), dbus_message_get_no_reply(rawMessage) == 0 {
            let reply = DBusMessage(kind: .error, serial: 0, replySerial: dbus_message_get_serial(rawMessage), sender: nil,
                                    destination: dbus_message_get_sender(rawMessage).map { String(cString: $0) },
                                    path: nil, interface: nil, member: nil,
                                    errorName: "org.freedesktop.DBus.Error.InvalidArgs", signature: "s",
                                    body: [.string(error.description)], noReplyExpected: true)
            _ = try? send(reply)
        }
        return DBUS_HANDLER_RESULT_HANDLED
    }

    // MARK: Sending

    /// Sends `message` without waiting for anything; returns its serial.
    @discardableResult
    public func send(_ message: DBusMessage) throws(DBusError) -> UInt32 {
        guard state != .closed else { throw .disconnected }
        let rawMessage = try message.makeRaw(names: &sentNames, templates: &sentTemplates)
        defer { dbus_message_unref(rawMessage) }
        if message.body.contains(where: DBusValue.containsFileDescriptor),
           dbus_connection_can_send_type(raw, DBUS_TYPE_UNIX_FD) == 0, state == .open {
            throw .fileDescriptorsUnsupported
        }
        var serial: UInt32 = 0
        guard dbus_connection_send(raw, rawMessage, &serial) != 0 else { throw .outOfMemory }
        if let tracer {
            var sent = message
            sent.serial = serial
            tracer(.sent, sent)
        }
        return serial
    }

    /// Emits a signal from one of our objects.
    public func emitSignal(path: ObjectPath, interface: String, member: String, body: [DBusValue] = [],
                           destination: String? = nil) throws(DBusError) {
        try send(.signal(path: path, interface: interface, member: member, body: body, destination: destination))
    }

    // MARK: Calls

    /// Calls a method and returns the reply's body.
    ///
    /// Ends with the reply, a `.remote` error reply, `.timeout` after `timeout` (default
    /// `defaultTimeout`), `.disconnected` at once if the connection closes, or `.cancelled`
    /// when the awaiting task is cancelled.
    public func call(destination: String?, path: ObjectPath, interface: String?, member: String,
                     arguments: [DBusValue] = [], timeout: Duration? = nil) async throws(DBusError) -> [DBusValue] {
        let message = DBusMessage.methodCall(destination: destination, path: path, interface: interface,
                                             member: member, body: arguments)
        let result = await callResult(message, timeout: timeout)
        return try result.get().body
    }

    /// Calls a method and returns the whole reply message (header fields included).
    public func callReturningMessage(_ message: DBusMessage, timeout: Duration? = nil) async throws(DBusError) -> DBusMessage {
        try await callResult(message, timeout: timeout, wantsHeaders: true).get()
    }

    private func callResult(_ message: DBusMessage, timeout: Duration?, wantsHeaders: Bool = false) async -> Result<DBusMessage, DBusError> {
        let id = nextCallID
        nextCallID += 1
        // The reply resumes the continuation on the loop thread, but the runtime would run the
        // task on the global pool and hop back to the loop from there: preferring the loop as the
        // task executor keeps the resumption on this thread, without two thread wake-ups per call.
        return await withTaskExecutorPreference(LoopExecutor.sharedTaskExecutor) {
            await withTaskCancellationHandler {
                // Unchecked: `finish` completes a call once (it removes the call from `callsByID`
                // first), and a checked continuation allocates a canary object per call.
                await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<DBusMessage, DBusError>, Never>) in
                    if Task.isCancelled {
                        continuation.resume(returning: .failure(.cancelled))
                        return
                    }
                    start(message, id: id, timeout: timeout, wantsHeaders: wantsHeaders, completion: .message { continuation.resume(returning: $0) })
                }
            } onCancel: {
                LoopBridge.later { [weak self] in self?.cancelCall(id: id) }
            }
        }
    }

    /// Calls a method; `completion` runs on the loop thread with the reply body or the error.
    ///
    /// May be called from any thread.
    public nonisolated func call(destination: String?, path: ObjectPath, interface: String?, member: String,
                                 arguments: [DBusValue] = [], timeout: Duration? = nil,
                                 completion: @escaping @Sendable (Result<[DBusValue], DBusError>) -> Void) {
        let message = DBusMessage.methodCall(destination: destination, path: path, interface: interface,
                                             member: member, body: arguments)
        LoopBridge.later { [self] in
            let id = nextCallID
            nextCallID += 1
            start(message, id: id, timeout: timeout, completion: .body(completion))
        }
    }

    /// Starts a call at once, for code already on the loop: the message is sent before this
    /// returns, so nothing sent afterwards can overtake it. `completion` runs on the loop (at
    /// once if the connection is closed).
    /// Returns the call's id, for `abandonCall`.
    @discardableResult
    package func callAtOnce(destination: String?, path: ObjectPath, interface: String?, member: String,
                    arguments: [DBusValue] = [], timeout: Duration? = nil,
                    completion: @escaping @BleLoop (Result<[DBusValue], DBusError>) -> Void) -> UInt64 {
        let id = nextCallID
        nextCallID += 1
        // Built in the argument, so `start` consumes it without a copy.
        start(DBusMessage.methodCall(destination: destination, path: path, interface: interface, member: member, body: arguments),
              id: id, timeout: timeout, completion: .body(completion))
        return id
    }


    /// Stops waiting for the reply of call `id` (its completion runs with `.cancelled`; a late
    /// reply is dropped): an operation that already ended another way gives back its slot
    /// among the `maximumPendingCalls` at once, not at the bus deadline. No-op once it ended.
    package func abandonCall(_ id: UInt64) {
        cancelCall(id: id)
    }

    private func start(_ message: consuming DBusMessage, id: UInt64, timeout: Duration?, wantsHeaders: Bool = false,
                       completion: PendingCall.Completion) {
        guard state != .closed else {
            completion.deliver(.failure(.disconnected))
            return
        }
        let limit = timeout ?? defaultTimeout
        let call = PendingCall(id: id, message: message, deadline: MonotonicTime.now + timeoutMemo.microseconds(of: limit), timeout: limit,
                               wantsHeaders: wantsHeaders, completion: completion)
        callsByID[id] = call
        deadlines.insert(call.deadline, id)
        armDeadlineTimer()
        if pendingCalls.count >= maximumPendingCalls {
            queuedCalls.append(call)
        } else {
            transmit(call)
        }
    }

    private func transmit(_ call: PendingCall) {
        // Each call is transmitted once (from `start` or the queue), so its message is there.
        guard let message = call.message.take() else {
            return finish(call, with: .failure(.invalidArgument("the call was already sent")))
        }
        do {
            let serial = try send(message)
            call.serial = serial
            pendingCalls[serial] = call
        } catch {
            finish(call, with: .failure(error))
        }
    }

    private func completePending(replySerial: UInt32, with reply: DBusMessage) {
        guard let call = pendingCalls.removeValue(forKey: replySerial) else { return }
        if let error = reply.remoteError {
            finish(call, with: .failure(error))
        } else {
            finish(call, with: .success(reply))
        }
    }

    // MARK: Deadlines

    /// One timer serves every call: it is armed for the earliest deadline, and only re-armed
    /// when a call with an earlier deadline starts. A GLib timeout source per call would cost
    /// more than the rest of the call's bookkeeping together.
    private func armDeadlineTimer() {
        guard let earliest = deadlines.first?.deadline, state != .closed else { return }
        // An armed timer that is due sooner fires, finds nothing to expire, and re-arms.
        if let armedDeadline, armedDeadline <= earliest { return }
        deadlineTimer?.cancel()
        armedDeadline = earliest
        deadlineTimer = LoopTimer.scheduled(after: .microseconds(max(0, earliest - MonotonicTime.now))) { [weak self] in
            self?.deadlinesPassed()
        }
    }

    private func deadlinesPassed() {
        deadlineTimer = nil
        armedDeadline = nil
        let now = MonotonicTime.now
        while let (deadline, id) = deadlines.first, deadline <= now {
            deadlines.removeFirst()
            guard let call = callsByID[id] else { continue }
            forget(call)
            finish(call, with: .failure(.timeout(member: call.member, seconds: call.timeoutSeconds)))
        }
        armDeadlineTimer()
    }

    /// Drops the deadlines of finished calls from the front, so that calls answered in order
    /// (nearly all) keep the queue as short as the number of calls in flight.
    private func dropFinishedDeadlines() {
        while let (_, id) = deadlines.first, callsByID[id] == nil {
            deadlines.removeFirst()
        }
    }

    private func cancelCall(id: UInt64) {
        guard let call = callsByID[id] else { return }
        forget(call)
        finish(call, with: .failure(.cancelled))
    }

    private func forget(_ call: PendingCall) {
        if let serial = call.serial { pendingCalls.removeValue(forKey: serial) }
        queuedCalls.removeAll { $0 === call }
    }

    private func finish(_ call: PendingCall, with result: Result<DBusMessage, DBusError>) {
        guard retire(call) else { return }
        call.completion.deliver(result)
        sendQueuedCalls()
    }

    /// Takes `call` off the books before its completion runs; false when it had ended already
    /// (each call completes once).
    private func retire(_ call: PendingCall) -> Bool {
        guard callsByID.removeValue(forKey: call.id) != nil else { return false }
        dropFinishedDeadlines()
        return true
    }

    private func sendQueuedCalls() {
        while !queuedCalls.isEmpty, pendingCalls.count < maximumPendingCalls, state != .closed {
            transmit(queuedCalls.removeFirst())
        }
    }

    /// The number of calls awaiting a reply or waiting to be sent.
    public var outstandingCallCount: Int { callsByID.count }

    /// What the connection holds now (calls, subscriptions, rules, timers), for leak checks.
    public var diagnostics: ConnectionDiagnostics {
        ConnectionDiagnostics(pendingCalls: callsByID.count, signalSubscriptions: signals.subscriptionCount,
                              matchRules: signals.busRuleCount, nameWatchers: signals.nameWatcherCount,
                              timers: deadlineTimer?.isActive == true ? 1 : 0)
    }

    // MARK: Lifetime

    /// Runs `handler` once when the connection closes, whichever side closed it.
    @discardableResult
    public func onDisconnect(_ handler: @escaping @BleLoop () -> Void) -> UInt64 {
        let id = nextDisconnectHandlerID
        nextDisconnectHandlerID += 1
        if state == .closed {
            handler()
        } else {
            disconnectHandlers[id] = handler
        }
        return id
    }

    /// Removes a handler added with `onDisconnect`.
    public func removeDisconnectHandler(_ id: UInt64) {
        disconnectHandlers.removeValue(forKey: id)
    }

    /// Closes the connection; every outstanding call fails with `.disconnected` at once.
    public func close() {
        guard state != .closed else { return }
        dbus_connection_close(raw)
        connectionLost()
    }

    private func connectionLost() {
        guard state != .closed else { return }
        state = .closed
        let calls = Array(callsByID.values).sorted { $0.id < $1.id }
        pendingCalls.removeAll()
        queuedCalls.removeAll()
        for call in calls { finish(call, with: .failure(.disconnected)) }
        deadlineTimer?.cancel()
        deadlineTimer = nil
        armedDeadline = nil
        signals.connectionClosed()
        let handlers = disconnectHandlers.sorted { $0.key < $1.key }.map(\.value)
        disconnectHandlers.removeAll()
        for handler in handlers { handler() }
        integration?.detach()
    }

    isolated deinit {
        if state != .closed {
            dbus_connection_close(raw)
        }
        integration?.detach()
        dbus_connection_unref(raw)
    }
}

// MARK: - libdbus callbacks
// The libdbus callbacks of every connection. They are file-level functions on purpose: a
// closure written inside `@BleLoop` code is isolated to the loop, and its C entry point then
// checks that isolation with the concurrency runtime on every call (several per message).

func connectionFilter(_ connection: OpaquePointer?, _ message: OpaquePointer?,
                              _ data: UnsafeMutableRawPointer?) -> DBusHandlerResult {
    guard let data else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    // libdbus calls filters on the thread that dispatches, the loop's: the message never
    // leaves it, whatever the checker cannot see through C.
    guard let rawMessage = message else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    nonisolated(unsafe) let unsafeMessage = rawMessage
    let box = Unmanaged<WeakConnection>.fromOpaque(data).takeUnretainedValue()
    return BleLoop.assumeIsolated(handleIncomingOnLoop, with: (box, unsafeMessage))
}

@BleLoop private func handleIncomingOnLoop(_ delivery: (box: WeakConnection, message: OpaquePointer)) -> DBusHandlerResult {
    guard let connection = delivery.box.connection else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
    return connection.handleIncoming(delivery.message)
}

@BleLoop private func dispatchIncomingOnLoop(_ connection: Connection?) {
    connection?.dispatchIncoming()
}

@BleLoop private func incomingQueuedOnLoop(_ box: WeakConnection) {
    box.connection?.incomingQueued()
}

func connectionDispatchStatusChanged(_ connection: OpaquePointer?, _ status: DBusDispatchStatus,
                                             _ data: UnsafeMutableRawPointer?) {
    guard let data, status == DBUS_DISPATCH_DATA_REMAINS else { return }
    let box = Unmanaged<WeakConnection>.fromOpaque(data).takeUnretainedValue()
    // libdbus forbids dispatching from inside this callback: the connection defers it.
    if MainLoop.shared.isCurrent {
        BleLoop.assumeIsolated(incomingQueuedOnLoop, with: box)
    } else {
        LoopBridge.later { box.connection?.scheduleDispatch() }
    }
}

func connectionWakeUpLoop(_ data: UnsafeMutableRawPointer?) {
    // libdbus asks for this on every send. On the loop thread (always, in BleKit) the loop is
    // not in poll() and looks at the watches again before it sleeps, so the eventfd write, and
    // the extra iteration it causes, would buy nothing.
    guard !MainLoop.shared.isCurrent else { return }
    g_main_context_wakeup(MainLoop.shared.context)
}

func connectionReleaseBox(_ data: UnsafeMutableRawPointer?) {
    guard let data else { return }
    Unmanaged<WeakConnection>.fromOpaque(data).release()
}

/// Lets C callbacks reach a connection without keeping it alive.
final class WeakConnection: @unchecked Sendable {
    // Only read on the loop thread, inside BleLoop.assumeIsolated.
    weak var connection: Connection?
    init(_ connection: Connection) { self.connection = connection }
}
