import BleRuntime
import Foundation

/// Receives a command produced later (by `BlueToothTaskModel`'s creator closure).
public protocol CreateCommandProtocol: AnyObject {
    /// Supplies the command (nil: none).
    func setCommand(_ command: PeripheralOperationCommand?)
}

/// One of two values.
public enum EitherOrValued<Value1, Value2> {
    /// The first kind.
    case value1(Value1)
    /// The second kind.
    case value2(Value2)
}

/// How a task turns its response into a value: from the packets, or from them concatenated.
public typealias BlueToothTaskParseValue<R> = EitherOrValued<([Data]) -> R, (Data) -> R>
/// Receives a task's parsed value.
public typealias BlueToothTaskComplete<T> = (T) -> Void

// Unchecked: an open class (FXBlueTooth's users subclass it) cannot be checked Sendable, and
// dropping Sendable or `open` would break their code; its mutable state is behind `state`.
/// A command, how to parse its response and who gets the value — and, unlike FXBlueTooth's,
/// a runner: `run(on:completion:)` executes it on a `DeviceCharacteristicValue`.
open class BlueToothTaskModel<T>: CreateCommandProtocol, @unchecked Sendable {
    /// Builds the command later and calls `setCommand` on its argument.
    public typealias CreateCommandClosure = (CreateCommandProtocol) -> Void

    let source: EitherOrValued<PeripheralOperationCommand, CreateCommandClosure>
    /// How the response is parsed.
    public let parse: BlueToothTaskParseValue<T>
    /// Who receives the parsed value, in order.
    public var plugins: [BlueToothTaskComplete<T>] { state.withLock { $0.plugins } }

    private struct State {
        var plugins: [BlueToothTaskComplete<T>]
        var waiting: ((BlueToothTaskModel<T>, PeripheralOperationCommand?) -> Void)?
    }

    /// Plugins are added from the app's thread and read from the engine's completion on the loop.
    private let state: LoopLock<State>

    /// A task whose command is known now.
    public init(command: PeripheralOperationCommand, parse: BlueToothTaskParseValue<T>, plugins: [BlueToothTaskComplete<T>] = []) {
        source = .value1(command)
        self.parse = parse
        state = LoopLock(State(plugins: plugins))
    }

    /// A task whose command is produced later, possibly asynchronously.
    public init(createCommandClosure: @escaping CreateCommandClosure, parse: BlueToothTaskParseValue<T>,
                plugins: [BlueToothTaskComplete<T>] = []) {
        source = .value2(createCommandClosure)
        self.parse = parse
        state = LoopLock(State(plugins: plugins))
    }

    /// Adds a receiver.
    public func addPlugin(_ plugin: @escaping BlueToothTaskComplete<T>) { state.withLock { $0.plugins.append(plugin) } }

    /// Calls `closure` with the command, now or when the creator supplies it (once).
    public func prepareCommand(_ closure: @escaping (BlueToothTaskModel<T>, PeripheralOperationCommand?) -> Void) {
        switch source {
        case .value1(let command):
            closure(self, command)
        case .value2(let create):
            state.withLock { $0.waiting = closure }
            create(self)
        }
    }

    /// Supplies the command to a waiting `prepareCommand`.
    public func setCommand(_ command: PeripheralOperationCommand?) {
        let closure = state.withLock { state in
            defer { state.waiting = nil }
            return state.waiting
        }
        closure?(self, command)
    }

    /// Passes `value` to every plugin.
    public func completeValue(_ value: T) {
        for plugin in plugins { plugin(value) }
    }

    /// Prepares the command, executes it on `engine`, parses the response, feeds the plugins,
    /// and reports the value (or the error) to `completion`.
    public func run(on engine: PeripheralDevice.DeviceCharacteristicValue, completion: ((Result<T, Error>) -> Void)? = nil) {
        prepareCommand { task, command in
            guard let command else {
                completion?(.failure(PeripheralCommandError.cancelled))
                return
            }
            engine.executable(option: command) { result in
                switch result {
                case .success(let packets):
                    let value: T
                    switch task.parse {
                    case .value1(let multi): value = multi(packets)
                    case .value2(let single): value = single(packets.reduce(Data(), +))
                    }
                    task.completeValue(value)
                    completion?(.success(value))
                case .failure(let error):
                    completion?(.failure(error))
                }
            }
        }
    }
}
