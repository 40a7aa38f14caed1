import BleDBus

/// What the local side can show and type during pairing; with the peer's, it decides the
/// pairing method (Just Works, numeric comparison, passkey entry). Registered with
/// `AgentManager1.RegisterAgent`.
public enum IOCapability: RawRepresentable, Sendable, CaseIterable {
    /// Can show a passkey, cannot confirm or type.
    case displayOnly
    /// Can show a passkey and confirm it (numeric comparison).
    case displayYesNo
    /// Can type a passkey, cannot show one.
    case keyboardOnly
    /// Neither shows nor types: Just Works (no protection against a man in the middle).
    case noInputNoOutput
    /// Can show and type; bluetoothd's default for an empty capability.
    case keyboardDisplay

    // The raw values are RegisterAgent's capability strings, spelled once in the vocabulary
    // (issue 27); a `String` raw type would need them as literals here.
    /// The capability as `RegisterAgent` takes it, e.g. `KeyboardDisplay`.
    public var rawValue: String {
        typealias Capability = BlueZ.AgentManager1.Capability
        switch self {
        case .displayOnly: return Capability.displayOnly
        case .displayYesNo: return Capability.displayYesNo
        case .keyboardOnly: return Capability.keyboardOnly
        case .noInputNoOutput: return Capability.noInputNoOutput
        case .keyboardDisplay: return Capability.keyboardDisplay
        }
    }

    /// The capability `RegisterAgent` spells `rawValue` (exact case), or nil for another text.
    public init?(rawValue: String) {
        guard let capability = Self.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = capability
    }
}
