import BleDBus
import Dispatch

/// How the public facade reaches `@BleLoop` state from any thread.
enum LoopBridge {
    /// Runs `body` on the loop and returns its result: directly when already on the loop
    /// thread, otherwise by waiting for the loop (which never waits on other threads, so this
    /// cannot deadlock).
    static func sync<T>(_ body: @BleLoop () -> T) -> T {
        if MainLoop.shared.isCurrent {
            return withoutActuallyEscaping(body) { escapable in
                let box = Unchecked(escapable)
                return BleLoop.assumeIsolated { Unchecked(box.value()) }.value
            }
        }
        return withoutActuallyEscaping(body) { escapable in
            let box = Unchecked(escapable)
            let result = Locked<T?>(nil)
            let done = DispatchSemaphore(value: 0)
            BleLoop.perform {
                result.value = box.value()
                done.signal()
            }
            done.wait()
            return result.value!
        }
    }

    /// Runs `body` on the loop later, from any thread.
    static func async(_ body: @escaping @BleLoop () -> Void) {
        let box = Unchecked(body)
        BleLoop.perform { box.value() }
    }
}

/// Where delegate callbacks run: on the loop (default) or on the queue given at init.
struct CallbackQueue: Sendable {
    let queue: DispatchQueue?

    /// Runs `work` on the loop now, or on the queue in order.
    @BleLoop
    func deliver(_ work: @escaping () -> Void) {
        guard let queue else { return work() }
        let box = Unchecked(work)
        queue.async { box.value() }
    }
}
