import BleCore
import Foundation

/// The peripheral role with async/await: requests as an `AsyncSequence`, `updateValue` that
/// waits for room in the outgoing queue, service registration that returns when bluetoothd
/// has it. Every call takes an optional timeout and ends with `CancellationError` when its
/// task is cancelled.
public final class AsyncPeripheralManager: Sendable {
    /// The BleCore manager underneath (its delegates stay yours).
    public let manager: PeripheralManager
    let hub: PeripheralRoleHub

    /// A manager with BleKit's options (bus, adapter, request deadline).
    public init(options: PeripheralManagerOptions = PeripheralManagerOptions()) {
        manager = PeripheralManager(delegate: nil, queue: nil, options: options)
        hub = PeripheralRoleHub(manager: manager)
        manager.multiDelegate.addDelegate(hub)
    }

    /// The serving adapter's state now.
    public var state: CBManagerState { manager.state }

    /// Waits until the adapter is powered on (transitional states are waited out).
    public func getState(timeout: TimeInterval? = nil) async throws -> CBManagerState {
        let hub = self.hub
        return try await awaitCall(.state, timeout: timeout) { call in hub.waitForPoweredOn(call) }
    }

    /// Adds `service` and returns once bluetoothd has registered the application holding it.
    public func add(_ service: MutableService, timeout: TimeInterval? = nil) async throws {
        let hub = self.hub
        try await awaitCall(.peripheralRole, timeout: timeout) { (call: PendingCall<Void>) in hub.add(service, call) }
    }

    /// Reads and writes of dynamic characteristics, for as many subscribers as you like (each
    /// sees every request; the first answer counts). Answer with `respond(to:withResult:)`;
    /// an unanswered request ends at the manager's `requestTimeout`.
    public func requests() -> AsyncStream<AsyncATTRequests> {
        let (stream, continuation) = AsyncStream.makeStream(of: AsyncATTRequests.self)
        let hub = self.hub
        LoopBridge.later { hub.subscribeRequests(continuation) }
        return stream
    }

    /// Centrals subscribing and unsubscribing, for as many subscribers as you like.
    public func subscriptions() -> AsyncStream<AsyncSubscriptionEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: AsyncSubscriptionEvent.self)
        let hub = self.hub
        LoopBridge.later { hub.subscribeSubscriptions(continuation) }
        return stream
    }

    /// Answers a request once (later answers are ignored; false then).
    @discardableResult
    public func respond(to request: ATTRequest, withResult result: ATTResult) -> Bool {
        manager.respond(to: request, withResult: result)
    }

    /// Sends `value` to the subscribed centrals, waiting while the outgoing queue is full
    /// (CoreBluetooth's `updateValue` returning false, then `isReady`); sends made while others
    /// wait queue behind them, in call order.
    public func updateValue(_ value: Data, for characteristic: MutableCharacteristic, onSubscribedCentrals centrals: [Central]? = nil,
                            timeout: TimeInterval? = nil) async throws {
        let hub = self.hub
        try await awaitCall(.peripheralRole, timeout: timeout) { (call: PendingCall<Void>) in
            hub.update(value, for: characteristic, centrals: centrals, call)
        }
    }

    /// Registers an advertisement (keep the handle; releasing it unregisters it).
    public func startAdvertising(_ advertisement: Advertisement) -> AdvertisementRegistration {
        manager.startAdvertising(advertisement)
    }

    /// Stops every advertisement.
    public func stopAdvertising() { manager.stopAdvertising() }

    /// Calls still waiting on the loop (zero when nothing waits).
    public var pendingCallCount: Int {
        get async {
            let hub = self.hub
            return await BleLoopAsync.run { hub.pendingCount }
        }
    }

    /// Stops serving; request and subscription sequences end.
    public func close() {
        let hub = self.hub
        LoopBridge.later { hub.close() }
        manager.close()
    }
}
