import BleDBus

extension BlueZ {
    /// `org.bluez.AgentManager1` at `/org/bluez`: where pairing agents register.
    public enum AgentManager1 {
        /// The interface name.
        public static let interface = "org.bluez.AgentManager1"

        /// The method names.
        public enum Method {
            /// Registers an agent object with a capability (`Capability`).
            public static let registerAgent = "RegisterAgent"
            /// Unregisters it.
            public static let unregisterAgent = "UnregisterAgent"
            /// Makes a registered agent the default one.
            public static let requestDefaultAgent = "RequestDefaultAgent"
        }

        /// The IO capabilities `RegisterAgent` accepts.
        public enum Capability {
            /// Shows a passkey, cannot confirm.
            public static let displayOnly = "DisplayOnly"
            /// Shows a passkey and can confirm.
            public static let displayYesNo = "DisplayYesNo"
            /// Can type, cannot show.
            public static let keyboardOnly = "KeyboardOnly"
            /// Neither shows nor types (Just Works).
            public static let noInputNoOutput = "NoInputNoOutput"
            /// Can show and type.
            public static let keyboardDisplay = "KeyboardDisplay"
            /// Every capability, in bluetoothd's order.
            public static let all = [displayOnly, displayYesNo, keyboardOnly, noInputNoOutput, keyboardDisplay]
        }
    }

    /// `org.bluez.Agent1`, implemented by an app: answers pairing requests.
    public enum Agent1 {
        /// The interface name.
        public static let interface = "org.bluez.Agent1"

        /// The method names bluetoothd calls on an agent.
        public enum Method {
            /// The agent was unregistered by bluetoothd.
            public static let release = "Release"
            /// Asks for a legacy PIN code.
            public static let requestPinCode = "RequestPinCode"
            /// Shows a legacy PIN code.
            public static let displayPinCode = "DisplayPinCode"
            /// Asks for a passkey.
            public static let requestPasskey = "RequestPasskey"
            /// Shows a passkey and the digits typed so far.
            public static let displayPasskey = "DisplayPasskey"
            /// Asks to confirm a passkey.
            public static let requestConfirmation = "RequestConfirmation"
            /// Asks to authorize pairing without a passkey.
            public static let requestAuthorization = "RequestAuthorization"
            /// Asks to authorize a service connection.
            public static let authorizeService = "AuthorizeService"
            /// The request in progress was cancelled.
            public static let cancel = "Cancel"
        }

        /// The errors an agent answers with to refuse a request.
        public enum ErrorName {
            /// The user (or the app) said no.
            public static let rejected = "org.bluez.Error.Rejected"
            /// The request was abandoned (no answer in time, or the app went away).
            public static let canceled = "org.bluez.Error.Canceled"
        }
    }

    /// `org.bluez.ProfileManager1` at `/org/bluez`.
    public enum ProfileManager1 {
        /// The interface name.
        public static let interface = "org.bluez.ProfileManager1"

        /// The method names.
        public enum Method {
            /// Registers a profile object for a UUID.
            public static let registerProfile = "RegisterProfile"
            /// Unregisters it.
            public static let unregisterProfile = "UnregisterProfile"
        }
    }

    /// `org.bluez.HealthManager1` at `/org/bluez` (exported by 5.66 when built with health support).
    public enum HealthManager1 {
        /// The interface name.
        public static let interface = "org.bluez.HealthManager1"

        /// The method names.
        public enum Method {
            /// Creates a health application.
            public static let createApplication = "CreateApplication"
            /// Destroys it.
            public static let destroyApplication = "DestroyApplication"
        }
    }

    /// `org.bluez.Media1` on an adapter (from the audio plugins).
    public enum Media1 {
        /// The interface name.
        public static let interface = "org.bluez.Media1"

        /// The method names.
        public enum Method {
            /// Registers a media endpoint.
            public static let registerEndpoint = "RegisterEndpoint"
            /// Unregisters it.
            public static let unregisterEndpoint = "UnregisterEndpoint"
            /// Registers a media player.
            public static let registerPlayer = "RegisterPlayer"
            /// Unregisters it.
            public static let unregisterPlayer = "UnregisterPlayer"
            /// Registers endpoints and players under one object tree.
            public static let registerApplication = "RegisterApplication"
            /// Unregisters it.
            public static let unregisterApplication = "UnregisterApplication"
        }
        /// `as`: the endpoint UUIDs the audio plugins support.
        public static let supportedUUIDs = PropertyKey<[String]>("SupportedUUIDs")
    }

    /// `org.bluez.NetworkServer1` on an adapter (from the network plugin).
    public enum NetworkServer1 {
        /// The interface name.
        public static let interface = "org.bluez.NetworkServer1"

        /// The method names.
        public enum Method {
            /// Registers a network server for a UUID and bridge.
            public static let register = "Register"
            /// Unregisters it.
            public static let unregister = "Unregister"
        }
    }
}
