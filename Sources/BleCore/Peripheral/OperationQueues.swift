import BleDBus
import Foundation

/// One GATT operation: it ends exactly once — with its result, an error, its deadline, or a
/// disconnect (Nordic #114, bleak #691: a request that can hang will).
@BleLoop
final class GattOperation {
    typealias Completion = @BleLoop (Result<Data?, BleError>) -> Void

    let name: String
    let key: ObjectPath
    let start: @BleLoop (GattOperation) -> Void
    private let completion: Completion
    var timer: LoopTimer?
    private(set) var finished = false
    var started = false

    init(name: String, key: ObjectPath, start: @escaping @BleLoop (GattOperation) -> Void, completion: @escaping Completion) {
        self.name = name
        self.key = key
        self.start = start
        self.completion = completion
    }

    /// Ends the operation; later calls (a late reply after a timeout) are ignored.
    func finish(_ result: Result<Data?, BleError>) {
        guard !finished else { return }
        finished = true
        timer?.cancel()
        timer = nil
        completion(result)
    }
}

/// Per-attribute serial queues of operations.
@BleLoop
struct OperationQueues {
    private var queues: [ObjectPath: [GattOperation]] = [:]
    var onDrained: (@BleLoop (ObjectPath) -> Void)?

    /// Queues `operation`; it starts at once when its attribute is idle.
    mutating func enqueue(_ operation: GattOperation, deadline: Duration) -> Bool {
        queues[operation.key, default: []].append(operation)
        // The deadline runs from the request, queued time included: the caller's clock.
        operation.timer = LoopTimer.scheduled(after: deadline) { [weak operation] in
            operation?.finish(.failure(.timeout(operation: operation?.name ?? "operation")))
        }
        return queues[operation.key]?.count == 1
    }

    /// The next operation to start on `key`, after dropping finished ones at the head.
    mutating func next(on key: ObjectPath) -> GattOperation? {
        guard var queue = queues[key] else { return nil }
        while let first = queue.first, first.finished { queue.removeFirst() }
        queues[key] = queue.isEmpty ? nil : queue
        guard let first = queue.first, !first.started else { return nil }
        first.started = true
        return first
    }

    /// Fails every pending operation (queued or running) at once.
    mutating func failAll(with error: BleError) {
        let all = queues.values.flatMap { $0 }
        queues.removeAll()
        for operation in all { operation.finish(.failure(error)) }
    }

    /// Fails the operations on attributes under `path` (a removed service).
    mutating func failAll(under path: ObjectPath, with error: BleError) {
        let keys = queues.keys.filter { $0.isDescendant(of: path) }
        var all: [GattOperation] = []
        for key in keys { all += queues.removeValue(forKey: key) ?? [] }
        for operation in all { operation.finish(.failure(error)) }
    }
}

extension Peripheral {
    /// Runs `start` serialised with other operations on `key`; `completion` gets the outcome.
    @BleLoop func run(_ name: String, on key: ObjectPath, start: @escaping @BleLoop (GattOperation) -> Void,
                      completion: @escaping GattOperation.Completion) {
        guard let manager else { return completion(.failure(.cancelled)) }
        guard isLinkUp else { return completion(.failure(.peripheralNotConnected)) }
        let operation = GattOperation(name: name, key: key, start: start) { [weak self] result in
            completion(result)
            // The next operation starts after this one ended, however it ended.
            BleLoop.perform { self?.startNext(on: key) }
        }
        if operations.enqueue(operation, deadline: manager.options.operationTimeout) {
            startNext(on: key)
        }
    }

    @BleLoop func startNext(on key: ObjectPath) {
        guard let operation = operations.next(on: key) else { return }
        operation.start(operation)
    }

    /// A BlueZ call that finishes `operation` with its reply.
    @BleLoop func call(_ operation: GattOperation, _ path: ObjectPath, _ interface: String, _ member: String,
                       _ arguments: [DBusValue] = [], reply: @escaping @BleLoop ([DBusValue]) -> Data? = { _ in nil }) {
        guard let manager else { return operation.finish(.failure(.cancelled)) }
        manager.callBlueZ(path, interface, member, arguments, timeout: manager.options.operationTimeout + .seconds(1)) { result in
            switch result {
            case .success(let body): operation.finish(.success(reply(body)))
            case .failure(let error): operation.finish(.failure(error))
            }
        }
    }
}
