import BleCore
import Foundation
import Synchronization

/// One awaited call: it ends exactly once, with its result, its deadline, or the caller's
/// cancellation, whichever comes first; the others find it ended and do nothing.
///
/// FXBlueToothAsync kept one continuation per operation kind in unlocked properties, dropped it
/// on cancel (the caller hung) and overwrote it on a second call (defects 24, 26). Here every
/// call has its own state machine behind a lock, so a cancel on any thread, a timer on the loop
/// and a BlueZ reply race safely; what the call registered on the loop (its entry in a table of
/// waiters, the BlueZ operation to cancel) is undone when it ends.
final class PendingCall<Value: Sendable>: Sendable {
    private enum Phase {
        /// Not awaited yet (the continuation is being made).
        case idle
        case waiting(CheckedContinuation<Value, any Error>)
        /// Ended before the continuation existed: it is resumed when installed.
        case endedEarly(Result<Value, any Error>)
        case ended
    }

    private struct State {
        var phase: Phase = .idle
        var timer: LoopTimer?
        /// Runs on the loop when the call ends, however it ends (removes table entries).
        var settled: [@BleLoop @Sendable () -> Void] = []
        /// Runs on the loop when the call ends by cancellation or deadline (cancels BlueZ's side).
        var abandoned: [@BleLoop @Sendable () -> Void] = []
    }

    /// What the call was, for its timeout error.
    let operation: AsyncBleClientError.Operation
    private let state = Mutex(State())

    init(_ operation: AsyncBleClientError.Operation) { self.operation = operation }

    /// True once it ended.
    var isFinished: Bool {
        state.withLock { state in
            switch state.phase {
            case .idle, .waiting: return false
            case .endedEarly, .ended: return true
            }
        }
    }

    /// Hands over the continuation; resumes it at once when the call already ended.
    func install(_ continuation: CheckedContinuation<Value, any Error>) {
        let early = state.withLock { state -> Result<Value, any Error>? in
            switch state.phase {
            case .idle:
                state.phase = .waiting(continuation)
                return nil
            case .endedEarly(let result):
                state.phase = .ended
                return result
            case .waiting, .ended:
                // install is called once per call, right after creation.
                return nil
            }
        }
        if let early { continuation.resume(with: early) }
    }

    /// Ends the call; false when it had already ended (the result is dropped).
    @discardableResult
    func finish(_ result: Result<Value, any Error>) -> Bool {
        let outcome = state.withLock { state -> (continuation: CheckedContinuation<Value, any Error>?, hooks: State)? in
            let continuation: CheckedContinuation<Value, any Error>?
            switch state.phase {
            case .idle:
                state.phase = .endedEarly(result)
                continuation = nil
            case .waiting(let waiting):
                state.phase = .ended
                continuation = waiting
            case .endedEarly, .ended:
                return nil
            }
            let hooks = state
            state.timer = nil
            state.settled = []
            state.abandoned = []
            return (continuation, hooks)
        }
        guard let outcome else { return false }
        outcome.continuation?.resume(with: result)
        outcome.hooks.timer?.cancel()
        let abandoned: Bool
        switch result {
        case .success: abandoned = false
        case .failure(let error): abandoned = error is CancellationError || (error as? AsyncBleClientError)?.isTimeout == true
        }
        let work = outcome.hooks.settled + (abandoned ? outcome.hooks.abandoned : [])
        if !work.isEmpty { LoopWork.run { for item in work { item() } } }
        return true
    }

    /// Ends the call with `value`.
    @discardableResult
    func succeed(_ value: Value) -> Bool { finish(.success(value)) }

    /// Ends the call with `error`.
    @discardableResult
    func fail(_ error: any Error) -> Bool { finish(.failure(error)) }

    /// Registers loop work for the end of the call; false (nothing registered) when it already
    /// ended, so that the caller does not start what nobody waits for.
    @discardableResult
    func onEnd(settled: (@BleLoop @Sendable () -> Void)? = nil, abandoned: (@BleLoop @Sendable () -> Void)? = nil) -> Bool {
        state.withLock { state in
            switch state.phase {
            case .idle, .waiting:
                if let settled { state.settled.append(settled) }
                if let abandoned { state.abandoned.append(abandoned) }
                return true
            case .endedEarly, .ended:
                return false
            }
        }
    }

    /// Keeps the call's deadline timer (cancelled when the call ends).
    func arm(_ timer: LoopTimer) {
        let keep = state.withLock { state -> Bool in
            switch state.phase {
            case .idle, .waiting:
                state.timer = timer
                return true
            case .endedEarly, .ended:
                return false
            }
        }
        if !keep { timer.cancel() }
    }
}

/// Runs loop work: inline when already on the loop thread, else queued onto it.
enum LoopWork {
    static func run(_ body: @escaping @BleLoop @Sendable () -> Void) {
        if MainLoop.shared.isCurrent {
            BleLoop.assumeIsolated { body() }
        } else {
            LoopBridge.later(body)
        }
    }
}

/// Awaits one call: `start` runs on the loop (unless the call already ended) and arranges for
/// `call` to be finished; `timeout` (seconds; nil or 0: none) ends it with
/// `AsyncBleClientError.timeout`, task cancellation with `CancellationError`, at once.
func awaitCall<Value: Sendable>(_ operation: AsyncBleClientError.Operation, timeout: TimeInterval?,
                                start: @escaping @BleLoop @Sendable (PendingCall<Value>) -> Void) async throws -> Value {
    let call = PendingCall<Value>(operation)
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
            call.install(continuation)
            LoopBridge.later {
                guard !call.isFinished else { return }
                if let timeout, timeout > 0 {
                    call.arm(LoopTimer.scheduled(after: .seconds(timeout)) {
                        call.fail(AsyncBleClientError.timeout(operation))
                    })
                }
                start(call)
            }
        }
    } onCancel: {
        call.fail(CancellationError())
    }
}
