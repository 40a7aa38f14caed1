/// Deadlines (`MonotonicTime` microseconds) with a payload each, earliest first: a binary
/// min-heap, ties in insertion order.
///
/// The loop's deadline keepers (D-Bus calls, GATT operations) keep one entry per thing that
/// can time out and arm one timer for the earliest, instead of a timer each.
public struct DeadlineHeap<Payload> {
    @usableFromInline var entries: [(deadline: Int, order: UInt64, payload: Payload)] = []
    @usableFromInline var nextOrder: UInt64 = 0

    /// An empty heap.
    @inlinable public init() {}

    /// The earliest deadline and its payload.
    @inlinable public var first: (deadline: Int, payload: Payload)? {
        entries.first.map { ($0.deadline, $0.payload) }
    }

    /// The number of entries.
    @inlinable public var count: Int { entries.count }

    /// The number of payloads that satisfy `predicate`.
    @inlinable public func count(where predicate: (Payload) -> Bool) -> Int {
        entries.reduce(0) { $0 + (predicate($1.payload) ? 1 : 0) }
    }

    /// Adds `payload` due at `deadline`.
    @inlinable public mutating func insert(_ deadline: Int, _ payload: Payload) {
        entries.append((deadline, nextOrder, payload))
        nextOrder &+= 1
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard precedes(child, parent) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes the earliest entry (none: nothing happens).
    @inlinable public mutating func removeFirst() {
        guard !entries.isEmpty else { return }
        entries.swapAt(0, entries.count - 1)
        entries.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var first = parent
            if left < entries.count, precedes(left, first) { first = left }
            if right < entries.count, precedes(right, first) { first = right }
            guard first != parent else { return }
            entries.swapAt(parent, first)
            parent = first
        }
    }

    /// Removes every entry.
    @inlinable public mutating func removeAll() {
        entries.removeAll()
    }

    @inlinable func precedes(_ lhs: Int, _ rhs: Int) -> Bool {
        let left = entries[lhs], right = entries[rhs]
        return left.deadline != right.deadline ? left.deadline < right.deadline : left.order < right.order
    }
}
