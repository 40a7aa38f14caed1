import BleCore
import Foundation

/// A pairing agent whose questions arrive as an `AsyncSequence` of `PairingRequest`s.
///
/// Answer each request once (`accept()`, `provide(passkey:)`, `reject()`…), now or later; one
/// left unanswered is cancelled at the agent's `requestTimeout`. Requests arriving while
/// nobody iterates `requests()` are rejected.
public final class AsyncPairingAgent: Sendable {
    /// The BleCore agent underneath.
    public let agent: PairingAgent
    let hub: PairingHub

    /// An agent on `manager`'s bus connection: it answers for that central's pairings (and,
    /// as the default agent, for incoming ones).
    public init(manager: AsyncBleManager, capability: IOCapability = .keyboardDisplay, makeDefault: Bool = false,
                requestTimeout: Duration = .seconds(25)) {
        let hub = PairingHub()
        self.hub = hub
        agent = PairingAgent(central: manager.central, capability: capability, delegate: hub, makeDefault: makeDefault,
                             requestTimeout: requestTimeout)
    }

    /// An agent on a bus connection of its own (a process that only serves).
    public init(options: CentralManagerOptions = CentralManagerOptions(), capability: IOCapability = .keyboardDisplay,
                makeDefault: Bool = true, requestTimeout: Duration = .seconds(25)) {
        let hub = PairingHub()
        self.hub = hub
        agent = PairingAgent(options: options, capability: capability, delegate: hub, makeDefault: makeDefault,
                             requestTimeout: requestTimeout)
    }

    /// Registers the agent with bluetoothd (again after each bluetoothd restart).
    public func start() { agent.start() }

    /// Unregisters it; the sequences end.
    public func stop() {
        agent.stop()
        let hub = self.hub
        LoopBridge.later { hub.close() }
    }

    /// Every question bluetoothd asks, for as many subscribers as you like (the first answer counts).
    public func requests() -> AsyncStream<PairingRequest> {
        let (stream, continuation) = AsyncStream.makeStream(of: PairingRequest.self)
        let hub = self.hub
        LoopBridge.later { hub.subscribe(continuation, cancellations: false) }
        return stream
    }

    /// Requests that ended before they were answered (bluetoothd's `Cancel`, or the deadline).
    public func cancellations() -> AsyncStream<PairingRequest> {
        let (stream, continuation) = AsyncStream.makeStream(of: PairingRequest.self)
        let hub = self.hub
        LoopBridge.later { hub.subscribe(continuation, cancellations: true) }
        return stream
    }
}
