import BleDBus
import BleTestSupport
import Foundation
import Synchronization
import Testing

/// Timers share one queue per loop: deadlines in order whatever the order they were started
/// in, thousands of cancelled timers that never fire, a timer started from another thread
/// that is due before everything else still fires on time, and a private loop's timers.
@Suite(.timeLimit(.minutes(TestTime.minutes(1)))) struct TimerQueueTests {
    @Test func timersFireInDeadlineOrderNotInStartOrder() async throws {
        let fired = Mailbox<Int>("a timer")
        let delays = [40, 10, 30, 0, 20, 10]
        let timers = delays.enumerated().map { index, delay in
            LoopTimer(after: .milliseconds(delay)) { fired.post(index) }
        }
        // Equal deadlines keep their start order (1 before 5).
        #expect(try await fired.next(delays.count) == [3, 1, 5, 4, 2, 0])
        withExtendedLifetime(timers) {}
    }

    /// Started and cancelled on the loop thread, so the loop cannot fire one in between, however
    /// slow the machine (or the sanitizer) is.
    @BleLoop static func startAndCancel(_ count: Int, counting fired: LoopLock<Int>) -> [LoopTimer] {
        let timers: [LoopTimer] = (0..<count).map { index in
            LoopTimer(after: .milliseconds(index % 50)) { fired.withLock { $0 += 1 } }
        }
        // Scattered, so cancelled entries sit all over the heap when it compacts.
        for index in stride(from: 0, to: timers.count, by: 2) { timers[index].cancel() }
        for index in stride(from: 1, to: timers.count, by: 2) { timers[index].cancel() }
        return timers
    }

    @Test func thousandsOfCancelledTimersNeverFireAndLiveOnesStillDo() async throws {
        let cancelledFired = LoopLock(0)
        let live = Mailbox<Int>("a live timer")
        // Started before the cancelled ones, with deadlines among theirs.
        let survivors = (0..<5).map { index in LoopTimer(after: .milliseconds(10 * index)) { live.post(index) } }
        // Many more than the queue keeps before it compacts.
        var cancelled = await Self.startAndCancel(5_000, counting: cancelledFired)
        let anyCancelledActive = cancelled.contains { $0.isActive }
        #expect(!anyCancelledActive)
        #expect(try await live.next(5) == [0, 1, 2, 3, 4])
        // Past every cancelled timer's deadline (all under 50 ms after they started).
        let later = Mailbox<Void>("a later timer")
        let clock = LoopTimer(after: .milliseconds(80)) { later.post(()) }
        try await later.next()
        #expect(cancelledFired.value == 0)
        let anySurvivorActive = survivors.contains { $0.isActive }
        #expect(!anySurvivorActive)
        cancelled.removeAll()
        withExtendedLifetime(clock) {}
    }

    /// A long timer arms the queue first; a short one started from another thread must move
    /// the loop's wake-up earlier, not wait for the long one.
    @Test func aShorterTimerStartedFromAnotherThreadFiresFirst() async throws {
        let fired = Mailbox<String>("a timer")
        let long = LoopTimer(after: .seconds(30)) { fired.post("long") }
        let short = await Task.detached { LoopTimer(after: .milliseconds(5)) { fired.post("short") } }.value
        let started = ContinuousClock.now
        #expect(try await fired.next() == "short")
        // Well under the long timer's delay: the loop woke for the short one.
        #expect(ContinuousClock.now - started < .seconds(20))
        long.cancel()
        withExtendedLifetime(short) {}
    }

    @Test func cancellingATimerFromAnotherTimersActionStopsIt() async throws {
        let fired = Mailbox<String>("a timer")
        let victim = Mutex<LoopTimer?>(nil)
        // Same deadline, started first: runs first, in the same dispatch as the victim.
        let killer = LoopTimer(after: .milliseconds(10)) {
            victim.withLock { $0?.cancel() }
            fired.post("killer")
        }
        victim.withLock { $0 = LoopTimer(after: .milliseconds(10)) { fired.post("victim") } }
        #expect(try await fired.next() == "killer")
        let later = Mailbox<Void>("a later timer")
        let clock = LoopTimer(after: .milliseconds(50)) { later.post(()) }
        try await later.next()
        #expect(fired.receivedCount == 1)
        withExtendedLifetime((killer, clock)) {}
    }
}
