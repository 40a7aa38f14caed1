import BleDBus

/// The freedesktop.org names BlueZ objects and the bus daemon use alongside BlueZ's own.
public enum FreedesktopDBus {
    /// The bus daemon's name.
    public static let busName = "org.freedesktop.DBus"
    /// The bus daemon's object.
    public static let path: ObjectPath = "/org/freedesktop/DBus"
    /// The bus daemon's interface.
    public static let interface = "org.freedesktop.DBus"

    /// Methods and signals of the bus daemon's interface.
    public enum Method {
        /// Claims a well-known name.
        public static let requestName = "RequestName"
        /// The bus's unique id (a cheap round trip).
        public static let getID = "GetId"
        /// The unique name owning a well-known name.
        public static let getNameOwner = "GetNameOwner"
        /// Every name on the bus, unique and well-known.
        public static let listNames = "ListNames"
        /// The process id of the connection owning a name.
        public static let getConnectionUnixProcessID = "GetConnectionUnixProcessID"
        /// Signal: a name changed owner (appeared, left or moved).
        public static let nameOwnerChanged = "NameOwnerChanged"
        /// Signal to one connection: it became the primary owner of a name it queued for.
        public static let nameAcquired = "NameAcquired"
    }

    /// `org.freedesktop.DBus.Properties`.
    public enum Properties {
        /// The interface name.
        public static let interface = "org.freedesktop.DBus.Properties"
        /// `Get(s interface, s name) → v`.
        public static let get = "Get"
        /// `Set(s interface, s name, v value)`.
        public static let set = "Set"
        /// `GetAll(s interface) → a{sv}`.
        public static let getAll = "GetAll"
        /// Signal: `(s interface, a{sv} changed, as invalidated)`.
        public static let propertiesChanged = "PropertiesChanged"
    }

    /// `org.freedesktop.DBus.ObjectManager`.
    public enum ObjectManager {
        /// The interface name.
        public static let interface = "org.freedesktop.DBus.ObjectManager"
        /// `GetManagedObjects() → a{oa{sa{sv}}}`.
        public static let getManagedObjects = "GetManagedObjects"
        /// Signal: `(o path, a{sa{sv}} interfaces)`.
        public static let interfacesAdded = "InterfacesAdded"
        /// Signal: `(o path, as interfaces)`.
        public static let interfacesRemoved = "InterfacesRemoved"
    }

    /// `org.freedesktop.DBus.Peer`, which libdbus answers for every connection by itself.
    public enum Peer {
        /// The interface name.
        public static let interface = "org.freedesktop.DBus.Peer"
        /// `Ping()`: an empty reply, unless the bus policy forbids the call.
        public static let ping = "Ping"
    }

    /// `org.freedesktop.DBus.Introspectable`.
    public enum Introspectable {
        /// The interface name.
        public static let interface = "org.freedesktop.DBus.Introspectable"
    }

    /// The `org.freedesktop.DBus.Error.*` names BleKit maps to its own errors.
    public enum ErrorName {
        /// No such object path.
        public static let unknownObject = "org.freedesktop.DBus.Error.UnknownObject"
        /// No such method on the object.
        public static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
        /// The bus policy forbids the call.
        public static let accessDenied = "org.freedesktop.DBus.Error.AccessDenied"
        /// The destination name has no owner and cannot be activated.
        public static let serviceUnknown = "org.freedesktop.DBus.Error.ServiceUnknown"
        /// The destination name has no owner.
        public static let nameHasNoOwner = "org.freedesktop.DBus.Error.NameHasNoOwner"
        /// Activation started the service and it exited.
        public static let spawnChildExited = "org.freedesktop.DBus.Error.Spawn.ChildExited"
        /// No reply within the call's timeout.
        public static let noReply = "org.freedesktop.DBus.Error.NoReply"
        /// A timeout (older name).
        public static let timeout = "org.freedesktop.DBus.Error.Timeout"
        /// A timeout.
        public static let timedOut = "org.freedesktop.DBus.Error.TimedOut"
        /// Arguments of the wrong type.
        public static let invalidArguments = "org.freedesktop.DBus.Error.InvalidArgs"
        /// What `UnknownObject`, `UnknownInterface`, `UnknownMethod` and `UnknownProperty` start with.
        public static let unknownPrefix = "org.freedesktop.DBus.Error.Unknown"
    }

    /// The messages of the bus daemon's own errors that BleKit tells apart.
    public enum ErrorMessage {
        /// What `NoReply`'s message starts with when the callee left the bus with the call
        /// unanswered (`Message recipient disconnected from message bus without replying`).
        public static let recipientDisconnected = "Message recipient disconnected"
    }
}
