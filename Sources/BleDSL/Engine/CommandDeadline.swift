import BleRuntime

/// The running command's deadline, under one loop timer that the engine keeps armed.
///
/// Only the running command has a deadline: queued commands have not started, and streams have
/// none. The deadline restarts when the command begins and with every packet that says "go
/// on". A loop timer per restart cost an allocation and a trip through the timer queue's lock
/// to arm, and as much again to cancel: 4,000 instructions per command, a fifth of the
/// engine's cost per round trip, for a deadline that almost never fires. Here a restart writes
/// an integer. The timer is not cancelled when a command ends; when it fires it finds the
/// deadline gone or moved on, and re-arms for it if there is one.
@BleLoop
struct CommandDeadline {
    /// What the engine does when the timer fires.
    enum Outcome: Equatable {
        /// The running command's deadline passed: it times out after `seconds`.
        case expired(seconds: Double)
        /// The deadline moved on: arm the timer again for this instant.
        case rearm(at: Int)
        /// No deadline (the command ended): the timer stays off.
        case idle
    }

    /// The deadline, in `MonotonicTime` microseconds; nil when no command is waiting on one.
    private(set) var instant: Int?
    private var seconds = 0.0
    private var timer: LoopTimer?
    private var armedFor = Int.max

    /// Sets the deadline `seconds` after `now`, or none when `seconds` is not positive (0, a
    /// negative number or NaN: the command waits for ever, as in FXBlueTooth). Returns the
    /// instant to arm the timer for, or nil when it is armed to fire by then already.
    mutating func restart(seconds: Double, now: Int) -> Int? {
        guard seconds > 0 else {
            instant = nil
            return nil
        }
        self.seconds = seconds
        // Past 10^9 s (31 years) a deadline is as good as none; capped so `now +` cannot overflow.
        let microseconds = seconds < 1e9 ? Int((seconds * 1e6).rounded(.up)) : Int.max / 4
        let deadline = now + microseconds
        instant = deadline
        return timer != nil && armedFor <= deadline ? nil : deadline
    }

    /// The command no longer waits (it ended, or turned into a stream).
    mutating func clear() {
        instant = nil
    }

    /// Keeps `timer`, armed for `deadline`, in place of the one armed before.
    mutating func armed(_ timer: LoopTimer, for deadline: Int) {
        self.timer?.cancel()
        self.timer = timer
        armedFor = deadline
    }

    /// The timer fired at `now`.
    mutating func fired(now: Int) -> Outcome {
        timer = nil
        armedFor = .max
        guard let instant else { return .idle }
        guard instant <= now else { return .rearm(at: instant) }
        self.instant = nil
        return .expired(seconds: seconds)
    }
}
