import BleDBus
import Foundation

extension BlueZ {
    /// `org.bluez.GattManager1` on an adapter: where apps register GATT applications.
    public enum GattManager1 {
        /// The interface name.
        public static let interface = "org.bluez.GattManager1"

        /// The method names.
        public enum Method {
            /// Registers the object tree under a path (read with `GetManagedObjects`).
            public static let registerApplication = "RegisterApplication"
            /// Unregisters it.
            public static let unregisterApplication = "UnregisterApplication"
        }
    }

    /// `org.bluez.LEAdvertisingManager1` on an adapter: where apps register advertisements.
    public enum LEAdvertisingManager1 {
        /// The interface name.
        public static let interface = "org.bluez.LEAdvertisingManager1"

        /// The method names.
        public enum Method {
            /// Registers an `LEAdvertisement1` object.
            public static let registerAdvertisement = "RegisterAdvertisement"
            /// Unregisters it.
            public static let unregisterAdvertisement = "UnregisterAdvertisement"
        }

        /// `y`: advertisements registered.
        public static let activeInstances = PropertyKey<UInt8>("ActiveInstances")
        /// `y`: advertisements that may still be registered.
        public static let supportedInstances = PropertyKey<UInt8>("SupportedInstances")
        /// `as`: what an advertisement may ask to include (`tx-power`, `appearance`, `local-name`).
        public static let supportedIncludes = PropertyKey<[String]>("SupportedIncludes")
        /// `as`: secondary channels for extended advertising.
        public static let supportedSecondaryChannels = PropertyKey<[String]>("SupportedSecondaryChannels")
    }

    /// `org.bluez.LEAdvertisement1`, implemented by an app: one advertisement.
    public enum LEAdvertisement1 {
        /// The interface name.
        public static let interface = "org.bluez.LEAdvertisement1"

        /// The method names.
        public enum Method {
            /// bluetoothd is done with the advertisement.
            public static let release = "Release"
        }

        /// `s`: `broadcast` or `peripheral`.
        public static let type = PropertyKey<String>("Type")
        /// `as`: advertised service UUIDs.
        public static let serviceUUIDs = PropertyKey<[String]>("ServiceUUIDs")
        /// `a{qv}`: manufacturer data.
        public static let manufacturerData = PropertyKey<[UInt16: Data]>(
            "ManufacturerData", type: .dictionary(key: .uint16, value: .variant)) { try? BlueZShapes.manufacturerData($0) }
        /// `a{sv}`: service data.
        public static let serviceData = PropertyKey<[String: Data]>(
            "ServiceData", type: .dictionary(key: .string, value: .variant)) { try? BlueZShapes.serviceData($0) }
        /// `as`: what bluetoothd should add (`Include`).
        public static let includes = PropertyKey<[String]>("Includes")

        /// The values of `Includes` (and of the manager's `SupportedIncludes`).
        public enum Include {
            /// The advertising TX power.
            public static let txPower = "tx-power"
            /// The adapter's GAP appearance.
            public static let appearance = "appearance"
            /// The adapter's name.
            public static let localName = "local-name"
        }
        /// `s`: the name to advertise.
        public static let localName = PropertyKey<String>("LocalName")
    }
}
