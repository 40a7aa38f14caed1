import Synchronization

/// A `SerialExecutor` that runs jobs on a `MainLoop`'s thread, in the order they were enqueued.
///
/// `BleLoop`'s executor: actor-isolated BleKit state runs where the D-Bus callbacks run, so no
/// hop and no lock is needed between them, and the compiler checks the confinement.
///
/// It is a `TaskExecutor` too, so that a task awaiting a reply on the loop can prefer it: the
/// runtime resumes a continuation on the generic executor, which would otherwise send every
/// reply through a global-pool thread and back to the loop (two thread wake-ups per call).
public final class LoopExecutor: SerialExecutor, TaskExecutor {
    /// The loop this executor enqueues onto.
    public let loop: MainLoop

    private static let sharedExecutor = LoopExecutor(loop: MainLoop.shared)

    /// The executor of `loop` (the shared one for `MainLoop.shared`).
    public static func shared(for loop: MainLoop) -> UnownedSerialExecutor {
        instance(for: loop).asUnownedSerialExecutor()
    }

    /// The shared loop's executor, as the task executor that `Connection` calls prefer.
    package static var sharedTaskExecutor: LoopExecutor { sharedExecutor }

    static func instance(for loop: MainLoop) -> LoopExecutor {
        if loop === MainLoop.shared { return sharedExecutor }
        return privateExecutors.withLock { executors in
            if let known = executors[ObjectIdentifier(loop)] { return known }
            let created = LoopExecutor(loop: loop)
            executors[ObjectIdentifier(loop)] = created
            return created
        }
    }

    /// Private loops' executors. `shared(for:)` hands out an unowned reference, so the executor
    /// must outlive the call: a fresh one per call was freed at once and its jobs were enqueued
    /// through freed memory. Kept for the process's life, which keeps such a loop alive too.
    private static let privateExecutors = Mutex<[ObjectIdentifier: LoopExecutor]>([:])

    /// An executor for `loop`.
    public init(loop: MainLoop) {
        self.loop = loop
    }

    /// Enqueues `job` onto the loop.
    public func enqueue(_ job: consuming ExecutorJob) {
        loop.enqueue(.job(UnownedJob(job)))
    }

    /// This executor as an unowned reference.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// This executor as an unowned task executor reference.
    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Traps unless the caller runs on the loop thread: the runtime's check behind
    /// `assumeIsolated`.
    public func checkIsolated() {
        precondition(loop.isCurrent, "BleKit state touched off its main loop thread")
    }

    /// True on the loop thread: lets the runtime see that GLib and libdbus callbacks, which run
    /// outside any Swift job, are isolated to the loop, so that an `isolated deinit` released
    /// there (an answered `IncomingCall`, once per call) runs at once instead of as a new job.
    public func isIsolatingCurrentContext() -> Bool? {
        loop.isCurrent
    }
}
