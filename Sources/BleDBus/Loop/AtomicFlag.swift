import Synchronization

/// A flag that can be set once from any thread.
final class AtomicFlag: Sendable {
    private let value = Atomic<Bool>(false)

    /// Sets the flag; true only for the first caller.
    func setOnce() -> Bool {
        value.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }

    var isSet: Bool { value.load(ordering: .acquiring) }
}
