/// How a virtual peripheral behaves as the responder of a `Pair` (it has no agent of its own).
///
/// Set with `Simulator.setPairing(_:for:)`. Without one, a virtual peripheral is a
/// NoInputNoOutput responder that accepts: Just Works, and the initiator's agent is not asked.
public struct PeerPairing: Sendable, Equatable {
    /// Its SMP IO capability (`BlueZ.AgentManager1.Capability`); with the initiator's it decides
    /// the method (Just Works, numeric comparison or passkey entry), as in LE Secure Connections.
    public var capability: String
    /// False: it refuses every pairing (the initiator's `Pair` fails with `AuthenticationFailed`).
    public var accepts: Bool
    /// The passkey it shows when the method makes it the displaying side.
    public var displayedPasskey: UInt32
    /// Its identity address: after pairing, the device's `Address` changes to it and
    /// `AddressType` to `public`, as when bluetoothd learns the IRK of a peer that advertised
    /// with a resolvable private address.
    public var identityAddress: String?

    /// A responder with `capability`.
    public init(capability: String = "NoInputNoOutput", accepts: Bool = true, displayedPasskey: UInt32 = 123_456,
                identityAddress: String? = nil) {
        self.capability = capability
        self.accepts = accepts
        self.displayedPasskey = displayedPasskey
        self.identityAddress = identityAddress?.uppercased()
    }
}
