/// Listeners held weakly, in insertion order, without duplicates; dead ones are purged on
/// every change and every snapshot. Thread-safe; iteration works on a snapshot, so a listener
/// may add or remove listeners (itself included) during a callback.
final class WeakListeners: @unchecked Sendable {
    private struct Entry {
        weak var object: AnyObject?
    }

    private let entries = Locked<[Entry]>([])

    func add(_ object: AnyObject) {
        entries.withLock { list in
            list.removeAll { $0.object == nil }
            guard !list.contains(where: { $0.object === object }) else { return }
            list.append(Entry(object: object))
        }
    }

    func remove(_ object: AnyObject) {
        entries.withLock { list in list.removeAll { $0.object == nil || $0.object === object } }
    }

    /// The live listeners now.
    func snapshot() -> [AnyObject] {
        entries.withLock { list in
            list.removeAll { $0.object == nil }
            return list.compactMap(\.object)
        }
    }

    var count: Int { snapshot().count }

    /// True when no listener was ever added or all were removed: lets the hot path skip the
    /// snapshot (which allocates) for every event.
    var isEmpty: Bool { entries.withLock { $0.isEmpty } }
}
