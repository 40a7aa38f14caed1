import Foundation
import Synchronization

/// One notification stream as `PeripheralLink` knows it: its continuation, an order number, and
/// whether the stream already ended.
///
/// The stream can end on any thread at any time, also before the loop registered it: the
/// mark lets the registration see that, so a dead stream is never added to a channel (where it
/// kept notifications on, its socket open and `pendingCallCount` above 0 until the link went;
/// issue 25).
final class NotificationSubscriber: Sendable {
    private static let counter = Atomic<UInt64>(0)

    /// Creation order: values go to subscribers in this order.
    let order: UInt64
    let continuation: AsyncThrowingStream<Data, any Error>.Continuation
    private let ended = Atomic<Bool>(false)

    init(_ continuation: AsyncThrowingStream<Data, any Error>.Continuation) {
        self.continuation = continuation
        order = Self.counter.add(1, ordering: .relaxed).newValue
    }

    /// True once the stream ended (finished, cancelled or released).
    var isEnded: Bool { ended.load(ordering: .acquiring) }

    /// Called from the stream's `onTermination`, before the loop is told.
    func markEnded() { ended.store(true, ordering: .releasing) }
}
