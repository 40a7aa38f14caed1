import Foundation

// @unchecked: its state is behind `lock`.
/// A queue of events (the central's `CentralEvent`s, the server's `PeripheralEvent`s) with one
/// waiter at a time and a deadline on each wait, so a command never waits silently forever.
final class EventInbox<Event: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var buffered: [Event] = []
    private var waiter: (id: Int, continuation: CheckedContinuation<Event?, Never>)?
    private var nextID = 0

    /// Delivers an event to the waiter, or keeps it for the next wait.
    func post(_ event: Event) {
        lock.lock()
        if let current = waiter {
            waiter = nil
            lock.unlock()
            current.continuation.resume(returning: event)
        } else {
            buffered.append(event)
            lock.unlock()
        }
    }

    /// The next event, or nil when none came before `deadline`.
    func next(before deadline: Date) async -> Event? {
        await withCheckedContinuation { continuation in
            lock.lock()
            if !buffered.isEmpty {
                let event = buffered.removeFirst()
                lock.unlock()
                continuation.resume(returning: event)
                return
            }
            let remaining = deadline.timeIntervalSinceNow
            guard remaining > 0 else {
                lock.unlock()
                continuation.resume(returning: nil)
                return
            }
            nextID += 1
            let id = nextID
            waiter = (id, continuation)
            lock.unlock()
            DispatchQueue.global().asyncAfter(deadline: .now() + min(remaining, 86_400)) { [self] in
                lock.lock()
                guard let current = waiter, current.id == id else {
                    lock.unlock()
                    return
                }
                waiter = nil
                lock.unlock()
                current.continuation.resume(returning: nil)
            }
        }
    }
}
