extension BlueZ {
    /// The `org.bluez.Error.*` names bluetoothd 5.66 replies with (src/error.c and the GATT code).
    public enum ErrorName {
        /// Every BlueZ error name starts with this.
        public static let prefix = "org.bluez.Error."
        /// A generic failure; the message says which (`Not connected`, an ATT code, …).
        public static let failed = "org.bluez.Error.Failed"
        /// Another operation of the same kind is running.
        public static let inProgress = "org.bluez.Error.InProgress"
        /// The adapter is not powered or not ready.
        public static let notReady = "org.bluez.Error.NotReady"
        /// The peer or an agent refused authorization.
        public static let notAuthorized = "org.bluez.Error.NotAuthorized"
        /// The attribute's permissions forbid the operation.
        public static let notPermitted = "org.bluez.Error.NotPermitted"
        /// The operation is not supported.
        public static let notSupported = "org.bluez.Error.NotSupported"
        /// The arguments are wrong.
        public static let invalidArguments = "org.bluez.Error.InvalidArguments"
        /// A value of the wrong length (apps reply with it).
        public static let invalidValueLength = "org.bluez.Error.InvalidValueLength"
        /// An offset past the value (apps reply with it).
        public static let invalidOffset = "org.bluez.Error.InvalidOffset"
        /// Advertising data too long for the PDU.
        public static let invalidLength = "org.bluez.Error.InvalidLength"
        /// `Connect` on a connected device.
        public static let alreadyConnected = "org.bluez.Error.AlreadyConnected"
        /// The device is not connected.
        public static let notConnected = "org.bluez.Error.NotConnected"
        /// Already registered, paired or present.
        public static let alreadyExists = "org.bluez.Error.AlreadyExists"
        /// No such object, agent or registration.
        public static let doesNotExist = "org.bluez.Error.DoesNotExist"
        /// Pairing failed.
        public static let authenticationFailed = "org.bluez.Error.AuthenticationFailed"
        /// Pairing was cancelled.
        public static let authenticationCanceled = "org.bluez.Error.AuthenticationCanceled"
        /// Pairing was rejected by the agent or the peer.
        public static let authenticationRejected = "org.bluez.Error.AuthenticationRejected"
        /// Pairing timed out.
        public static let authenticationTimeout = "org.bluez.Error.AuthenticationTimeout"
        /// The connection attempt failed (page timeout, LE connection failed).
        public static let connectionAttemptFailed = "org.bluez.Error.ConnectionAttemptFailed"
        /// The resource is not available.
        public static let notAvailable = "org.bluez.Error.NotAvailable"
        /// The controller is busy (e.g. discovery while powering).
        public static let busy = "org.bluez.Error.Busy"
        /// The daemon is configured so that the operation cannot work.
        public static let improperlyConfigured = "org.bluez.Error.ImproperlyConfigured"
        /// A BR/EDR profile is unavailable.
        public static let profileUnavailable = "org.bluez.Error.BREDR.ProfileUnavailable"
    }

    /// The messages bluetoothd 5.66 sends with those errors, where BleSim replies with them.
    public enum ErrorMessage {
        /// With `InvalidArguments` from the D-Bus argument checks.
        public static let invalidArguments = "Invalid arguments in method call"
        /// With `InProgress`.
        public static let inProgress = "In Progress"
        /// With `NotReady`.
        public static let notReady = "Resource Not Ready"
        /// With `NotSupported`.
        public static let notSupported = "Operation is not supported"
        /// With `DoesNotExist`.
        public static let doesNotExist = "Does Not Exist"
        /// With `AlreadyExists`.
        public static let alreadyExists = "Already Exists"
        /// With `AuthenticationFailed`.
        public static let authenticationFailed = "Authentication Failed"
        /// With `AuthenticationCanceled`.
        public static let authenticationCanceled = "Authentication Canceled"
        /// With `AuthenticationTimeout`.
        public static let authenticationTimeout = "Authentication Timeout"
        /// With `AuthenticationRejected`.
        public static let authenticationRejected = "Authentication Rejected"
        /// With `NotAuthorized` for ATT's insufficient authorization.
        public static let notAuthorized = "Operation Not Authorized"
        /// With `Failed` for a GATT operation on a device without a link.
        public static let notConnected = "Not connected"
        /// With `NotPermitted` for a read the attribute forbids.
        public static let readNotPermitted = "Read not permitted"
        /// With `NotPermitted` for a write the attribute forbids.
        public static let writeNotPermitted = "Write not permitted"
        /// With `NotPermitted` for ATT's insufficient authentication or encryption.
        public static let notPaired = "Not paired"
        /// With `InvalidArguments` for ATT's invalid offset.
        public static let invalidOffset = "Invalid offset"
        /// With `InvalidArguments` for ATT's invalid attribute value length.
        public static let invalidLength = "Invalid Length"
        /// With `InvalidLength` from `RegisterAdvertisement`.
        public static let advertisingDataTooLong = "Advertising data too long"
        /// With `Failed` from `RegisterAdvertisement` when the data does not fit (5.66 finds
        /// out only when it hands the data to the kernel).
        public static let failedToRegisterAdvertisement = "Failed to register advertisement"
        /// With `Failed` from `ConnectProfile` on an LE-only device.
        public static let bredrSDPSearch = "br-connection-sdp-search"

        /// With `Failed` when an `Acquire*` socket pair cannot be made.
        public static let socketFailed = "Failed to create socket"
        /// With `Failed` for a write command longer than the MTU allows.
        public static let writeNotInitiated = "Failed to initiate write"
        /// With `Failed` from `RegisterApplication` when the app's `GetManagedObjects` fails or is invalid.
        public static let applicationTreeUnreadable = "Failed to read application object tree"
        /// With `Failed` from `StopDiscovery` without a session of the caller.
        public static let noDiscoveryStarted = "No discovery started"
        /// With `Failed` from `StopNotify` without a session of the caller.
        public static let noNotifySession = "No notify session started"
        /// With `Failed` from `Connect` when the controller gave up on the attempt (connect timeout, aborted link).
        public static let leConnectionAbortByLocal = "le-connection-abort-by-local"
        /// With `InProgress` from `StartDiscovery` when the caller already has a session.
        public static let operationAlreadyInProgress = "Operation already in progress"
        /// With `Failed` from `Connect` when `Disconnect` cancelled the attempt.
        public static let bredrConnectionCanceled = "br-connection-canceled"
        /// With `Failed` from `Connect` when the peer ended the link as it came up.
        public static let leConnectionAbortByRemote = "le-connection-abort-by-remote"
        /// With `NotPermitted` from `RegisterAdvertisement` when every instance is used.
        public static let maximumAdvertisementsReached = "Maximum advertisements reached"
        /// With `NotPermitted` while an `AcquireNotify` socket is open.
        public static let notifyAcquired = "Notify acquired"
        /// With `NotPermitted` while an `AcquireWrite` socket is open.
        public static let writeAcquired = "Write acquired"

        /// What a `Failed` message of an ATT error holds before the code's hex digits.
        public static let attErrorMarker = "ATT error: 0x"
        /// What a `Failed` reason of an LE `Connect` starts with (`le-connection-abort-by-local`).
        public static let leConnectionPrefix = "le-connection-"
        /// What a `Failed` reason of a BR/EDR `Connect` starts with; 5.66 uses it on LE too when
        /// `Disconnect` cancels the attempt (`br-connection-canceled`).
        public static let bredrConnectionPrefix = "br-connection-"

        /// With `Failed` for any other ATT error: `0x` and the code in two hex digits.
        public static func attError(_ code: UInt8) -> String {
            let digits = String(code, radix: 16)
            return "Operation failed with " + attErrorMarker + (digits.count < 2 ? "0" + digits : digits)
        }
    }
}
