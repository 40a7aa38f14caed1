import BleDBus
import BlueZVocabulary

/// The error names and texts bluetoothd 5.66 answers with (src/error.c and the observed log).
@BleLoop
enum BlueZError {
    static func invalidArguments(_ call: IncomingCall, _ text: String = BlueZ.ErrorMessage.invalidArguments) {
        call.fail(name: BlueZ.ErrorName.invalidArguments, message: text)
    }
    static func inProgress(_ call: IncomingCall, _ text: String = BlueZ.ErrorMessage.inProgress) {
        call.fail(name: BlueZ.ErrorName.inProgress, message: text)
    }
    static func notReady(_ call: IncomingCall) {
        call.fail(name: BlueZ.ErrorName.notReady, message: BlueZ.ErrorMessage.notReady)
    }
    static func failed(_ call: IncomingCall, _ text: String) {
        call.fail(name: BlueZ.ErrorName.failed, message: text)
    }
    static func notSupported(_ call: IncomingCall) {
        call.fail(name: BlueZ.ErrorName.notSupported, message: BlueZ.ErrorMessage.notSupported)
    }
    static func notPermitted(_ call: IncomingCall, _ text: String) {
        call.fail(name: BlueZ.ErrorName.notPermitted, message: text)
    }
    static func doesNotExist(_ call: IncomingCall) {
        call.fail(name: BlueZ.ErrorName.doesNotExist, message: BlueZ.ErrorMessage.doesNotExist)
    }
    static func alreadyExists(_ call: IncomingCall) {
        call.fail(name: BlueZ.ErrorName.alreadyExists, message: BlueZ.ErrorMessage.alreadyExists)
    }
    static func authenticationFailed(_ call: IncomingCall) {
        call.fail(name: BlueZ.ErrorName.authenticationFailed, message: BlueZ.ErrorMessage.authenticationFailed)
    }
    static func authenticationCanceled(_ call: IncomingCall) {
        call.fail(name: BlueZ.ErrorName.authenticationCanceled, message: BlueZ.ErrorMessage.authenticationCanceled)
    }
    static func authenticationTimeout(_ call: IncomingCall) {
        call.fail(name: BlueZ.ErrorName.authenticationTimeout, message: BlueZ.ErrorMessage.authenticationTimeout)
    }
    static func notConnected(_ call: IncomingCall) {
        call.fail(name: BlueZ.ErrorName.failed, message: BlueZ.ErrorMessage.notConnected)
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
