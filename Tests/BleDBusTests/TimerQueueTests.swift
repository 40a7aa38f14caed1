import BleDBus
import Foundation
import Synchronization
import Testing

/// Timers share one queue per loop: deadlines in order whatever the order they were started
/// in, thousands of cancelled timers that never fire, a timer started from another thread
/// that is due before everything else still fires on time, and a private loop's timers.
@Suite(.timeLimit(.minutes(1))) struct TimerQueueTests {
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

    @Test func thousandsOfCancelledTimersNeverFireAndLiveOnesStillDo() async throws {
        let cancelledFired = Atomic<Int>(0)
        // Many more than the queue keeps before it compacts, cancelled in a scattered order.
        var cancelled: [LoopTimer] = (0..<2_000).map { index in
            LoopTimer(after: .milliseconds(300 + index % 50)) { cancelledFired.add(1, ordering: .relaxed) }
        }
        let live = Mailbox<Int>("a live timer")
        let survivors = (0..<5).map { index in LoopTimer(after: .milliseconds(500 + 10 * index)) { live.post(index) } }
        for index in stride(from: 0, to: cancelled.count, by: 2) { cancelled[index].cancel() }
        for index in stride(from: 1, to: cancelled.count, by: 2) { cancelled[index].cancel() }
        let anyCancelledActive = cancelled.contains { $0.isActive }
        let allSurvivorsActive = survivors.allSatisfy { $0.isActive }
        #expect(!anyCancelledActive)
        #expect(allSurvivorsActive)
        #expect(try await live.next(5) == [0, 1, 2, 3, 4])
        // Past every cancelled timer's deadline (all under 350 ms) and the survivors'.
        let later = Mailbox<Void>("a later timer")
        let clock = LoopTimer(after: .milliseconds(80)) { later.post(()) }
        try await later.next()
        #expect(cancelledFired.load(ordering: .relaxed) == 0)
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
