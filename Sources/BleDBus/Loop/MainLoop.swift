import CGLib
import Foundation
import Synchronization

/// A GLib main loop over a main context of its own: the one thread on which BleKit's state lives.
///
/// The loop runs on a thread of its own, started on first use, or on the caller's thread when a
/// program hands it its main thread with `run()`. Work from any thread reaches it through
/// `perform(_:)`, in FIFO order, without polling: an enqueue wakes the context.
public final class MainLoop: Sendable {
    /// The loop that `BleLoop`, every `Connection` and every timer use.
    public static let shared = MainLoop(name: "BleKit.MainLoop", startsOnFirstUse: true)

    /// Why `run()` refused to start.
    public enum RunError: Error, Equatable, CustomStringConvertible {
        /// The loop already runs on another thread.
        case alreadyRunning

        /// What to do.
        public var description: String {
            "The BleKit main loop already runs on another thread; call MainLoop.run() before any other BleKit call, or let BleKit keep its own thread."
        }
    }

    private enum RunState {
        case idle
        case starting
        case running
        case stopped
    }

    private struct Queue {
        var work: [Work] = []
        var drainScheduled = false
        var runState: RunState = .idle
    }

    enum Work {
        case closure(@Sendable () -> Void)
        case job(UnownedJob)
    }

    nonisolated(unsafe) let context: OpaquePointer
    nonisolated(unsafe) private let loop: OpaquePointer
    private let name: String
    private let startsOnFirstUse: Bool
    private let queue = Mutex(Queue())
    /// An empty buffer with capacity, swapped with the queue's on each drain; only touched by
    /// `drain()`, which runs on the loop thread alone.
    nonisolated(unsafe) private var spare: [Work] = []
    private let stoppedCondition = NSCondition()

    /// A loop over a new GLib main context. With `startsOnFirstUse`, the first `perform` starts
    /// a thread for it; otherwise the caller runs it with `run()` or `start()`.
    public init(name: String = "BleKit.Loop", startsOnFirstUse: Bool = false) {
        context = g_main_context_new()
        loop = g_main_loop_new(context, 0)
        self.name = name
        self.startsOnFirstUse = startsOnFirstUse
    }

    deinit {
        g_main_loop_unref(loop)
        g_main_context_unref(context)
    }

    /// True when the calling thread is the one running this loop.
    public var isCurrent: Bool { g_main_context_is_owner(context) != 0 }

    /// Runs `work` on the loop thread, after everything enqueued before it.
    ///
    /// Safe from any thread, including the loop's own (then it runs later, never inline).
    public func perform(_ work: @escaping @Sendable () -> Void) {
        enqueue(.closure(work))
    }

    func enqueue(_ work: Work) {
        let (scheduleDrain, startThread) = queue.withLock { state -> (Bool, Bool) in
            state.work.append(work)
            var start = false
            if state.runState == .idle && startsOnFirstUse {
                state.runState = .starting
                start = true
            }
            if state.drainScheduled { return (false, start) }
            state.drainScheduled = true
            return (true, start)
        }
        if scheduleDrain { attachDrainSource() }
        if startThread { spawnThread() }
    }

    /// Starts the loop's thread if it starts on first use and has not started yet: what an
    /// enqueue does, for callers (timers) that attach GLib sources directly and have no work
    /// to enqueue. Costs one lock once the loop runs.
    func startIfFirstUse() {
        guard startsOnFirstUse else { return }
        let shouldStart = queue.withLock { state -> Bool in
            guard state.runState == .idle else { return false }
            state.runState = .starting
            return true
        }
        if shouldStart { spawnThread() }
    }

    /// Starts the loop on a thread of its own; does nothing if it already runs.
    public func start() {
        let shouldStart = queue.withLock { state -> Bool in
            guard state.runState == .idle else { return false }
            state.runState = .starting
            return true
        }
        if shouldStart { spawnThread() }
    }

    /// Runs the loop on the calling thread until `stop()`.
    ///
    /// Throws `RunError.alreadyRunning` when another thread already runs it.
    public func run() throws(RunError) {
        let mayRun = queue.withLock { state -> Bool in
            switch state.runState {
            case .idle, .stopped:
                state.runState = .running
                return true
            case .starting, .running:
                return false
            }
        }
        guard mayRun else { throw .alreadyRunning }
        runOnCurrentThread()
    }

    /// Asks the loop to return from `run()` (or end its thread) after the current event.
    public func stop() {
        g_main_loop_quit(loop)
        g_main_context_wakeup(context)
    }

    private func spawnThread() {
        let thread = Thread { [self] in
            queue.withLock { $0.runState = .running }
            runOnCurrentThread()
        }
        thread.name = name
        thread.start()
    }

    private func runOnCurrentThread() {
        g_main_loop_run(loop)
        queue.withLock { $0.runState = .stopped }
    }

    private func attachDrainSource() {
        guard let source = g_idle_source_new() else { return }
        // The default idle priority would let socket events starve queued work.
        g_source_set_priority(source, G_PRIORITY_DEFAULT)
        let box = Unmanaged.passRetained(LoopReference(self)).toOpaque()
        g_source_set_callback(source, { userData in
            guard let userData else { return 0 }
            let loop = Unmanaged<LoopReference>.fromOpaque(userData).takeUnretainedValue().loop
            return loop.drain() ? 1 : 0
        }, box, { userData in
            guard let userData else { return }
            Unmanaged<LoopReference>.fromOpaque(userData).release()
        })
        g_source_attach(source, context)
        g_source_unref(source)
    }

    /// Runs queued work; true asks GLib to call again (more work arrived meanwhile).
    private func drain() -> Bool {
        // Bounded rounds keep sockets and timers served while work keeps arriving.
        for _ in 0..<8 {
            var batch = spare
            spare = []
            queue.withLock { state in
                // Swapping buffers, rather than copying and clearing, allocates nothing.
                swap(&batch, &state.work)
                if batch.isEmpty { state.drainScheduled = false }
            }
            if batch.isEmpty {
                spare = batch
                return false
            }
            for work in batch {
                switch work {
                case .closure(let body): body()
                case .job(let job):
                    // One executor is both the serial and the task executor, and `enqueue` cannot
                    // tell which role a job came for; running every job in both roles is right for
                    // either, since this thread runs one job at a time.
                    let executor = LoopExecutor.instance(for: self)
                    job.runSynchronously(isolatedTo: executor.asUnownedSerialExecutor(),
                                         taskExecutor: executor.asUnownedTaskExecutor())
                }
            }
            batch.removeAll(keepingCapacity: true)
            spare = batch
        }
        return queue.withLock { state in
            if state.work.isEmpty {
                state.drainScheduled = false
                return false
            }
            return true
        }
    }
}

/// Keeps the loop alive while a GLib source refers to it.
final class LoopReference: Sendable {
    let loop: MainLoop
    init(_ loop: MainLoop) { self.loop = loop }
}
