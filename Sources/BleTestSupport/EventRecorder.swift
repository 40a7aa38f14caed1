import BleDBus
import Foundation

/// Records events on BleKit's loop and lets a test wait, with a deadline, until they satisfy a
/// condition — the replacement for sleeps in tests.
///
/// ```swift
/// let events = EventRecorder<String>()
/// thing.onEvent = { events.append($0) }
/// try await events.wait(until: { $0.count == 2 })
/// ```
@BleLoop
public final class EventRecorder<Event> {
    /// Everything recorded so far.
    public private(set) var events: [Event] = []
    private var waiters: [(id: Int, condition: ([Event]) -> Bool, continuation: CheckedContinuation<Bool, Never>)] = []
    private var nextID = 0

    /// Why a wait failed.
    public struct Timeout: Error, CustomStringConvertible {
        /// What was awaited.
        public let what: String
        /// The last events seen (at most 20).
        public let seen: String
        /// A readable explanation.
        public var description: String { "Timed out waiting for \(what); recorded: \(seen)" }
    }

    /// An empty recorder.
    public init() {}

    /// Records `event` and wakes the waiters whose condition now holds.
    public func append(_ event: Event) {
        events.append(event)
        let ready = waiters.filter { $0.condition(events) }
        waiters.removeAll { waiter in ready.contains { $0.id == waiter.id } }
        for waiter in ready { waiter.continuation.resume(returning: true) }
    }

    /// Records from any thread (hops to the loop).
    public nonisolated func appendFromAnyThread(_ event: Event) {
        let box = LoopBound(event)
        LoopBridge.later { [weak self] in self?.append(box.value) }
    }

    /// Waits until `condition(events)` holds, at most `timeout` at the tests' clock
    /// (BleSim's `TestTime.scaled(_:)`).
    public func wait(_ what: String = "events", timeout: Duration = .seconds(30),
                     until condition: @escaping ([Event]) -> Bool) async throws {
        if condition(events) { return }
        let id = nextID
        nextID += 1
        let timer = LoopTimer.scheduled(after: TestTime.scaled(timeout)) { [weak self] in
            guard let self, let index = self.waiters.firstIndex(where: { $0.id == id }) else { return }
            self.waiters.remove(at: index).continuation.resume(returning: false)
        }
        let satisfied = await withCheckedContinuation { continuation in
            // Checked again where the waiter is registered: an event recorded in between
            // would otherwise wake nobody.
            if condition(events) { return continuation.resume(returning: true) }
            waiters.append((id, condition, continuation))
        }
        timer.cancel()
        guard satisfied else {
            throw Timeout(what: what, seen: events.suffix(20).map { "\($0)" }.joined(separator: "\n  "))
        }
    }

    /// The first event since index `since` that satisfies `predicate`: one already recorded,
    /// or the first to arrive within `timeout`.
    @discardableResult
    public func first(since: Int = 0, timeout: Duration = .seconds(30), _ what: String = "an event",
                      where predicate: @escaping (Event) -> Bool) async throws -> Event {
        try await wait(what, timeout: timeout) { $0.dropFirst(since).contains(where: predicate) }
        // The condition held when the waiter woke, on this loop, and events are only appended.
        guard let found = events.dropFirst(since).first(where: predicate) else { throw Timeout(what: what, seen: "") }
        return found
    }

    /// Waits until at least `count` events were recorded.
    public func wait(count: Int, timeout: Duration = .seconds(30)) async throws {
        try await wait("\(count) events", timeout: timeout) { $0.count >= count }
    }
}
