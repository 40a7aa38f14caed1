import BleDBus
import Dispatch
import Foundation
import Synchronization

/// Notices callbacks queued for the app's `queue:` that do not run: the thread serving that
/// queue is blocked (typically the main thread waiting on a semaphore for the very callback it
/// blocks) or nothing serves it (a command-line program that never runs the main queue). It
/// reports once per stall, on standard error, instead of the program hanging without a word.
final class CallbackStallMonitor: Sendable {
    /// How long queued callbacks may wait before the stall is reported.
    package static let threshold = Mutex<Duration>(.seconds(5))
    /// Also told about each report (tests; the log is the user-facing report).
    package static let observer = Mutex<(@Sendable (String) -> Void)?>(nil)

    private struct State {
        var pending = 0
        var lastProgress = ContinuousClock.now
        var reported = false
    }

    private let label: String
    // An NSLock, not Synchronization's Mutex: the wrapped callback runs on the app's queue, and
    // ThreadSanitizer does not see the Mutex's futex hand-off (it reported these accesses as a
    // race); a pthread-based lock it understands keeps make test-sanitizers meaningful.
    private let state = Locked(State())
    @BleLoop private var timer: LoopTimer?

    init(label: String) { self.label = label }

    /// Wraps `work` so that running it counts as progress; arms the check.
    @BleLoop func track(_ work: @escaping @Sendable () -> Void) -> @Sendable () -> Void {
        let first = state.withLock { state -> Bool in
            if state.pending == 0 { state.lastProgress = .now }
            state.pending += 1
            return state.pending == 1
        }
        if first, timer == nil { arm() }
        return { [self] in
            work()
            state.withLock { state in
                state.pending -= 1
                state.lastProgress = .now
                state.reported = false
            }
        }
    }

    @BleLoop private func arm() {
        let threshold = Self.threshold.withLock { $0 }
        let interval = min(threshold, .seconds(1))
        timer = LoopTimer.scheduled(after: interval, repeating: interval) { [weak self] in self?.check(threshold) }
    }

    @BleLoop private func check(_ threshold: Duration) {
        let (pending, waited, report) = state.withLock { state -> (Int, Duration, Bool) in
            let waited = ContinuousClock.now - state.lastProgress
            let report = state.pending > 0 && !state.reported && waited >= threshold
            if report { state.reported = true }
            return (state.pending, waited, report)
        }
        if pending == 0 {
            timer?.cancel()
            timer = nil
            return
        }
        guard report else { return }
        let seconds = Double(waited.components.seconds) + Double(waited.components.attoseconds) / 1e18
        let text = "\(pending) callback(s) for the delegate queue '\(label)' have waited \(String(format: "%.1f", seconds)) s without running: "
            + "the thread that serves that queue is blocked (the main thread waiting on a semaphore, a sleep or another synchronous wait "
            + "for a BleKit result deadlocks itself), or nothing serves it (a command-line program must run the main queue: "
            + "BleProgram.run, dispatchMain() or RunLoop.main.run()). The callbacks run as soon as the queue does."
        BleLog.log(.warning, text)
        Self.observer.withLock { $0 }?(text)
    }
}
