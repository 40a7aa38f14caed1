import BleDBus

/// The deadlines of a peripheral's running GATT operations, under one loop timer.
///
/// A timer per operation cost four allocations and two trips through the timer queue's lock
/// per operation, for a deadline that almost never fires. Here a deadline is an entry in a
/// heap, and the one timer is armed for the earliest entry. It is not cancelled when an
/// operation ends: entries of finished operations are dropped when they reach the top (at the
/// next operation, or when the timer fires), and a timer that fires early finds nothing to
/// expire and re-arms for the earliest entry left.
@BleLoop
struct OperationDeadlines {
    private var heap = DeadlineHeap<GattOperation>()
    private var timer: LoopTimer?
    private var armedFor: Int?
    private var timeoutMemo = MicrosecondsMemo()

    /// Operations whose deadline is still ahead of them, for diagnostics: entries of finished
    /// operations waiting to be dropped are no deadlines any more.
    var liveCount: Int { heap.count { !$0.finished } }

    /// Gives `operation` its deadline, `timeout` from now. `arm` makes the timer for an instant
    /// (the peripheral's, which calls `takeExpired` and then `rearm` when it fires).
    mutating func add(_ operation: GattOperation, timeout: Duration, arm: (Int) -> LoopTimer) {
        dropFinishedAtTop()
        heap.insert(MonotonicTime.now + timeoutMemo.microseconds(of: timeout), operation)
        rearm(arm)
    }

    /// Removes and returns the unfinished operations whose deadline has passed, earliest first,
    /// and disarms the timer (call `rearm` after finishing them).
    mutating func takeExpired(now: Int) -> [GattOperation] {
        timer = nil
        armedFor = nil
        var expired: [GattOperation] = []
        while let (deadline, operation) = heap.first, operation.finished || deadline <= now {
            heap.removeFirst()
            if !operation.finished { expired.append(operation) }
        }
        return expired
    }

    /// Arms the timer for the earliest deadline, unless it is armed for that or sooner.
    mutating func rearm(_ arm: (Int) -> LoopTimer) {
        dropFinishedAtTop()
        guard let earliest = heap.first?.deadline else { return }
        if timer != nil, let armedFor, armedFor <= earliest { return }
        timer?.cancel()
        armedFor = earliest
        timer = arm(earliest)
    }

    /// Forgets every deadline (every operation has ended: a disconnect) and stops the timer.
    mutating func removeAll() {
        heap.removeAll()
        timer?.cancel()
        timer = nil
        armedFor = nil
    }

    private mutating func dropFinishedAtTop() {
        while let (_, operation) = heap.first, operation.finished { heap.removeFirst() }
    }
}
