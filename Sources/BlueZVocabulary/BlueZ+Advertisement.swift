import BleDBus
import Foundation

extension BlueZ.LEAdvertisement1 {
    /// `as`: service UUIDs the advertiser solicits.
    public static let solicitUUIDs = PropertyKey<[String]>("SolicitUUIDs")
    /// `a{yv}`: raw AD structures by type (5.50).
    public static let data = PropertyKey<DBusValue>("Data", type: .dictionary(key: .byte, value: .variant)) { $0 }
    /// `b`: the general discoverable flag (5.50).
    public static let discoverable = PropertyKey<Bool>("Discoverable")
    /// `q`: seconds the discoverable flag stays set.
    public static let discoverableTimeout = PropertyKey<UInt16>("DiscoverableTimeout")
    /// `q`: the GAP appearance.
    public static let appearance = PropertyKey<UInt16>("Appearance")
    /// `q`: seconds in the rotation of several advertisements.
    public static let duration = PropertyKey<UInt16>("Duration")
    /// `q`: seconds until bluetoothd releases the advertisement.
    public static let timeout = PropertyKey<UInt16>("Timeout")
    /// `s`: `1M`, `2M` or `Coded` (5.51).
    public static let secondaryChannel = PropertyKey<String>("SecondaryChannel")
    /// `u`: the shortest advertising interval in milliseconds (5.56).
    public static let minInterval = PropertyKey<UInt32>("MinInterval")
    /// `u`: the longest advertising interval in milliseconds (5.56).
    public static let maxInterval = PropertyKey<UInt32>("MaxInterval")
    /// `n`: the requested TX power in dBm (5.56).
    public static let txPower = PropertyKey<Int16>("TxPower")
}
