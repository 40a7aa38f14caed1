// CoreBluetooth API whose feature BlueZ does not offer a GATT client over D-Bus. Declared so that
// ported code stops at compile time with a message saying what to do, instead of an unknown
// name (or, worse, a delegate method that compiles and is never called).

/// `CBL2CAPChannel`: no L2CAP connection-oriented channels in BleKit yet.
@available(*, unavailable, message: "BleKit has no L2CAP channels; exchange data through a characteristic (write + notify)")
public typealias CBL2CAPChannel = Never

/// `CBL2CAPPSM`
@available(*, unavailable, message: "BleKit has no L2CAP channels; exchange data through a characteristic (write + notify)")
public typealias CBL2CAPPSM = UInt16

/// `CBConnectionEvent`: iOS's connection-event matching.
@available(*, unavailable, message: "Linux has no connection-event registration: watch centralManager(_:didConnect:) and didDisconnectPeripheral")
public enum CBConnectionEvent {}

extension Peripheral {
    /// `openL2CAPChannel(_:)`
    @available(*, unavailable, message: "BleKit has no L2CAP channels; exchange data through a characteristic (write + notify)")
    public func openL2CAPChannel(_ psm: UInt16) {}

    /// `ancsAuthorized`
    @available(*, unavailable, message: "ANCS is an iOS service; Linux has no equivalent")
    public var ancsAuthorized: Bool { false }
}

extension CentralManager {
    /// `registerForConnectionEvents(options:)`
    @available(*, unavailable, message: "Linux has no connection-event registration: watch centralManager(_:didConnect:) and didDisconnectPeripheral")
    public func registerForConnectionEvents(options: [String: Any]? = nil) {}

    /// `supports(_:)` (extended scan, and so on): BlueZ picks the PHY and scan mode itself.
    @available(*, unavailable, message: "BlueZ chooses extended advertising and the PHY itself; nothing to check")
    public static func supports(_ features: Int) -> Bool { false }
}
