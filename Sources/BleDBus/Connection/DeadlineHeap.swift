/// Call deadlines, earliest first (a binary min-heap; ties in call order).
struct DeadlineHeap {
    private var entries: [(deadline: ContinuousClock.Instant, id: UInt64)] = []

    var first: (deadline: ContinuousClock.Instant, id: UInt64)? { entries.first }

    mutating func insert(_ deadline: ContinuousClock.Instant, id: UInt64) {
        entries.append((deadline, id))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.precedes(entries[child], entries[parent]) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    mutating func removeFirst() {
        guard !entries.isEmpty else { return }
        entries.swapAt(0, entries.count - 1)
        entries.removeLast()
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < entries.count, Self.precedes(entries[left], entries[smallest]) { smallest = left }
            if right < entries.count, Self.precedes(entries[right], entries[smallest]) { smallest = right }
            guard smallest != parent else { return }
            entries.swapAt(parent, smallest)
            parent = smallest
        }
    }

    private static func precedes(_ lhs: (deadline: ContinuousClock.Instant, id: UInt64),
                                 _ rhs: (deadline: ContinuousClock.Instant, id: UInt64)) -> Bool {
        lhs.deadline != rhs.deadline ? lhs.deadline < rhs.deadline : lhs.id < rhs.id
    }
}
