import BleRuntime

/// A queued, running or streaming command of a `DeviceCharacteristicValue`.
///
/// `cancel()` ends it at once with `PeripheralCommandError.cancelled` (a queued command never
/// starts; a stream stops listening). Safe from any thread, more than once.
public final class CommandToken: @unchecked Sendable, Hashable {
    let id: UInt64
    private let cancelAction: @Sendable (UInt64) -> Void

    init(id: UInt64, cancel: @escaping @Sendable (UInt64) -> Void) {
        self.id = id
        self.cancelAction = cancel
    }

    /// Ends the command with `.cancelled` (no effect once it has finished).
    public func cancel() { cancelAction(id) }

    /// Identity.
    public static func == (lhs: CommandToken, rhs: CommandToken) -> Bool { lhs.id == rhs.id }
    /// Identity.
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}
