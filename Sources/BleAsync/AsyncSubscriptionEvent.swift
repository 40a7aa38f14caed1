import BleCore

/// A central subscribing to or unsubscribing from a local characteristic.
public enum AsyncSubscriptionEvent: Sendable {
    /// `central` turned notifications or indications of the characteristic on.
    case subscribed(Central, MutableCharacteristic)
    /// `central` turned them off (for bluetoothd: the last subscriber did).
    case unsubscribed(Central, MutableCharacteristic)
}
