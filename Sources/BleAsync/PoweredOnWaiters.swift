import BleCore
import Foundation

/// The calls waiting for a manager to be powered on, and the one verdict both roles give them:
/// resolved at `poweredOn`, failed at a state that is not transitional (FXBlueToothAsync
/// defect 30: `getState` waited forever on `poweredOff`), still waiting through `unknown` and
/// `resetting`.
@BleLoop
final class PoweredOnWaiters {
    private var waiters: [UInt64: PendingCall<ManagerState>] = [:]
    private var nextID: UInt64 = 0

    nonisolated init() {}

    /// How many calls wait.
    var count: Int { waiters.count }

    /// What a call waiting for `poweredOn` ends with in `state`; nil while it should wait.
    static func verdict(_ state: ManagerState) -> Result<ManagerState, any Error>? {
        switch state {
        case .poweredOn: return .success(state)
        case .unknown, .resetting: return nil
        case .poweredOff, .unsupported, .unauthorized: return .failure(AsyncBleClientError.bluetoothUnavailable(state))
        }
    }

    /// Ends `call` at once when `state` decides it, else keeps it until a state does.
    func wait(_ call: PendingCall<ManagerState>, in state: ManagerState) {
        if let verdict = Self.verdict(state) { return call.finish(verdict).ignored }
        nextID += 1
        let id = nextID
        guard call.onEnd(settled: { [weak self] in self?.waiters[id] = nil }) else { return }
        waiters[id] = call
    }

    /// The manager's state changed: the calls it decides end.
    func stateChanged(_ state: ManagerState) {
        guard let verdict = Self.verdict(state) else { return }
        for call in waiters.values.map({ $0 }) { call.finish(verdict) }
    }

    /// The manager closed: every waiting call fails with `failure`.
    func fail(_ failure: any Error) {
        for call in waiters.values.map({ $0 }) { call.fail(failure) }
    }
}
