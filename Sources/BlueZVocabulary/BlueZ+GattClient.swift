import BleDBus
import Foundation

extension BlueZ {
    /// `org.bluez.GattService1`: a service of a remote device (or of an app's GATT application).
    public enum GattService1 {
        /// The interface name.
        public static let interface = "org.bluez.GattService1"

        /// `s`: the service UUID.
        public static let uuid = PropertyKey<String>("UUID")
        /// `o`: the device object (client side only).
        public static let device = PropertyKey<ObjectPath>("Device")
        /// `b`: primary, not secondary.
        public static let primary = PropertyKey<Bool>("Primary")
        /// `ao`: included services.
        public static let includes = PropertyKey<[ObjectPath]>("Includes")
    }

    /// `org.bluez.GattCharacteristic1`: a characteristic of a remote device (or of an app).
    public enum GattCharacteristic1 {
        /// The interface name.
        public static let interface = "org.bluez.GattCharacteristic1"

        /// The method names.
        public enum Method {
            /// Reads the value (`a{sv}` options, `Option`).
            public static let readValue = "ReadValue"
            /// Writes the value (`ay`, `a{sv}` options).
            public static let writeValue = "WriteValue"
            /// Hands out a socket for writes without response.
            public static let acquireWrite = "AcquireWrite"
            /// Hands out a socket that carries notifications.
            public static let acquireNotify = "AcquireNotify"
            /// Starts a notify session for the caller: values arrive as `Value` changes.
            public static let startNotify = "StartNotify"
            /// Ends the caller's notify session.
            public static let stopNotify = "StopNotify"
            /// An app's characteristic is told an indication was confirmed.
            public static let confirm = "Confirm"
        }

        /// The keys of the option dictionaries bluetoothd passes and accepts.
        public enum Option {
            /// `q`: the value offset.
            public static let offset = "offset"
            /// `s`: `command`, `request` or `reliable` (writes).
            public static let type = "type"
            /// `q`: the link's MTU.
            public static let mtu = "mtu"
            /// `o`: the device object of the remote end.
            public static let device = "device"
            /// `s`: the bearer, e.g. `LE`.
            public static let link = "link"
            /// `b`: a prepared write asking for authorization.
            public static let prepareAuthorize = "prepare-authorize"
        }

        /// The values of the `link` option.
        public enum Link {
            /// The access came over LE.
            public static let le = "LE"
            /// The access came over BR/EDR.
            public static let bredr = "BR/EDR"
        }

        /// The values of `WriteValue`'s `type` option.
        public enum WriteType {
            /// A Write Command: the peer does not answer.
            public static let command = "command"
            /// A Write Request: the peer answers.
            public static let request = "request"
            /// A reliable write (prepared writes, then an execute).
            public static let reliable = "reliable"
        }

        /// `s`: the characteristic UUID.
        public static let uuid = PropertyKey<String>("UUID")
        /// `o`: the service object.
        public static let service = PropertyKey<ObjectPath>("Service")
        /// `ay`: the cached value; its changes carry notifications on the StartNotify path.
        public static let value = PropertyKey<Data>("Value")
        /// `b`: notifications or indications are enabled.
        public static let notifying = PropertyKey<Bool>("Notifying")
        /// `as`: `read`, `write`, `notify`, ….
        public static let flags = PropertyKey<[String]>("Flags")
        /// `b`: an `AcquireWrite` socket is open.
        public static let writeAcquired = PropertyKey<Bool>("WriteAcquired")
        /// `b`: an `AcquireNotify` socket is open.
        public static let notifyAcquired = PropertyKey<Bool>("NotifyAcquired")
        /// `q`: the link's MTU.
        public static let mtu = PropertyKey<UInt16>("MTU")
    }

    /// `org.bluez.GattDescriptor1`: a descriptor of a remote device (or of an app).
    public enum GattDescriptor1 {
        /// The interface name.
        public static let interface = "org.bluez.GattDescriptor1"

        /// The method names.
        public enum Method {
            /// Reads the value.
            public static let readValue = GattCharacteristic1.Method.readValue
            /// Writes the value.
            public static let writeValue = GattCharacteristic1.Method.writeValue
        }

        /// `s`: the descriptor UUID.
        public static let uuid = PropertyKey<String>("UUID")
        /// `o`: the characteristic object.
        public static let characteristic = PropertyKey<ObjectPath>("Characteristic")
        /// `ay`: the cached value.
        public static let value = PropertyKey<Data>("Value")
        /// `as`: `read`, `write`, … (app side).
        public static let flags = PropertyKey<[String]>("Flags")
    }

    /// Whether `name` is one of the GATT client interfaces, whose objects live below a device.
    public static func isGattInterface(_ name: String) -> Bool {
        name == GattService1.interface || name == GattCharacteristic1.interface || name == GattDescriptor1.interface
    }
}
