import BleRuntime

/// A queued, running or streaming command of a `DeviceCharacteristicValue`.
///
/// `cancel()` ends it at once with `PeripheralCommandError.cancelled` (a queued command never
/// starts; a stream stops listening). Safe from any thread, more than once.
public final class CommandToken: @unchecked Sendable, Hashable {
    let id: UInt64
    /// Weak: a token kept after its engine is gone cancels nothing. Set once, in `init`; a weak
    /// reference is safe to read from any thread.
    private weak var engine: Engine?

    init(id: UInt64, engine: Engine) {
        self.id = id
        self.engine = engine
    }

    /// Ends the command with `.cancelled` (no effect once it has finished).
    public func cancel() {
        guard let engine else { return }
        let id = id
        LoopHop.run { engine.cancel(id: id) }
    }

    /// Identity.
    public static func == (lhs: CommandToken, rhs: CommandToken) -> Bool { lhs.id == rhs.id }
    /// Identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}
