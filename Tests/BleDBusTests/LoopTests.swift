import BleDBus
import BleTestSupport
import Foundation
import Synchronization
import Testing

/// State mutated without a lock, only inside loop work: if work ever ran concurrently the
/// counts would come out wrong (and the thread sanitizer would report it).
final class UnguardedLog: @unchecked Sendable {
    var count = 0
    var offLoop = 0
    var overlaps = 0
    var inside = false
    var orderByThread: [[Int]]

    init(threads: Int) {
        orderByThread = Array(repeating: [], count: threads)
    }
}

@BleLoop func isOnTheLoopAcrossSuspensions() async -> [Bool] {
    var seen = [MainLoop.shared.isCurrent]
    await Task.yield()
    seen.append(MainLoop.shared.isCurrent)
    try? await Task.sleep(for: .milliseconds(5))
    seen.append(MainLoop.shared.isCurrent)
    await loopTurn()
    seen.append(MainLoop.shared.isCurrent)
    return seen
}

/// An actor whose executor is a private loop's.
actor PrivateLoopActor {
    let loop: MainLoop
    init(loop: MainLoop) { self.loop = loop }
    nonisolated var unownedExecutor: UnownedSerialExecutor { LoopExecutor.shared(for: loop) }
    func runsOnItsLoop() -> Bool { loop.isCurrent && !MainLoop.shared.isCurrent }
}

/// The shared loop, its executor, timers, and private loops run by hand.
@Suite(.timeLimit(.minutes(TestTime.minutes(1)))) struct LoopTests {
    @Test func workFromManyThreadsRunsOneAtATimeOnTheLoopThreadInEachThreadsOrder() async throws {
        let threads = 8
        let perThread = 1000
        let log = UnguardedLog(threads: threads)
        let done = Mailbox<Void>("all work to run")
        for thread in 0..<threads {
            Thread {
                for index in 0..<perThread {
                    MainLoop.shared.perform {
                        if log.inside { log.overlaps += 1 }
                        log.inside = true
                        if !MainLoop.shared.isCurrent { log.offLoop += 1 }
                        log.count += 1
                        log.orderByThread[thread].append(index)
                        log.inside = false
                        if log.count == threads * perThread { done.post(()) }
                    }
                }
            }.start()
        }
        try await done.next(within: .seconds(30))
        // The mailbox's lock orders these reads after the last write on the loop.
        #expect(log.count == threads * perThread)
        #expect(log.offLoop == 0)
        #expect(log.overlaps == 0)
        for order in log.orderByThread { #expect(order == Array(0..<perThread)) }
    }

    @Test func workPerformedFromTheLoopItselfRunsLaterNeverInline() async throws {
        let log = Mutex<[Int]>([])
        let done = Mailbox<Void>("the nested work")
        MainLoop.shared.perform {
            log.withLock { $0.append(1) }
            MainLoop.shared.perform {
                log.withLock { $0.append(3) }
                done.post(())
            }
            log.withLock { $0.append(2) }
        }
        try await done.next()
        #expect(log.withLock { $0 } == [1, 2, 3])
    }

    @Test func bleLoopAsyncFunctionsRunOnTheLoopThreadAcrossSuspensions() async {
        #expect(!MainLoop.shared.isCurrent)
        #expect(await isOnTheLoopAcrossSuspensions() == [true, true, true, true])
    }

    @Test func aBleLoopTaskRunsOnTheLoopThread() async {
        let onLoop = await Task { @BleLoop in MainLoop.shared.isCurrent }.value
        #expect(onLoop)
    }

    @Test func bleLoopPerformRunsIsolatedCodeOnTheLoop() async throws {
        let result = Mailbox<Bool>("the performed work")
        BleLoop.perform { result.post(MainLoop.shared.isCurrent) }
        #expect(try await result.next())
    }

    @Test func theSharedLoopCannotBeRunByHandOnceItHasItsOwnThread() async {
        await loopTurn()
        #expect(throws: MainLoop.RunError.alreadyRunning) { try MainLoop.shared.run() }
    }

    // MARK: Timers

    @Test func aOneShotTimerFiresOnceOnTheLoop() async throws {
        let fires = Mailbox<Bool>("the one-shot timer")
        let timer = LoopTimer(after: .milliseconds(10)) { fires.post(MainLoop.shared.isCurrent) }
        #expect(try await fires.next())
        await loopTurn()
        #expect(!timer.isActive)
        // Had it been re-armed it would fire every 10 ms; wait for a later timer instead of sleeping.
        let later = Mailbox<Void>("a later timer")
        let clock = LoopTimer(after: .milliseconds(100)) { later.post(()) }
        try await later.next()
        #expect(fires.receivedCount == 1)
        withExtendedLifetime((timer, clock)) {}
    }

    @Test func aRepeatingTimerFiresRepeatedlyUntilCancelled() async throws {
        let fires = Mailbox<Void>("a repeating tick")
        let timer = LoopTimer(after: .milliseconds(5), repeating: .milliseconds(5)) { fires.post(()) }
        _ = try await fires.next(5)
        #expect(timer.isActive)
        timer.cancel()
        #expect(!timer.isActive)
    }

    @Test func aRepeatingTimerRepeatsWithItsPeriodNotItsFirstDelay() async throws {
        let fires = Mailbox<Void>("the first tick")
        let timer = LoopTimer(after: .milliseconds(1), repeating: .seconds(30)) { fires.post(()) }
        try await fires.next()
        let later = Mailbox<Void>("a later timer")
        let clock = LoopTimer(after: .milliseconds(100)) { later.post(()) }
        try await later.next()
        #expect(fires.receivedCount == 1)
        withExtendedLifetime((timer, clock)) {}
    }

    @Test func cancellingARepeatingTimerInItsActionStopsIt() async throws {
        let fires = Mailbox<Int>("a tick")
        let ticks = Mutex(0)
        let holder = Mutex<LoopTimer?>(nil)
        // The first tick comes late enough for `holder` to be set before it: a loaded machine
        // could otherwise run three 2 ms ticks before the timer is reachable to cancel.
        let timer = LoopTimer(after: .milliseconds(100), repeating: .milliseconds(2)) {
            let count = ticks.withLock { count in
                count += 1
                return count
            }
            if count == 3 { holder.withLock { $0?.cancel() } }
            fires.post(count)
        }
        holder.withLock { $0 = timer }
        #expect(try await fires.next(3) == [1, 2, 3])
        let later = Mailbox<Void>("a later timer")
        let clock = LoopTimer(after: .milliseconds(50)) { later.post(()) }
        try await later.next()
        #expect(fires.receivedCount == 3)
        withExtendedLifetime(clock) {}
    }

    @Test func aTimerCancelledBeforeItsDelayNeverFires() async throws {
        let fires = Mailbox<Void>("the cancelled timer")
        let timer = LoopTimer(after: .milliseconds(20)) { fires.post(()) }
        timer.cancel()
        timer.cancel()
        #expect(!timer.isActive)
        let later = Mailbox<Void>("a later timer")
        let clock = LoopTimer(after: .milliseconds(80)) { later.post(()) }
        try await later.next()
        #expect(fires.receivedCount == 0)
        withExtendedLifetime(clock) {}
    }

    @Test func releasingATimerCancelsIt() async throws {
        let fires = Mailbox<Void>("the released timer")
        var timer: LoopTimer? = LoopTimer(after: .milliseconds(20)) { fires.post(()) }
        #expect(timer?.isActive == true)
        timer = nil
        let later = Mailbox<Void>("a later timer")
        let clock = LoopTimer(after: .milliseconds(80)) { later.post(()) }
        try await later.next()
        #expect(fires.receivedCount == 0)
        withExtendedLifetime(clock) {}
    }

    @Test func aScheduledTimerRunsItsActionAsBleLoopCode() async throws {
        let fires = Mailbox<Bool>("the scheduled timer")
        let timer = LoopTimer.scheduled(after: .milliseconds(5)) { fires.post(MainLoop.shared.isCurrent) }
        #expect(try await fires.next())
        withExtendedLifetime(timer) {}
    }

    // MARK: Private loops

    /// Runs `loop` on a thread of its own; the mailbox gets `run()`'s result when it returns.
    static func runOnThread(_ loop: MainLoop) -> Mailbox<Result<Void, MainLoop.RunError>> {
        let finished = Mailbox<Result<Void, MainLoop.RunError>>("run() to return")
        Thread {
            finished.post(Result { () throws(MainLoop.RunError) in try loop.run() })
        }.start()
        return finished
    }

    @Test func aPrivateLoopRunsWorkOnTheThreadThatRunsItAndReturnsOnStop() async throws {
        let loop = MainLoop(name: "test loop")
        let finished = Self.runOnThread(loop)
        let ran = Mailbox<(Bool, Bool)>("work on the private loop")
        loop.perform { ran.post((loop.isCurrent, MainLoop.shared.isCurrent)) }
        let (onPrivateLoop, onSharedLoop) = try await ran.next()
        #expect(onPrivateLoop)
        #expect(!onSharedLoop)
        #expect(!loop.isCurrent)
        loop.stop()
        #expect(try await finished.next().get() == ())
    }

    @Test func aPrivateLoopRunningOnAThreadCannotBeRunTwice() async throws {
        let loop = MainLoop(name: "test loop")
        let finished = Self.runOnThread(loop)
        let ran = Mailbox<Void>("work on the private loop")
        loop.perform { ran.post(()) }
        try await ran.next()
        #expect(throws: MainLoop.RunError.alreadyRunning) { try loop.run() }
        loop.stop()
        _ = try await finished.next()
    }

    @Test func aStoppedPrivateLoopCanRunAgain() async throws {
        let loop = MainLoop(name: "test loop")
        for round in 0..<2 {
            let finished = Self.runOnThread(loop)
            let ran = Mailbox<Int>("work on the private loop")
            loop.perform { ran.post(round) }
            #expect(try await ran.next() == round)
            loop.stop()
            _ = try await finished.next()
        }
    }

    @Test func aTimerOnAPrivateLoopFiresOnThatLoopsThread() async throws {
        let loop = MainLoop(name: "test loop")
        let finished = Self.runOnThread(loop)
        let fires = Mailbox<Bool>("the private loop's timer")
        let timer = LoopTimer(after: .milliseconds(5), on: loop) { fires.post(loop.isCurrent && !MainLoop.shared.isCurrent) }
        #expect(try await fires.next())
        loop.stop()
        _ = try await finished.next()
        withExtendedLifetime(timer) {}
    }

    @Test func anActorOnAPrivateLoopsExecutorRunsOnThatLoop() async throws {
        let loop = MainLoop(name: "actor loop")
        let finished = Self.runOnThread(loop)
        let actor = PrivateLoopActor(loop: loop)
        for _ in 0..<50 { #expect(await actor.runsOnItsLoop()) }
        loop.stop()
        _ = try await finished.next()
    }
}
