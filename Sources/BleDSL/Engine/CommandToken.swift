import BleRuntime

/// A queued, running or streaming command of a `DeviceCharacteristicValue`.
///
/// `cancel()` ends it at once with `PeripheralCommandError.cancelled` (a queued command never
/// starts; a stream stops listening). Safe from any thread, more than once.
public final class CommandToken: Sendable, Hashable {
    let id: UInt64
    /// Weak: a token kept after its engine is gone cancels nothing. A `weak let`, so that the
    /// compiler knows it is set once and safe to read from any thread.
    private weak let engine: CommandEngine?

    init(id: UInt64, engine: CommandEngine) {
        self.id = id
        self.engine = engine
    }

    /// Ends the command with `.cancelled` (no effect once it has finished).
    public func cancel() {
        guard let engine else { return }
        let id = id
        LoopBridge.async { engine.cancel(id: id) }
    }

    /// Identity.
    public static func == (lhs: CommandToken, rhs: CommandToken) -> Bool { lhs.id == rhs.id }
    /// Identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}
