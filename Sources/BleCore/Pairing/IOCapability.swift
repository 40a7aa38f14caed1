import BleDBus

/// What the local side can show and type during pairing; with the peer's, it decides the
/// pairing method (Just Works, numeric comparison, passkey entry). Registered with
/// `AgentManager1.RegisterAgent`.
public enum IOCapability: String, Sendable, CaseIterable {
    /// Can show a passkey, cannot confirm or type.
    case displayOnly = "DisplayOnly"
    /// Can show a passkey and confirm it (numeric comparison).
    case displayYesNo = "DisplayYesNo"
    /// Can type a passkey, cannot show one.
    case keyboardOnly = "KeyboardOnly"
    /// Neither shows nor types: Just Works (no protection against a man in the middle).
    case noInputNoOutput = "NoInputNoOutput"
    /// Can show and type; bluetoothd's default for an empty capability.
    case keyboardDisplay = "KeyboardDisplay"
}
