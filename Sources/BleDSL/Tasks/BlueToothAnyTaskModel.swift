import BleRuntime
import Foundation

// Unchecked: an open class (FXBlueTooth's users subclass it) cannot be checked Sendable, and
// dropping Sendable or `open` would break their code; its mutable state is behind `pluginList`.
/// A type-erased task, so tasks of different result types share one queue.
///
/// Unlike FXBlueTooth's, it never force-casts: plugins of the original task run with the typed
/// value, and erased plugins get it as `Any`.
open class BlueToothAnyTaskModel: @unchecked Sendable {
    private let runner: (PeripheralDevice.DeviceCharacteristicValue, @escaping (Result<Any, Error>) -> Void) -> Void
    /// Receivers of the value as `Any`.
    public var plugins: [BlueToothTaskComplete<Any>] { pluginList.value }
    /// Added to from the app's thread, read when the task runs.
    private let pluginList = LoopLock<[BlueToothTaskComplete<Any>]>([])

    /// Wraps `task`; its own typed plugins keep working.
    public init<T>(task: BlueToothTaskModel<T>) {
        runner = { engine, completion in
            task.run(on: engine) { result in completion(result.map { $0 as Any }) }
        }
    }

    /// Adds a receiver of the value as `Any`.
    public func addPlugin(_ plugin: @escaping BlueToothTaskComplete<Any>) { pluginList.withLock { $0.append(plugin) } }

    /// Runs the task on `engine`.
    public func run(on engine: PeripheralDevice.DeviceCharacteristicValue, completion: ((Result<Any, Error>) -> Void)? = nil) {
        let plugins = plugins
        runner(engine) { result in
            if case .success(let value) = result { for plugin in plugins { plugin(value) } }
            completion?(result)
        }
    }
}
