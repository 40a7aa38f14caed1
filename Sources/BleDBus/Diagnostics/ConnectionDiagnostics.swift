/// What one bus connection holds right now, for tests and leak checks: after every operation
/// has ended these return to the values they had before it started.
public struct ConnectionDiagnostics: Sendable, Equatable, CustomStringConvertible {
    /// Calls awaiting a reply or a free slot.
    public var pendingCalls: Int
    /// In-process signal subscriptions (each holds a share of a bus match rule).
    public var signalSubscriptions: Int
    /// Distinct match rules registered with the bus.
    public var matchRules: Int
    /// Handlers waiting for a well-known name's owner to change.
    public var nameWatchers: Int
    /// Loop timers the connection holds (the shared call deadline timer, 0 or 1).
    public var timers: Int

    /// Creates a snapshot; BleKit fills it in (`Connection.diagnostics`).
    public init(pendingCalls: Int = 0, signalSubscriptions: Int = 0, matchRules: Int = 0, nameWatchers: Int = 0, timers: Int = 0) {
        self.pendingCalls = pendingCalls
        self.signalSubscriptions = signalSubscriptions
        self.matchRules = matchRules
        self.nameWatchers = nameWatchers
        self.timers = timers
    }

    /// One line, for test failures.
    public var description: String {
        "calls \(pendingCalls), subscriptions \(signalSubscriptions), rules \(matchRules), name watchers \(nameWatchers), timers \(timers)"
    }
}
