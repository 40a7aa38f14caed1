/// The global actor of BleKit's state: everything isolated to it runs on `MainLoop.shared`.
///
/// Use `@BleLoop` on your own types to share the framework's thread and call its isolated API
/// synchronously; from elsewhere, `await` it.
@globalActor
public actor BleLoop {
    /// The one instance behind `@BleLoop`; its executor is `MainLoop.shared`'s thread.
    public static let shared = BleLoop()

    /// Runs isolated work on `MainLoop.shared`, so `@BleLoop` code and GLib callbacks share one thread.
    public nonisolated var unownedExecutor: UnownedSerialExecutor {
        LoopExecutor.shared(for: MainLoop.shared)
    }

    /// Runs `operation` as `@BleLoop` code when the caller is already on the loop thread (as
    /// C callbacks from GLib are); traps otherwise, since that would be a data race.
    public static func assumeIsolated<T: Sendable>(_ operation: @BleLoop () throws -> T) rethrows -> T {
        typealias Isolated = @BleLoop () throws -> T
        typealias Plain = () throws -> T
        precondition(MainLoop.shared.isCurrent, "BleLoop.assumeIsolated called off the BleKit loop thread")
        return try withoutActuallyEscaping(operation) { isolated in
            // The precondition proves the isolation the type system cannot see through C.
            try unsafeBitCast(isolated, to: Plain.self)()
        }
    }

    /// Calls the loop-isolated function `function` with `argument`, as `assumeIsolated(_:)`
    /// runs a closure: for C callbacks on the hot paths, which run several times per message.
    /// A named function, not a closure literal: the compiler gives some loop-isolated closures
    /// a runtime check of the current executor at entry (measured at 370 instructions a call).
    @inlinable
    public static func assumeIsolated<Argument, Result>(_ function: @BleLoop (Argument) -> Result,
                                                        with argument: Argument) -> Result {
        typealias Plain = (Argument) -> Result
        precondition(MainLoop.shared.isCurrent, "BleLoop.assumeIsolated called off the BleKit loop thread")
        return withoutActuallyEscaping(function) { isolated in
            // The precondition proves the isolation the type system cannot see through C.
            unsafeBitCast(isolated, to: Plain.self)(argument)
        }
    }

    /// Runs `operation` on the loop from any thread, without waiting for it.
    public static func perform(_ operation: @escaping @BleLoop @Sendable () -> Void) {
        MainLoop.shared.perform {
            BleLoop.assumeIsolated(operation)
        }
    }
}
