/// A `SerialExecutor` that runs jobs on a `MainLoop`'s thread, in the order they were enqueued.
///
/// `BleLoop`'s executor: actor-isolated BleKit state runs where the D-Bus callbacks run, so no
/// hop and no lock is needed between them, and the compiler checks the confinement.
public final class LoopExecutor: SerialExecutor {
    /// The loop this executor enqueues onto.
    public let loop: MainLoop

    private static let sharedExecutor = LoopExecutor(loop: MainLoop.shared)

    /// The executor of `loop` (the shared one for `MainLoop.shared`).
    public static func shared(for loop: MainLoop) -> UnownedSerialExecutor {
        if loop === MainLoop.shared { return sharedExecutor.asUnownedSerialExecutor() }
        return LoopExecutor(loop: loop).asUnownedSerialExecutor()
    }

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

    /// Traps unless the caller runs on the loop thread: the runtime's check behind
    /// `assumeIsolated`.
    public func checkIsolated() {
        precondition(loop.isCurrent, "BleKit state touched off its main loop thread")
    }
}
