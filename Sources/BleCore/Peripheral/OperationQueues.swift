import BleDBus
import Foundation

/// One GATT operation: it ends exactly once — with its result, an error, its deadline, or a
/// disconnect (Nordic #114, bleak #691: a request that can hang will).
///
/// Two clocks: while it waits in BleKit's queue behind earlier operations on the same
/// attribute, `queueTimeout` applies (ending with `.queuedTooLong`, never sent); once it is
/// sent, `operationTimeout` applies (ending with `.timeout`): a deadline that counted queue
/// time would blame BlueZ for a backlog of our own.
@BleLoop
final class GattOperation {
    typealias Completion = @BleLoop (Result<Data?, BleError>) -> Void

    let name: String
    let key: OperationKey
    /// Both closures are dropped when the operation finishes: a finished operation may wait
    /// in its peripheral's deadline heap a while, and must not keep the data it wrote (or
    /// whatever its closures hold) alive meanwhile.
    private(set) var start: (@BleLoop (GattOperation) -> Void)?
    private var completion: Completion?
    /// The queue deadline, while it waits behind earlier operations on its attribute; once
    /// started its deadline is in the peripheral's `OperationDeadlines`.
    var timer: LoopTimer?
    /// Gives up the BlueZ call in flight, if any: called when the operation ends another way.
    var abandonCall: CallHandle?
    private(set) var finished = false
    var started = false
    /// Told when the operation ended, to start the next on its attribute (a reference, not a
    /// wrapping closure: one allocation less per operation).
    private weak var owner: Peripheral?

    init(name: String, key: OperationKey, owner: Peripheral? = nil, start: @escaping @BleLoop (GattOperation) -> Void,
         completion: @escaping Completion) {
        self.name = name
        self.key = key
        self.owner = owner
        self.start = start
        self.completion = completion
    }

    /// Ends the operation; later calls (a late reply after a timeout) are ignored.
    func finish(_ result: Result<Data?, BleError>) {
        guard !finished else { return }
        finished = true
        if let timer {
            timer.cancel()
            self.timer = nil
        }
        let abandon = abandonCall
        abandonCall = nil
        let completion = completion
        self.completion = nil
        start = nil
        completion?(result)
        // The next operation starts after this one ended, however it ended: at once (no extra
        // loop wake-up per operation), but never nested (see `operationEnded`).
        owner?.operationEnded(on: key)
        // After the completion: a cancelled call's own completion finds the operation finished.
        abandon?.abandon()
    }
}

/// Per-attribute serial queues of operations.
@BleLoop
struct OperationQueues {
    private var queues: [OperationKey: [GattOperation]] = [:]

    /// Queues `operation` with its queue deadline; true when it can start at once.
    mutating func enqueue(_ operation: GattOperation, queueTimeout: Duration) -> Bool {
        // One lookup (an object path's hash is most of an enqueue's cost), appended in place.
        let ahead = Self.append(operation, to: &queues[operation.key, default: []])
        if ahead > 0 {
            operation.timer = LoopTimer.scheduled(after: queueTimeout) { [weak operation] in
                guard let operation, !operation.started else { return }
                operation.finish(.failure(.queuedTooLong(operation: operation.name, ahead: ahead)))
            }
        }
        return ahead == 0
    }

    /// The next operation to start on `key`, after dropping finished ones at the head.
    mutating func next(on key: OperationKey) -> GattOperation? {
        // One lookup, and the queue changed in place: a copy taken out and stored back would
        // copy the array on every operation.
        guard let index = queues.index(forKey: key) else { return nil }
        // An emptied queue stays, with its capacity, for the attribute's next operation: removing
        // it cost an array allocation and two more hash lookups per operation. The keys are
        // bounded by the peripheral's attributes, and `takeAll` clears them.
        let first = Self.dropFinished(&queues.values[index])
        guard let first, !first.started else { return nil }
        first.started = true
        return first
    }

    private static func append(_ operation: GattOperation, to queue: inout [GattOperation]) -> Int {
        let ahead = queue.count
        queue.append(operation)
        return ahead
    }

    /// Drops the finished operations at the head; returns the new head.
    private static func dropFinished(_ queue: inout [GattOperation]) -> GattOperation? {
        var finished = 0
        while finished < queue.count, queue[finished].finished { finished += 1 }
        if finished > 0 { queue.removeFirst(finished) }
        return queue.first
    }

    /// Operations queued or running, for tests and diagnostics.
    var pendingCount: Int { queues.values.reduce(0) { $0 + $1.filter { !$0.finished }.count } }

    /// Queue deadlines still armed, for diagnostics.
    var liveTimerCount: Int { queues.values.reduce(0) { $0 + $1.filter { $0.timer?.isActive == true }.count } }

    /// Removes every pending operation (queued or running) and returns them, for the caller to
    /// fail: finishing them in here would run their completions (which start the next
    /// operation) while the queues are still being changed.
    mutating func takeAll() -> [GattOperation] {
        let all = queues.values.flatMap { $0 }
        queues.removeAll()
        return all
    }

    /// Removes and returns the operations on attributes under `path` (a removed service).
    mutating func takeAll(under path: ObjectPath) -> [GattOperation] {
        let keys = queues.keys.filter { $0.path.isDescendant(of: path) }
        var all: [GattOperation] = []
        for key in keys { all += queues.removeValue(forKey: key) ?? [] }
        return all
    }
}

extension Peripheral {
    /// Fails every pending operation at once.
    @BleLoop func failAllOperations(with error: BleError) {
        for operation in operations.takeAll() { operation.finish(.failure(error)) }
        // Every operation has ended: no deadline is left to keep.
        if operations.pendingCount == 0 { deadlines.removeAll() }
    }

    /// Fails the operations on attributes under `path`.
    @BleLoop func failOperations(under path: ObjectPath, with error: BleError) {
        for operation in operations.takeAll(under: path) { operation.finish(.failure(error)) }
    }
}

extension Peripheral {
    /// Runs `start` serialised with other operations on `key`; `completion` gets the outcome.
    @BleLoop func run(_ name: String, on key: OperationKey, start: @escaping @BleLoop (GattOperation) -> Void,
                      completion: @escaping GattOperation.Completion) {
        if let reason = session.closedReason { return completion(.failure(reason)) }
        guard isLinkUp else { return completion(.failure(.peripheralNotConnected)) }
        let operation = GattOperation(name: name, key: key, owner: self, start: start, completion: completion)
        if operations.enqueue(operation, queueTimeout: session.options.queueTimeout) {
            startNext(on: key)
        }
    }

    /// Starts what waits on `key`. An operation that ends at once when started (the link is
    /// gone) would start the next from inside its own start, thousands deep for a long queue:
    /// this loop runs them one after another instead.
    @BleLoop func operationEnded(on key: OperationKey) {
        keysToStart.append(key)
        guard !startingNext else { return }
        startingNext = true
        defer { startingNext = false }
        var index = 0
        while index < keysToStart.count {
            startNext(on: keysToStart[index])
            index += 1
        }
        keysToStart.removeAll(keepingCapacity: true)
    }

    @BleLoop func startNext(on key: OperationKey) {
        guard let operation = operations.next(on: key) else { return }
        if let queued = operation.timer {
            queued.cancel()
            operation.timer = nil
        }
        deadlines.add(operation, timeout: session.options.operationTimeout, arm: operationDeadlineTimer(at:))
        operation.start?(operation)
    }

    /// Ends the operations whose deadline passed with `.timeout`, then re-arms for the rest.
    @BleLoop func operationDeadlinesPassed() {
        for operation in deadlines.takeExpired(now: MonotonicTime.now) {
            operation.finish(.failure(.timeout(operation: operation.name)))
        }
        deadlines.rearm(operationDeadlineTimer(at:))
    }

    @BleLoop private func operationDeadlineTimer(at deadline: Int) -> LoopTimer {
        LoopTimer.scheduled(after: .microseconds(max(0, deadline - MonotonicTime.now))) { [weak self] in self?.operationDeadlinesPassed() }
    }

    /// A BlueZ call that finishes `operation` with its reply, decoded by `reply`; a reply of
    /// the wrong shape ends it with `.unexpectedReply`.
    @BleLoop func call(_ operation: GattOperation, _ path: ObjectPath, _ interface: String, _ member: String,
                       _ arguments: [DBusValue] = [],
                       reply: @escaping @BleLoop ([DBusValue]) throws(BleError) -> Data? = { _ in nil }) {
        operation.abandonCall = session.call(path, interface, member, arguments,
                                             timeout: session.options.operationTimeout + .seconds(1)) { result in
            switch result {
            case .success(let body):
                // do/catch, not `Result { }`: that closure would pay a runtime executor check.
                do throws(BleError) {
                    operation.finish(.success(try reply(body)))
                } catch {
                    operation.finish(.failure(error))
                }
            case .failure(.notConnected):
                // bluetoothd answers every request outstanding at a link loss "Not connected",
                // often before `Connected=false`: the documented ending is `.disconnected`.
                operation.finish(.failure(.disconnected))
            case .failure(let error): operation.finish(.failure(error))
            }
        }
    }
}

/// Checks BlueZ's replies against the shapes its API documents.
enum ReplyShape {
    /// `ReadValue` answers one `ay`.
    static func bytes(_ body: [DBusValue], operation: String) throws(BleError) -> Data {
        guard body.count == 1, let data = body[0].as(Data.self) else {
            throw .unexpectedReply(operation: operation, detail: "expected one byte array (ay), got \(signature(of: body))")
        }
        return data
    }

    /// `AcquireNotify`/`AcquireWrite` answer `(h fd, q mtu)`; an MTU below 23 is impossible.
    /// The descriptor is taken into a socket that owns it, so a refused reply leaks nothing.
    @BleLoop static func acquired(_ body: [DBusValue], operation: String) throws(BleError) -> (socket: SeqPacketSocket, mtu: UInt16) {
        guard body.count == 2, case .unixFD(let handle) = body[0], let mtu = body[1].as(UInt16.self) else {
            throw .unexpectedReply(operation: operation, detail: "expected (fd, uint16 MTU), got \(signature(of: body))")
        }
        guard let descriptor = handle.take() else {
            throw .unexpectedReply(operation: operation, detail: "the file descriptor was already taken")
        }
        // bluetoothd hands over one end of a SOCK_SEQPACKET pair; the socket refuses (and
        // closes) anything else. Adopted first, checked after the MTU: the MTU's error is the
        // one reported when both are wrong, as before.
        let socket: SeqPacketSocket?
        do throws(SeqPacketSocketError) {
            socket = try SeqPacketSocket(adopting: descriptor)
        } catch {
            socket = nil
        }
        guard mtu >= 23 else {
            throw .unexpectedReply(operation: operation, detail: "MTU \(mtu) is below the LE minimum of 23")
        }
        guard let socket else {
            throw .unexpectedReply(operation: operation, detail: "the file descriptor is not a SEQPACKET socket")
        }
        return (socket, mtu)
    }

    private static func signature(of body: [DBusValue]) -> String {
        body.isEmpty ? "nothing" : body.map(\.type.signature).joined()
    }
}
