import BleCore
import Foundation

/// The loop side of an `AsyncPeripheralManager`: it hears the manager's events (as one
/// listener of its `multiDelegate`), fans requests out to every `requests()` subscriber, and
/// keeps `updateValue` calls waiting for room, in order, each with its own state machine.
@BleLoop
final class PeripheralRoleHub {
    private struct PendingUpdate {
        let value: Data
        let characteristic: MutableCharacteristic
        let centrals: [Central]?
        let call: PendingCall<Void>
    }

    let manager: PeripheralManager
    private var nextID: UInt64 = 0
    private var requestSubscribers: [UInt64: AsyncStream<AsyncATTRequests>.Continuation] = [:]
    private var subscriptionSubscribers: [UInt64: AsyncStream<AsyncSubscriptionEvent>.Continuation] = [:]
    private let stateWaiters = PoweredOnWaiters()
    private var addWaiters: [ObjectIdentifier: [UInt64: PendingCall<Void>]] = [:]
    /// `updateValue` calls refused for a full queue, oldest first.
    private var updates: [(id: UInt64, update: PendingUpdate)] = []
    /// How many `updateValue` calls had to wait for room (for tests).
    private(set) var waitedForRoom = 0

    nonisolated init(manager: PeripheralManager) { self.manager = manager }

    private func makeID() -> UInt64 {
        nextID += 1
        return nextID
    }

    var pendingCount: Int { stateWaiters.count + addWaiters.values.reduce(0) { $0 + $1.count } + updates.count }

    // MARK: State

    /// Resolves at poweredOn, fails at a state that is not transitional (defect 30).
    func waitForPoweredOn(_ call: PendingCall<ManagerState>) {
        stateWaiters.wait(call, in: manager.state)
    }

    // MARK: Services

    func add(_ service: MutableService, _ call: PendingCall<Void>) {
        let key = ObjectIdentifier(service)
        let id = makeID()
        guard call.onEnd(settled: { [weak self] in
            self?.addWaiters[key]?[id] = nil
            if self?.addWaiters[key]?.isEmpty == true { self?.addWaiters[key] = nil }
        }) else { return }
        addWaiters[key, default: [:]][id] = call
        manager.add(service)
    }

    // MARK: Requests and subscriptions

    func subscribeRequests(_ continuation: AsyncStream<AsyncATTRequests>.Continuation) {
        let id = makeID()
        requestSubscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in LoopWork.run { self?.requestSubscribers[id] = nil } }
    }

    func subscribeSubscriptions(_ continuation: AsyncStream<AsyncSubscriptionEvent>.Continuation) {
        let id = makeID()
        subscriptionSubscribers[id] = continuation
        continuation.onTermination = { [weak self] _ in LoopWork.run { self?.subscriptionSubscribers[id] = nil } }
    }

    // MARK: Notifications with flow control

    /// Sends now, or waits (in order with earlier waiting sends) until the queue has room.
    func update(_ value: Data, for characteristic: MutableCharacteristic, centrals: [Central]?, _ call: PendingCall<Void>) {
        if updates.isEmpty, manager.updateValue(value, for: characteristic, onSubscribedCentrals: centrals) {
            return call.succeed(()).ignored
        }
        let id = makeID()
        guard call.onEnd(settled: { [weak self] in self?.updates.removeAll { $0.id == id } }) else { return }
        waitedForRoom += 1
        updates.append((id, PendingUpdate(value: value, characteristic: characteristic, centrals: centrals, call: call)))
    }

    private func sendWaiting() {
        while let first = updates.first {
            guard !first.update.call.isFinished else {
                updates.removeFirst()
                continue
            }
            guard manager.updateValue(first.update.value, for: first.update.characteristic, onSubscribedCentrals: first.update.centrals) else { return }
            updates.removeFirst()
            first.update.call.succeed(())
        }
    }

    func close() {
        for continuation in requestSubscribers.values { continuation.finish() }
        for continuation in subscriptionSubscribers.values { continuation.finish() }
        requestSubscribers.removeAll()
        subscriptionSubscribers.removeAll()
        let failure = AsyncBleClientError.bluetoothUnavailable(.unsupported)
        stateWaiters.fail(failure)
        for (_, pending) in updates { pending.call.fail(failure) }
    }
}

extension PeripheralRoleHub: @preconcurrency PeripheralManagerDelegate {
    func peripheralManagerDidUpdateState(_ peripheral: PeripheralManager) {
        stateWaiters.stateChanged(peripheral.state)
        if peripheral.state != .poweredOn {
            // The queue is gone with the adapter or bluetoothd: waiting sends end, typed.
            let failure = AsyncBleClientError.bluetoothUnavailable(peripheral.state)
            for (_, pending) in updates { pending.call.fail(failure) }
        }
    }

    func peripheralManager(_ peripheral: PeripheralManager, didAdd service: Service, error: Error?) {
        for call in addWaiters[ObjectIdentifier(service)]?.values.map({ $0 }) ?? [] {
            if let error { call.fail(AsyncBleClientError.operationFailed(.peripheralRole, BleError.wrapping(error))) } else { call.succeed(()) }
        }
    }

    func peripheralManagerIsReady(toUpdateSubscribers peripheral: PeripheralManager) { sendWaiting() }

    func peripheralManager(_ peripheral: PeripheralManager, didReceiveRead request: ATTRequest) {
        for id in requestSubscribers.keys.sorted() { requestSubscribers[id]?.yield(.read(request)) }
    }

    func peripheralManager(_ peripheral: PeripheralManager, didReceiveWrite requests: [ATTRequest]) {
        for id in requestSubscribers.keys.sorted() { requestSubscribers[id]?.yield(.write(requests)) }
    }

    func peripheralManager(_ peripheral: PeripheralManager, central: Central, didSubscribeTo characteristic: Characteristic) {
        // The manager only ever reports the characteristics it serves, which are mutable.
        guard let served = characteristic as? MutableCharacteristic else { return }
        for continuation in subscriptionSubscribers.values { continuation.yield(.subscribed(central, served)) }
    }

    func peripheralManager(_ peripheral: PeripheralManager, central: Central, didUnsubscribeFrom characteristic: Characteristic) {
        // The manager only ever reports the characteristics it serves, which are mutable.
        guard let served = characteristic as? MutableCharacteristic else { return }
        for continuation in subscriptionSubscribers.values { continuation.yield(.unsubscribed(central, served)) }
    }
}
