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

    /// The GLib main context, for sources attached by hand (D-Bus watches and timeouts).
    nonisolated(unsafe) package let context: OpaquePointer
    nonisolated(unsafe) private let loop: OpaquePointer
    /// The source that runs queued work: one for the loop's life, ready while `drainPending`
    /// is set. (An idle source per batch of work cost a GLib source per method call.)
    nonisolated(unsafe) private var drainSource: UnsafeMutablePointer<GSource>?
    /// Set, under the queue lock, while queued work waits for the drain source.
    private let drainPending = Atomic<Bool>(false)
    private let name: String
    private let startsOnFirstUse: Bool
    private let queue = LoopLock(Queue())
    /// An empty buffer with capacity, swapped with the queue's on each drain; only touched by
    /// `drain()`, which runs on the loop thread alone.
    nonisolated(unsafe) private var spare: [Work] = []
    private let stoppedCondition = NSCondition()
    /// Every `LoopTimer` of this loop, behind one GLib source.
    let timers: TimerQueue

    /// A loop over a new GLib main context. With `startsOnFirstUse`, the first `perform` starts
    /// a thread for it; otherwise the caller runs it with `run()` or `start()`.
    public init(name: String = "BleKit.Loop", startsOnFirstUse: Bool = false) {
        context = g_main_context_new()
        loop = g_main_loop_new(context, 0)
        self.name = name
        self.startsOnFirstUse = startsOnFirstUse
        timers = TimerQueue(context: context)
        drainSource = DrainSource.make(for: self)
    }

    deinit {
        timers.detach()
        if let drainSource {
            g_source_destroy(drainSource)
            g_source_unref(drainSource)
        }
        g_main_loop_unref(loop)
        g_main_context_unref(context)
    }

    /// True when the calling thread is the one running this loop.
    public var isCurrent: Bool {
        // Asked several times per message (every C callback proves its isolation with it):
        // comparing thread identities costs a thread-local read, where
        // `g_main_context_is_owner` locks and unlocks the context's mutex. Only `run()` and the
        // loop's own thread iterate this context, so its owner is the thread recorded here.
        let runner = runningThread.load(ordering: .relaxed)
        return runner != 0 && runner == UInt(pthread_self())
    }

    /// The thread inside `g_main_loop_run`, 0 when none. Relaxed is enough: a thread only ever
    /// finds its own identity here if it stored it itself.
    private let runningThread = Atomic<UInt>(0)

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
            drainPending.store(true, ordering: .releasing)
            return (true, start)
        }
        // The loop thread looks at the flag before it next polls; another thread must wake it.
        if scheduleDrain && !isCurrent { g_main_context_wakeup(context) }
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
        runningThread.store(UInt(pthread_self()), ordering: .relaxed)
        defer { runningThread.store(0, ordering: .relaxed) }
        g_main_loop_run(loop)
        queue.withLock { $0.runState = .stopped }
    }

    /// Whether the drain source is ready, for its GLib callbacks.
    fileprivate var hasPendingWork: Bool { drainPending.load(ordering: .acquiring) }

    /// Runs queued work; true when more arrived meanwhile (the source then stays ready, and
    /// GLib serves sockets and timers before it calls again).
    fileprivate func drain() -> Bool {
        // Bounded rounds keep sockets and timers served while work keeps arriving.
        for _ in 0..<8 {
            var batch = spare
            spare = []
            queue.withLock { state in
                // Swapping buffers, rather than copying and clearing, allocates nothing.
                swap(&batch, &state.work)
                if batch.isEmpty {
                    state.drainScheduled = false
                    drainPending.store(false, ordering: .releasing)
                }
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
                drainPending.store(false, ordering: .releasing)
                return false
            }
            return true
        }
    }
}

/// The GLib source behind `MainLoop`'s queue: ready whenever work is pending, never polled
/// for, never destroyed before its loop.
private enum DrainSource {
    /// A `GSource` followed by the (unretained) loop it drains: the loop owns the source.
    struct Layout {
        var source: GSource
        var loop: Unmanaged<MainLoop>
    }

    // A constant offset into memory GLib allocated; `Layout` exists only to compute it.
    static let loopOffset = MemoryLayout<Layout>.offset(of: \Layout.loop) ?? MemoryLayout<GSource>.stride

    nonisolated(unsafe) static let functions: UnsafeMutablePointer<GSourceFuncs> = {
        let functions = UnsafeMutablePointer<GSourceFuncs>.allocate(capacity: 1)
        functions.initialize(to: GSourceFuncs(
            prepare: { source, timeout in
                timeout?.pointee = -1
                return DrainSource.loop(of: source)?.hasPendingWork == true ? 1 : 0
            },
            check: { source in
                DrainSource.loop(of: source)?.hasPendingWork == true ? 1 : 0
            },
            dispatch: { source, _, _ in
                _ = DrainSource.loop(of: source)?.drain()
                return 1
            },
            finalize: nil, closure_callback: nil, closure_marshal: nil))
        return functions
    }()

    static func make(for loop: MainLoop) -> UnsafeMutablePointer<GSource>? {
        guard let source = g_source_new(functions, UInt32(MemoryLayout<Layout>.size)) else { return nil }
        UnsafeMutableRawPointer(source).storeBytes(of: Unmanaged.passUnretained(loop), toByteOffset: loopOffset,
                                                   as: Unmanaged<MainLoop>.self)
        // The default idle priority would let socket events starve queued work.
        g_source_set_priority(source, G_PRIORITY_DEFAULT)
        g_source_attach(source, loop.context)
        return source
    }

    static func loop(of source: UnsafeMutablePointer<GSource>?) -> MainLoop? {
        guard let source else { return nil }
        return UnsafeRawPointer(source).load(fromByteOffset: loopOffset, as: Unmanaged<MainLoop>.self).takeUnretainedValue()
    }
}
