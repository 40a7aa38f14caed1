import Synchronization

/// A flag that can be set once from any thread.
package final class AtomicFlag: Sendable {
    private let value = Atomic<Bool>(false)

    package init() {}

    /// Sets the flag; true only for the first caller.
    package func setOnce() -> Bool {
        value.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }

    package var isSet: Bool { value.load(ordering: .acquiring) }
}
