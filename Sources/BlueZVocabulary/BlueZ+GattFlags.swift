extension BlueZ {
    /// The `Flags` values of `GattCharacteristic1` and `GattDescriptor1` that bluetoothd 5.66 knows.
    public enum GattFlag {
        /// Broadcast in advertisements.
        public static let broadcast = "broadcast"
        /// Readable.
        public static let read = "read"
        /// Writable without response (write commands).
        public static let writeWithoutResponse = "write-without-response"
        /// Writable with response.
        public static let write = "write"
        /// Notifies.
        public static let notify = "notify"
        /// Indicates (confirmed notifications).
        public static let indicate = "indicate"
        /// Accepts signed writes.
        public static let authenticatedSignedWrites = "authenticated-signed-writes"
        /// Has an Extended Properties descriptor.
        public static let extendedProperties = "extended-properties"
        /// Accepts reliable (prepared) writes.
        public static let reliableWrite = "reliable-write"
        /// Its User Description descriptor is writable.
        public static let writableAuxiliaries = "writable-auxiliaries"
        /// Read needs an encrypted link.
        public static let encryptRead = "encrypt-read"
        /// Write needs an encrypted link.
        public static let encryptWrite = "encrypt-write"
        /// Notify needs an encrypted link.
        public static let encryptNotify = "encrypt-notify"
        /// Indicate needs an encrypted link.
        public static let encryptIndicate = "encrypt-indicate"
        /// Read needs an encrypted, authenticated link.
        public static let encryptAuthenticatedRead = "encrypt-authenticated-read"
        /// Write needs an encrypted, authenticated link.
        public static let encryptAuthenticatedWrite = "encrypt-authenticated-write"
        /// Notify needs an encrypted, authenticated link.
        public static let encryptAuthenticatedNotify = "encrypt-authenticated-notify"
        /// Indicate needs an encrypted, authenticated link.
        public static let encryptAuthenticatedIndicate = "encrypt-authenticated-indicate"
        /// Read needs a Secure Connections link.
        public static let secureRead = "secure-read"
        /// Write needs a Secure Connections link.
        public static let secureWrite = "secure-write"
        /// Notify needs a Secure Connections link.
        public static let secureNotify = "secure-notify"
        /// Indicate needs a Secure Connections link.
        public static let secureIndicate = "secure-indicate"
        /// Every access asks the app for authorization.
        public static let authorize = "authorize"
        /// Every flag, in bluetoothd's order.
        public static let all = [
            broadcast, read, writeWithoutResponse, write, notify, indicate, authenticatedSignedWrites,
            extendedProperties, reliableWrite, writableAuxiliaries, encryptRead, encryptWrite, encryptNotify,
            encryptIndicate, encryptAuthenticatedRead, encryptAuthenticatedWrite, encryptAuthenticatedNotify,
            encryptAuthenticatedIndicate, secureRead, secureWrite, secureNotify, secureIndicate, authorize,
        ]
    }
}
