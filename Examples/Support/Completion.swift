import Foundation

// @unchecked: its state is behind `lock`.
/// A one-shot signal with a deadline: an example's callbacks say "done", its `main` waits.
public final class Completion: @unchecked Sendable {
    private let lock = NSLock()
    private var done = false
    private var continuation: CheckedContinuation<Bool, Never>?

    /// A signal not yet given.
    public init() {}

    /// Signals; later calls do nothing.
    public func signal() {
        lock.lock()
        guard !done else { lock.unlock(); return }
        done = true
        let waiting = continuation
        continuation = nil
        lock.unlock()
        waiting?.resume(returning: true)
    }

    /// Waits for `signal`; false when `seconds` passed first.
    public func wait(seconds: Double) async -> Bool {
        await withCheckedContinuation { continuation in
            lock.lock()
            if done { lock.unlock(); continuation.resume(returning: true); return }
            self.continuation = continuation
            lock.unlock()
            DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [self] in
                lock.lock()
                let waiting = self.continuation
                self.continuation = nil
                lock.unlock()
                waiting?.resume(returning: false)
            }
        }
    }
}
