import Foundation

// @unchecked: a Sendable class cannot inherit from `Peer`; its state is `let`s and a `Locked`.
/// A central connected to this machine's adapter, as CoreBluetooth's `CBCentral`: the
/// `Device1` object bluetoothd creates on the serving adapter for the incoming link. Its
/// `identifier` is derived from both addresses, like a `Peripheral`'s.
public final class Central: Peer, @unchecked Sendable, CustomStringConvertible {
    /// The central's Bluetooth address, or `unidentified` (see `isIdentified`).
    public let address: String
    /// The `Device1` object's path on the serving adapter.
    public let devicePath: String
    private let state = Locked<(mtu: Int, connected: Bool)>((23, true))

    init(identifier: UUID, address: String, devicePath: String) {
        self.address = address
        self.devicePath = devicePath
        super.init(identifier: identifier)
    }

    /// The placeholder for a subscriber BlueZ does not name: bluetoothd 5.66 calls `StartNotify`
    /// without saying which central subscribed.
    static let unidentified = Central(identifier: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)),
                                      address: "unidentified", devicePath: "")

    /// False for the placeholder standing for a subscriber BlueZ did not name.
    public var isIdentified: Bool { self !== Central.unidentified }
    /// The ATT MTU of its link as bluetoothd last reported it (in a request's options); 23
    /// until BlueZ says.
    public var mtu: Int { state.value.mtu }
    /// The longest value one notification carries to it: MTU − 3.
    public var maximumUpdateValueLength: Int { max(20, state.value.mtu - 3) }
    /// True while its link is up.
    public var isConnected: Bool { state.value.connected }

    func setMTU(_ mtu: Int) { state.value.mtu = mtu }
    func setConnected(_ connected: Bool) { state.value.connected = connected }

    /// `Central(AA:BB:…)`.
    public var description: String { "Central(\(address))" }
}
