import CGLib
import Synchronization

/// A one-shot or repeating timer: a GLib timeout source on a `MainLoop`'s context.
///
/// Command timeouts, connect deadlines and back-off all use it, so there is one clock and no
/// Foundation `Timer`. Cancelling is safe from any thread and guarantees the action will not
/// start afterwards. The timer also stops when this object is released.
public final class LoopTimer: Sendable {
    /// The GLib source's address; 0 once cancelled. A plain integer, because a raw pointer is not
    /// `Sendable` and GLib's source functions are thread-safe anyway.
    private let source: Mutex<UInt>

    /// Starts a timer on `loop` that runs `action` on the loop thread after `delay`, and then
    /// every `repeating` interval if one is given.
    public init(after delay: Duration, repeating: Duration? = nil, on loop: MainLoop = .shared,
                action: @escaping @Sendable () -> Void) {
        let firstDelay = LoopTimer.milliseconds(delay)
        let state = TimerState(action: action, repeatInterval: repeating.map(LoopTimer.milliseconds))
        source = Mutex(0)
        // GLib re-arms a timeout source with its own interval after each dispatch (overriding any
        // ready time set in the callback), so the source gets the period as its interval and
        // only its first expiry is moved to the first delay.
        guard let created = g_timeout_source_new(state.repeatInterval ?? firstDelay) else { return }
        if state.repeatInterval != nil {
            g_source_set_ready_time(created, g_get_monotonic_time() + Int(firstDelay) * 1000)
        }
        let box = Unmanaged.passRetained(state).toOpaque()
        g_source_set_callback(created, { userData in
            guard let userData else { return 0 }
            let state = Unmanaged<TimerState>.fromOpaque(userData).takeUnretainedValue()
            state.action()
            return state.repeatInterval == nil ? 0 : 1
        }, box, { userData in
            guard let userData else { return }
            Unmanaged<TimerState>.fromOpaque(userData).release()
        })
        let address = UInt(bitPattern: created)
        source.withLock { $0 = address }
        g_source_attach(created, loop.context)
        // Starts the shared loop if this timer is the first thing that needs it; cheaper than
        // an empty `perform`, which costs an idle source and a drain (per call, for call timers).
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
        let address = source.withLock { current -> UInt in
            let taken = current
            current = 0
            return taken
        }
        guard let taken = UnsafeMutablePointer<GSource>(bitPattern: address) else { return }
        g_source_destroy(taken)
        g_source_unref(taken)
    }

    /// True until `cancel()` or, for a one-shot timer, until it fired.
    public var isActive: Bool {
        source.withLock { current in
            guard let pointer = UnsafeMutablePointer<GSource>(bitPattern: current) else { return false }
            return g_source_is_destroyed(pointer) == 0
        }
    }

    deinit { cancel() }

    private static func milliseconds(_ duration: Duration) -> UInt32 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        let total = Double(seconds) * 1000 + Double(attoseconds) / 1e15
        return UInt32(min(total.rounded(.up), Double(UInt32.max)))
    }
}

private final class TimerState: Sendable {
    let action: @Sendable () -> Void
    let repeatInterval: UInt32?

    init(action: @escaping @Sendable () -> Void, repeatInterval: UInt32?) {
        self.action = action
        self.repeatInterval = repeatInterval
    }
}
