import BleCore

/// The loop side of an `AsyncPairingAgent`: the agent's delegate, fanning requests out to every
/// `requests()` subscriber. With no subscriber a request is rejected (nothing pairs without
/// the app's decision), as `PairingAgentDelegate`'s default does.
@BleLoop
final class PairingHub {
    private var nextID: UInt64 = 0
    private var subscribers: [UInt64: AsyncStream<PairingRequest>.Continuation] = [:]
    private var cancelSubscribers: [UInt64: AsyncStream<PairingRequest>.Continuation] = [:]

    nonisolated init() {}

    private func makeID() -> UInt64 {
        nextID += 1
        return nextID
    }

    func subscribe(_ continuation: AsyncStream<PairingRequest>.Continuation, cancellations: Bool) {
        let id = makeID()
        if cancellations { cancelSubscribers[id] = continuation } else { subscribers[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            LoopWork.run {
                self?.subscribers[id] = nil
                self?.cancelSubscribers[id] = nil
            }
        }
    }

    func close() {
        for continuation in subscribers.values { continuation.finish() }
        for continuation in cancelSubscribers.values { continuation.finish() }
        subscribers.removeAll()
        cancelSubscribers.removeAll()
    }
}

extension PairingHub: @preconcurrency PairingAgentDelegate {
    func pairingAgent(_ agent: PairingAgent, didReceive request: PairingRequest) {
        guard !subscribers.isEmpty else { return request.reject() }
        for id in subscribers.keys.sorted() { subscribers[id]?.yield(request) }
    }

    func pairingAgent(_ agent: PairingAgent, didCancel request: PairingRequest) {
        for id in cancelSubscribers.keys.sorted() { cancelSubscribers[id]?.yield(request) }
    }
}
