import BleDBus

/// The error names and texts bluetoothd 5.66 answers with (src/error.c and the observed log).
@BleLoop
enum BlueZError {
    static func invalidArguments(_ call: IncomingCall, _ text: String = "Invalid arguments in method call") {
        call.fail(name: "org.bluez.Error.InvalidArguments", message: text)
    }
    static func inProgress(_ call: IncomingCall, _ text: String = "In Progress") {
        call.fail(name: "org.bluez.Error.InProgress", message: text)
    }
    static func notReady(_ call: IncomingCall) {
        call.fail(name: "org.bluez.Error.NotReady", message: "Resource Not Ready")
    }
    static func failed(_ call: IncomingCall, _ text: String) {
        call.fail(name: "org.bluez.Error.Failed", message: text)
    }
    static func notSupported(_ call: IncomingCall) {
        call.fail(name: "org.bluez.Error.NotSupported", message: "Operation is not supported")
    }
    static func notPermitted(_ call: IncomingCall, _ text: String) {
        call.fail(name: "org.bluez.Error.NotPermitted", message: text)
    }
    static func doesNotExist(_ call: IncomingCall) {
        call.fail(name: "org.bluez.Error.DoesNotExist", message: "Does Not Exist")
    }
    static func alreadyExists(_ call: IncomingCall) {
        call.fail(name: "org.bluez.Error.AlreadyExists", message: "Already Exists")
    }
    static func authenticationFailed(_ call: IncomingCall) {
        call.fail(name: "org.bluez.Error.AuthenticationFailed", message: "Authentication Failed")
    }
    static func authenticationCanceled(_ call: IncomingCall) {
        call.fail(name: "org.bluez.Error.AuthenticationCanceled", message: "Authentication Canceled")
    }
    static func notConnected(_ call: IncomingCall) {
        call.fail(name: "org.bluez.Error.Failed", message: "Not connected")
    }
    static func att(_ call: IncomingCall, _ error: AttError) {
        let (name, text) = error.dbusError
        call.fail(name: name, message: text)
    }
}

/// Reads BlueZ option dictionaries (`a{sv}`) strictly: a known key with the wrong type is an
/// error, as in bluetoothd's parsers.
struct OptionReader {
    struct WrongType: Error {}

    let entries: PropertyMap

    init?(_ value: DBusValue?) {
        guard let value, let map = try? BlueZShapes.propertyMap(value) else { return nil }
        entries = map
    }

    /// nil when absent; throws when present with another type.
    func get<T: DBusConvertible>(_ key: String, _ type: T.Type) throws(WrongType) -> T? {
        guard let raw = entries[key] else { return nil }
        guard let typed = raw.as(T.self) else { throw WrongType() }
        return typed
    }
}
