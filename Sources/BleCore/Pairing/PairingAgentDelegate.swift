import Foundation

/// Receives a `PairingAgent`'s requests and events, on the agent's callback queue.
///
/// Every method has a default: requests are refused (`reject()`), events ignored. An app that
/// implements only `didReceive` and answers there (or later) has a complete agent.
public protocol PairingAgentDelegate: AnyObject {
    /// bluetoothd asks something; answer `request` exactly once, now or later (before the
    /// agent's `requestTimeout`). The default rejects.
    func pairingAgent(_ agent: PairingAgent, didReceive request: PairingRequest)
    /// The request is over before it was answered: bluetoothd sent `Cancel` (the pairing
    /// failed or was cancelled elsewhere) or the deadline passed. Dismiss its UI.
    func pairingAgent(_ agent: PairingAgent, didCancel request: PairingRequest)
    /// A registration with bluetoothd finished (at start, and again after each bluetoothd
    /// restart); `error` says why it failed.
    func pairingAgent(_ agent: PairingAgent, didRegister error: Error?)
    /// bluetoothd dropped the agent (`Release`, or it left the bus); it registers again by
    /// itself when bluetoothd returns.
    func pairingAgentWasReleased(_ agent: PairingAgent)
}

extension PairingAgentDelegate {
    /// Rejects: without an app's decision, nothing pairs.
    public func pairingAgent(_ agent: PairingAgent, didReceive request: PairingRequest) { request.reject() }
    /// Does nothing.
    public func pairingAgent(_ agent: PairingAgent, didCancel request: PairingRequest) {}
    /// Does nothing.
    public func pairingAgent(_ agent: PairingAgent, didRegister error: Error?) {}
    /// Does nothing.
    public func pairingAgentWasReleased(_ agent: PairingAgent) {}
}
