import BleDBus
import Foundation

extension BlueZ {
    /// `org.bluez.Device1` at `/org/bluez/hciN/dev_…`: one adapter's view of one remote device.
    public enum Device1 {
        /// The interface name.
        public static let interface = "org.bluez.Device1"

        /// The method names.
        public enum Method {
            /// Connects every auto-connectable profile (for LE: the link and GATT).
            public static let connect = "Connect"
            /// Drops the link.
            public static let disconnect = "Disconnect"
            /// Connects one profile by UUID.
            public static let connectProfile = "ConnectProfile"
            /// Disconnects one profile by UUID.
            public static let disconnectProfile = "DisconnectProfile"
            /// Pairs (and bonds), asking the registered agent.
            public static let pair = "Pair"
            /// Cancels a running `Pair`.
            public static let cancelPairing = "CancelPairing"
        }

        /// `s`: the device address.
        public static let address = PropertyKey<String>("Address")
        /// `s`: `public` or `random`.
        public static let addressType = PropertyKey<String>("AddressType")
        /// `s`: the advertised or GAP name (absent until known).
        public static let name = PropertyKey<String>("Name")
        /// `s`, read-write: the name shown to users (the address with dashes when nameless).
        public static let alias = PropertyKey<String>("Alias")
        /// `u`: the class of device (BR/EDR).
        public static let deviceClass = PropertyKey<UInt32>("Class")
        /// `q`: the GAP appearance.
        public static let appearance = PropertyKey<UInt16>("Appearance")
        /// `s`: the icon name derived from class or appearance.
        public static let icon = PropertyKey<String>("Icon")
        /// `b`: paired.
        public static let paired = PropertyKey<Bool>("Paired")
        /// `b`: keys are stored.
        public static let bonded = PropertyKey<Bool>("Bonded")
        /// `b`, read-write: trusted.
        public static let trusted = PropertyKey<Bool>("Trusted")
        /// `b`, read-write: blocked.
        public static let blocked = PropertyKey<Bool>("Blocked")
        /// `b`: uses legacy pairing.
        public static let legacyPairing = PropertyKey<Bool>("LegacyPairing")
        /// `n`: the last advertisement's RSSI (absent when not discovering).
        public static let rssi = PropertyKey<Int16>("RSSI")
        /// `b`: the link is up.
        public static let connected = PropertyKey<Bool>("Connected")
        /// `as`: advertised or resolved service UUIDs.
        public static let uuids = PropertyKey<[String]>("UUIDs")
        /// `s`: the peer's modalias (from its PnP ID), set once services are resolved.
        public static let modalias = PropertyKey<String>("Modalias")
        /// `o`: the adapter object.
        public static let adapter = PropertyKey<ObjectPath>("Adapter")
        /// `a{qv}`: manufacturer data by company identifier.
        public static let manufacturerData = PropertyKey<[UInt16: Data]>(
            "ManufacturerData", type: .dictionary(key: .uint16, value: .variant)) { try? BlueZShapes.manufacturerData($0) }
        /// `a{sv}`: service data by UUID.
        public static let serviceData = PropertyKey<[String: Data]>(
            "ServiceData", type: .dictionary(key: .string, value: .variant)) { try? BlueZShapes.serviceData($0) }
        /// `n`: the advertised transmit power.
        public static let txPower = PropertyKey<Int16>("TxPower")
        /// `b`: GATT discovery finished and the GATT objects are exported.
        public static let servicesResolved = PropertyKey<Bool>("ServicesResolved")
        /// `b`, read-write: may wake the host.
        public static let wakeAllowed = PropertyKey<Bool>("WakeAllowed")
    }
}
