import CGLib

/// A one-shot or repeating timer on a `MainLoop`, served by the loop's timer queue.
///
/// Command timeouts, connect deadlines and back-off all use it, so there is one clock and no
/// Foundation `Timer`. Cancelling is safe from any thread and guarantees the action will not
/// start afterwards. The timer also stops when this object is released.
public final class LoopTimer: Sendable {
    private let queue: TimerQueue
    private let entry: TimerQueue.Entry

    /// Starts a timer on `loop` that runs `action` on the loop thread after `delay`, and then
    /// every `repeating` interval if one is given.
    public init(after delay: Duration, repeating: Duration? = nil, on loop: MainLoop = .shared,
                action: @escaping @Sendable () -> Void) {
        queue = loop.timers
        // GLib's clock counts microseconds; a repeating timer never ticks faster than every 1 µs.
        entry = loop.timers.schedule(after: MonotonicTime.microseconds(delay), interval: repeating.map(MonotonicTime.microseconds),
                                     action: action)
        // Starts the shared loop if this timer is the first thing that needs it; cheaper than
        // an empty `perform`, which costs a drain (per call, for call timers).
        loop.startIfFirstUse()
    }

    /// A timer whose action runs as `@BleLoop` code on the shared loop.
    public static func scheduled(after delay: Duration, repeating: Duration? = nil,
                                 action: @escaping @BleLoop @Sendable () -> Void) -> LoopTimer {
        LoopTimer(after: delay, repeating: repeating, on: .shared) {
            BleLoop.assumeIsolated(action)
        }
    }

    /// Stops the timer; the action does not start after this returns (it may be running now on
    /// the loop thread if called from elsewhere).
    public func cancel() {
        queue.cancel(entry)
    }

    /// True until `cancel()` or, for a one-shot timer, until it fired.
    public var isActive: Bool { queue.isLive(entry) }

    deinit { cancel() }
}
