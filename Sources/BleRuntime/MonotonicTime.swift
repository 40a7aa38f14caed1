import CGLib

/// Microseconds on the loop's monotonic clock (GLib's, the one the loop's timers use).
///
/// The deadline keepers on the hot paths use these plain integers: `ContinuousClock.Instant`
/// is opaque outside the concurrency library, so each copy and comparison of one went through
/// its value witnesses — measured at a thousand instructions per GATT operation.
public enum MonotonicTime {
    /// Now, in microseconds.
    public static var now: Int { Int(g_get_monotonic_time()) }

    /// `duration` in whole microseconds, rounded up; negative durations are 0, and huge ones
    /// are capped far beyond any deadline (so that adding one to `now` cannot overflow).
    public static func microseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let total = Double(seconds) * 1_000_000 + Double(attoseconds) / 1e12
        return Int(min(total.rounded(.up), Double(Int.max / 4)))
    }
}

/// The last `Duration` converted to microseconds, and the result: the deadline keepers convert
/// the same timeout for every call, and a `Duration`'s components cost a 128-bit division.
public struct MicrosecondsMemo: Sendable {
    private var duration: Duration = .zero
    private var microseconds = 0

    /// An empty memo.
    public init() {}

    /// `duration` in microseconds (as `MonotonicTime.microseconds`).
    public mutating func microseconds(of duration: Duration) -> Int {
        if duration != self.duration {
            self.duration = duration
            microseconds = MonotonicTime.microseconds(duration)
        }
        return microseconds
    }
}
