import BleDBus

extension BlueZ {
    /// `org.bluez.Adapter1` at `/org/bluez/hciN`: one local controller.
    public enum Adapter1 {
        /// The interface name.
        public static let interface = "org.bluez.Adapter1"

        /// The method names.
        public enum Method {
            /// Starts a discovery session for the caller.
            public static let startDiscovery = "StartDiscovery"
            /// Ends the caller's discovery session.
            public static let stopDiscovery = "StopDiscovery"
            /// Sets the caller's discovery filter (`a{sv}`, keys in `DiscoveryFilterKey`).
            public static let setDiscoveryFilter = "SetDiscoveryFilter"
            /// Lists the discovery filter keys the daemon understands.
            public static let getDiscoveryFilters = "GetDiscoveryFilters"
            /// Forgets a device and its bonding.
            public static let removeDevice = "RemoveDevice"
        }

        /// The keys of `SetDiscoveryFilter`'s dictionary, in bluetoothd's order.
        public enum DiscoveryFilterKey {
            /// `as`: service UUIDs to match.
            public static let uuids = "UUIDs"
            /// `n`: minimum RSSI.
            public static let rssi = "RSSI"
            /// `q`: maximum path loss.
            public static let pathloss = "Pathloss"
            /// `s`: `auto`, `bredr` or `le`.
            public static let transport = "Transport"
            /// `b`: report every advertisement, not only changes.
            public static let duplicateData = "DuplicateData"
            /// `b`: only discoverable devices.
            public static let discoverable = "Discoverable"
            /// `s`: address or name prefix.
            public static let pattern = "Pattern"
            /// Every key, as `GetDiscoveryFilters` answers.
            public static let all = [uuids, rssi, pathloss, transport, duplicateData, discoverable, pattern]
        }

        /// The values of the discovery filter's `Transport` key.
        public enum Transport {
            /// LE and BR/EDR (interleaved discovery).
            public static let auto = "auto"
            /// LE only.
            public static let le = "le"
            /// BR/EDR only.
            public static let bredr = "bredr"
        }

        /// The values of `PowerState`.
        public enum PowerStateValue {
            /// Powered.
            public static let on = "on"
            /// Not powered.
            public static let off = "off"
            /// Powering on.
            public static let offEnabling = "off-enabling"
            /// Powering off.
            public static let onDisabling = "on-disabling"
            /// Not powered, and blocked (rfkill): powering on cannot work.
            public static let offBlocked = "off-blocked"
        }

        /// `s`: the controller's address.
        public static let address = PropertyKey<String>("Address")
        /// `s`: `public` or `random`.
        public static let addressType = PropertyKey<String>("AddressType")
        /// `s`: the system name.
        public static let name = PropertyKey<String>("Name")
        /// `s`, read-write: the friendly name.
        public static let alias = PropertyKey<String>("Alias")
        /// `u`: the class of device.
        public static let deviceClass = PropertyKey<UInt32>("Class")
        /// `b`, read-write: the radio is on.
        public static let powered = PropertyKey<Bool>("Powered")
        /// `s`: `on`, `off`, `off-enabling`, `on-disabling`, `off-blocked` (newer daemons only).
        public static let powerState = PropertyKey<String>("PowerState")
        /// `b`, read-write: visible to other devices.
        public static let discoverable = PropertyKey<Bool>("Discoverable")
        /// `u`, read-write: seconds until `Discoverable` turns off (0: never).
        public static let discoverableTimeout = PropertyKey<UInt32>("DiscoverableTimeout")
        /// `b`, read-write: accepts pairing.
        public static let pairable = PropertyKey<Bool>("Pairable")
        /// `u`, read-write: seconds until `Pairable` turns off (0: never).
        public static let pairableTimeout = PropertyKey<UInt32>("PairableTimeout")
        /// `b`: a discovery session is running.
        public static let discovering = PropertyKey<Bool>("Discovering")
        /// `as`: the local services.
        public static let uuids = PropertyKey<[String]>("UUIDs")
        /// `s`: the controller's modalias.
        public static let modalias = PropertyKey<String>("Modalias")
        /// `as`: `central`, `peripheral`, `central-peripheral`.
        public static let roles = PropertyKey<[String]>("Roles")
        /// `as`: enabled experimental features (absent when none).
        public static let experimentalFeatures = PropertyKey<[String]>("ExperimentalFeatures")
    }
}
