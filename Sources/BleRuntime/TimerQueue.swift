import CGLib

/// The timers of one `MainLoop`: a deadline heap behind a single GLib source, ready at the
/// earliest deadline.
///
/// A GLib timeout source per timer cost a source allocation, two context locks and a wake-up
/// to start and again to cancel, for every GATT operation and every call deadline, though
/// nearly all of them are cancelled long before they are due. Here starting a timer is a heap
/// insert under a lock (GLib is told only when the earliest deadline moves earlier) and
/// cancelling one drops its action; cancelled entries leave the heap when they come due or
/// when they outnumber the live ones.
final class TimerQueue: Sendable {
    /// One timer's place in the queue.
    final class Entry: @unchecked Sendable {
        // Every field is read and written under the queue's lock only.
        fileprivate var action: (@Sendable () -> Void)?
        fileprivate let interval: Int?
        fileprivate var deadline: Int
        fileprivate let order: UInt

        fileprivate init(action: @escaping @Sendable () -> Void, deadline: Int, interval: Int?, order: UInt) {
            self.action = action
            self.deadline = deadline
            self.interval = interval
            self.order = order
        }
    }

    private struct State {
        var heap: [Entry] = []
        var cancelledInHeap = 0
        var nextOrder: UInt = 0
        /// The ready time GLib was given (monotonic microseconds), -1 for none.
        var armedReadyTime: Int = -1
    }

    /// A pthread lock (`LoopLock`), which ThreadSanitizer sees, unlike `Synchronization.Mutex`.
    private let state = LoopLock(State())
    nonisolated(unsafe) private let source: UnsafeMutablePointer<GSource>?

    init(context: OpaquePointer) {
        source = TimerSource.make(context: context)
        if let source { TimerSource.setQueue(self, of: source) }
    }

    /// Destroys the GLib source; the loop calls it before it releases its context.
    func detach() {
        guard let source else { return }
        g_source_destroy(source)
        g_source_unref(source)
    }

    /// Schedules `action` after `delay` microseconds, then every `interval` if given.
    func schedule(after delay: Int, interval: Int?, action: @escaping @Sendable () -> Void) -> Entry {
        let deadline = g_get_monotonic_time() + max(0, delay)
        return state.withLock { state -> Entry in
            let entry = Entry(action: action, deadline: deadline, interval: interval.map { max(1, $0) }, order: state.nextOrder)
            state.nextOrder += 1
            Self.push(entry, into: &state.heap)
            if state.armedReadyTime == -1 || deadline < state.armedReadyTime {
                state.armedReadyTime = deadline
                // Under the lock, so ready times reach GLib in the order they were decided; GLib
                // never calls back into this queue with its context locked. It wakes the loop.
                if let source { g_source_set_ready_time(source, deadline) }
            }
            return entry
        }
    }

    /// Drops `entry`'s action: it never starts after this returns (unless it runs right now on
    /// the loop thread, called from elsewhere). True when the entry was still live.
    @discardableResult
    func cancel(_ entry: Entry) -> Bool {
        let dropped = state.withLock { state -> (@Sendable () -> Void)? in
            guard let action = entry.action else { return nil }
            entry.action = nil
            state.cancelledInHeap += 1
            if state.cancelledInHeap > 64 && state.cancelledInHeap * 2 > state.heap.count {
                Self.compact(&state)
            }
            return action
        }
        // Released outside the lock: the closure's captures may cancel other timers as they go.
        return dropped != nil
    }

    /// True until cancelled, or for a one-shot entry until it fired.
    func isLive(_ entry: Entry) -> Bool {
        state.withLock { _ in entry.action != nil }
    }

    /// Runs the actions that are due, in deadline order; called by the source on the loop.
    fileprivate func fireDue() {
        let now = g_get_monotonic_time()
        while true {
            let due = state.withLock { state -> (@Sendable () -> Void)? in
                while let first = state.heap.first, first.deadline <= now {
                    Self.popFirst(&state.heap)
                    guard let action = first.action else {
                        state.cancelledInHeap -= 1
                        continue
                    }
                    if let interval = first.interval {
                        // GLib's rule: the next tick counts from this dispatch, not the deadline.
                        first.deadline = now + interval
                        Self.push(first, into: &state.heap)
                    } else {
                        first.action = nil
                    }
                    return action
                }
                return nil
            }
            guard let due else { break }
            due()
        }
        state.withLock { state in
            state.armedReadyTime = state.heap.first?.deadline ?? -1
            if let source { g_source_set_ready_time(source, state.armedReadyTime) }
        }
    }

    // MARK: Heap (earliest deadline first; ties in scheduling order)

    private static func precedes(_ lhs: Entry, _ rhs: Entry) -> Bool {
        lhs.deadline != rhs.deadline ? lhs.deadline < rhs.deadline : lhs.order < rhs.order
    }

    private static func push(_ entry: Entry, into heap: inout [Entry]) {
        heap.append(entry)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(heap[child], heap[parent]) else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private static func popFirst(_ heap: inout [Entry]) {
        guard !heap.isEmpty else { return }
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        siftDown(from: 0, in: &heap)
    }

    private static func siftDown(from start: Int, in heap: inout [Entry]) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var first = parent
            if left < heap.count, precedes(heap[left], heap[first]) { first = left }
            if right < heap.count, precedes(heap[right], heap[first]) { first = right }
            guard first != parent else { return }
            heap.swapAt(parent, first)
            parent = first
        }
    }

    /// Removes the cancelled entries and restores the heap order.
    private static func compact(_ state: inout State) {
        state.heap.removeAll { $0.action == nil }
        state.cancelledInHeap = 0
        guard state.heap.count > 1 else { return }
        for index in stride(from: state.heap.count / 2 - 1, through: 0, by: -1) {
            siftDown(from: index, in: &state.heap)
        }
    }
}

/// The GLib source behind a `TimerQueue`: never polled for, ready at its ready time.
private enum TimerSource {
    struct Layout {
        var source: GSource
        var queue: Unmanaged<TimerQueue>?
    }

    static let queueOffset = MemoryLayout<Layout>.offset(of: \Layout.queue) ?? MemoryLayout<GSource>.stride

    nonisolated(unsafe) static let functions: UnsafeMutablePointer<GSourceFuncs> = {
        let functions = UnsafeMutablePointer<GSourceFuncs>.allocate(capacity: 1)
        // GLib dispatches a source whose ready time has passed; prepare and check add nothing.
        functions.initialize(to: GSourceFuncs(
            prepare: nil,
            check: nil,
            dispatch: { source, _, _ in
                TimerSource.queue(of: source)?.fireDue()
                return 1
            },
            finalize: nil, closure_callback: nil, closure_marshal: nil))
        return functions
    }()

    static func make(context: OpaquePointer) -> UnsafeMutablePointer<GSource>? {
        guard let source = g_source_new(functions, UInt32(MemoryLayout<Layout>.size)) else { return nil }
        UnsafeMutableRawPointer(source).storeBytes(of: nil, toByteOffset: queueOffset, as: Unmanaged<TimerQueue>?.self)
        g_source_set_priority(source, G_PRIORITY_DEFAULT)
        g_source_attach(source, context)
        return source
    }

    /// Unretained: the queue owns the source and destroys it first.
    static func setQueue(_ queue: TimerQueue, of source: UnsafeMutablePointer<GSource>) {
        UnsafeMutableRawPointer(source).storeBytes(of: Unmanaged.passUnretained(queue), toByteOffset: queueOffset,
                                                   as: Unmanaged<TimerQueue>?.self)
    }

    static func queue(of source: UnsafeMutablePointer<GSource>?) -> TimerQueue? {
        guard let source else { return nil }
        return UnsafeRawPointer(source).load(fromByteOffset: queueOffset, as: Unmanaged<TimerQueue>?.self)?.takeUnretainedValue()
    }
}
