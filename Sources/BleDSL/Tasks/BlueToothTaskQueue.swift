import BleRuntime
import Foundation

/// The runner FXBlueTooth lacked: executes tasks one after another on an engine, parses their
/// responses, calls their plugins, retries failed ones, and can be cancelled.
public final class BlueToothTaskQueue: Sendable {
    /// A queued task's outcome.
    public typealias Completion = (Result<Any, Error>) -> Void

    private struct Entry {
        let task: BlueToothAnyTaskModel
        let retries: Int
        let completion: Completion?
    }

    /// The engine tasks run on.
    public let engine: PeripheralDevice.DeviceCharacteristicValue
    private let state = LoopLock<(entries: [Entry], running: Bool, generation: Int)>(([], false, 0))

    /// A queue on `engine`.
    public init(engine: PeripheralDevice.DeviceCharacteristicValue) {
        self.engine = engine
    }

    /// Appends `task`; it runs after the ones before it, and is retried up to `retries` times
    /// when it fails (not when cancelled).
    public func add<T>(_ task: BlueToothTaskModel<T>, retries: Int = 0, completion: Completion? = nil) {
        add(BlueToothAnyTaskModel(task: task), retries: retries, completion: completion)
    }

    /// Appends an erased task.
    public func add(_ task: BlueToothAnyTaskModel, retries: Int = 0, completion: Completion? = nil) {
        let start = state.withLock { state -> Bool in
            state.entries.append(Entry(task: task, retries: max(0, retries), completion: completion))
            if state.running { return false }
            state.running = true
            return true
        }
        if start { next() }
    }

    /// Tasks waiting (the running one excluded).
    public var count: Int { state.withLock { $0.entries.count } }

    /// Drops every waiting task (each completes with `PeripheralCommandError.cancelled`) and
    /// cancels the engine's running command.
    public func cancelAll() {
        let dropped = state.withLock { state -> [Entry] in
            let dropped = state.entries
            state.entries.removeAll()
            state.generation += 1
            return dropped
        }
        engine.cancelAll()
        for entry in dropped { entry.completion?(.failure(PeripheralCommandError.cancelled)) }
    }

    private func next() {
        let taken = state.withLock { state -> (Entry, Int)? in
            guard !state.entries.isEmpty else {
                state.running = false
                return nil
            }
            return (state.entries.removeFirst(), state.generation)
        }
        guard let (entry, generation) = taken else { return }
        attempt(entry, remaining: entry.retries, generation: generation)
    }

    private func attempt(_ entry: Entry, remaining: Int, generation: Int) {
        entry.task.run(on: engine) { [weak self] result in
            guard let self else { return }
            let current = self.state.withLock { $0.generation }
            if case .failure(let error) = result, remaining > 0, current == generation,
               (error as? PeripheralCommandError) != .cancelled {
                return self.attempt(entry, remaining: remaining - 1, generation: generation)
            }
            entry.completion?(result)
            self.next()
        }
    }
}
