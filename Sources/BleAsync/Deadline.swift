import Foundation

/// A call's overall deadline, shared by the waits it is made of (a chunked write, a connect
/// that first waits for the adapter).
struct Deadline: Sendable {
    private let end: ContinuousClock.Instant?

    /// `timeout` in seconds; nil or 0 means none.
    init(_ timeout: TimeInterval?) {
        if let timeout, timeout > 0 { end = .now + .seconds(timeout) } else { end = nil }
    }

    /// Seconds left (nil: no deadline); throws the operation's timeout once it passed.
    func remaining(_ operation: AsyncBleClientError.Operation) throws -> TimeInterval? {
        guard let end else { return nil }
        let left = end - .now
        guard left > .zero else { throw AsyncBleClientError.timeout(operation) }
        let (seconds, attoseconds) = left.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
