import CDBus
import Foundation

/// A cheaper way for one subscription to receive the commonest signal on a BLE client's bus: a
/// `PropertiesChanged` of `interface` that changes `property` alone, to a byte array, and
/// invalidates nothing (every GATT notification over StartNotify). Its path and bytes are read
/// straight from libdbus and handed to `receiver`, with no `DBusMessage` decoded and no generic
/// routing; every other signal still reaches the subscription's general handler.
///
/// The router takes the shortcut only when the general path would deliver the signal to this
/// subscription alone: it is the connection's only subscription, and the sender is the current
/// owner of the subscription's well-known name. In every other case (an unknown owner, another
/// sender, another shape, a tracer set) the signal takes the general path, which decides as it
/// always did, so a forged signal is refused by the same rule either way. `receiver` must do
/// what the general handler does with such a signal.
package struct PropertyValueShortcut {
    /// The interface named by the signal's first argument, such as `org.bluez.GattCharacteristic1`.
    package let interface: String
    /// The one property the signal changes, such as `Value`.
    package let property: String
    /// Receives the object's path and the property's bytes, on the loop, in arrival order; not
    /// kept alive by the shortcut.
    package weak var receiver: (any PropertyValueReceiver)?

    /// A shortcut for `PropertiesChanged(interface, {property: ay}, [])`.
    package init(interface: String, property: String, receiver: any PropertyValueReceiver) {
        self.interface = interface
        self.property = property
        self.receiver = receiver
    }
}

/// The receiver of a `PropertyValueShortcut`. A protocol rather than a closure: a loop-isolated
/// closure checks its isolation with the concurrency runtime on every call, which would cost a
/// notification about as much as the shortcut saves.
@BleLoop
package protocol PropertyValueReceiver: AnyObject {
    /// `property` of the object at `path` changed to `value` (see `PropertyValueShortcut`).
    func propertyValueChanged(_ path: ObjectPath, _ value: Data)
}

/// A shortcut attached to one live subscription; a class, so that reading it per signal
/// retains one reference rather than each of its fields.
final class ActiveShortcut {
    let id: UInt64
    let sender: String
    let interface: String
    let property: String
    weak var receiver: (any PropertyValueReceiver)?
    /// The path of the last signal: the next one from the same object reuses this string (one
    /// `strcmp`, no allocation), and the receiver's comparison of it finds the same storage.
    var lastPath: ObjectPath?

    init(id: UInt64, sender: String, shortcut: PropertyValueShortcut) {
        self.id = id
        self.sender = sender
        interface = shortcut.interface
        property = shortcut.property
        receiver = shortcut.receiver
    }
}

extension SignalRouter {
    /// Like `subscribe(_:handler:)`, and signals of `shortcut`'s shape reach `shortcut.receiver`
    /// instead of `handler` (see `PropertyValueShortcut` for when). `match` must name a
    /// well-known sender and nothing else: the shortcut checks the sender only.
    package func subscribe(_ match: SignalMatch, shortcut: PropertyValueShortcut,
                          handler: @escaping Handler) throws(DBusError) -> SignalSubscription {
        guard let sender = match.sender, !sender.hasPrefix(":"), match.path == nil, match.pathNamespace == nil,
              match.interface == nil, match.member == nil, match.arg0 == nil else {
            throw .invalidArgument("a property-value shortcut needs a match on a well-known sender alone")
        }
        let subscription = try subscribe(match, handler: handler)
        activeShortcut = ActiveShortcut(id: lastSubscriptionID, sender: sender, shortcut: shortcut)
        return subscription
    }

    /// Delivers `rawMessage` through the shortcut when it has the shortcut's shape and the
    /// general path would deliver it to the shortcut's subscription alone; false otherwise
    /// (the caller then routes it the general way).
    func routeThroughShortcut(_ rawMessage: OpaquePointer) -> Bool {
        guard let active = activeShortcut, shortcutsEnabled,
              dbus_message_get_type(rawMessage) == Int32(DBUS_MESSAGE_TYPE_SIGNAL),
              // Its own subscription is the only one (cancelling it removes the shortcut).
              subscriptionCount == 1,
              dbus_message_is_signal(rawMessage, "org.freedesktop.DBus.Properties", "PropertiesChanged") != 0,
              dbus_message_has_signature(rawMessage, "sa{sv}as") != 0,
              let owner = shortcutOwner, let sender = dbus_message_get_sender(rawMessage),
              Self.equal(owner, sender),
              let rawPath = dbus_message_get_path(rawMessage) else { return false }
        var arguments = DBusMessageIter()
        guard dbus_message_iter_init(rawMessage, &arguments) != 0,
              Self.stringArgument(&arguments, equals: active.interface),
              dbus_message_iter_next(&arguments) != 0 else { return false }
        var entries = DBusMessageIter()
        dbus_message_iter_recurse(&arguments, &entries)
        guard dbus_message_iter_get_arg_type(&entries) == DBUS_TYPE_DICT_ENTRY else { return false }
        var entry = DBusMessageIter()
        dbus_message_iter_recurse(&entries, &entry)
        guard Self.stringArgument(&entry, equals: active.property), dbus_message_iter_next(&entry) != 0 else { return false }
        var variant = DBusMessageIter()
        dbus_message_iter_recurse(&entry, &variant)
        guard dbus_message_iter_get_arg_type(&variant) == DBUS_TYPE_ARRAY,
              dbus_message_iter_get_element_type(&variant) == DBUS_TYPE_BYTE,
              // Exactly one changed property, and nothing invalidated.
              dbus_message_iter_next(&entries) == 0, dbus_message_iter_next(&arguments) != 0 else { return false }
        var invalidated = DBusMessageIter()
        dbus_message_iter_recurse(&arguments, &invalidated)
        guard dbus_message_iter_get_arg_type(&invalidated) == DBUS_TYPE_INVALID else { return false }
        var bytes = DBusMessageIter()
        dbus_message_iter_recurse(&variant, &bytes)
        var start: UnsafeMutableRawPointer?
        var count: Int32 = 0
        dbus_message_iter_get_fixed_array(&bytes, &start, &count)
        let value: Data
        if let start, count > 0 { value = Data(bytes: start, count: Int(count)) } else { value = Data() }
        let path: ObjectPath
        if let last = active.lastPath, Self.equal(last.rawValue, rawPath) {
            path = last
        } else {
            // libdbus validated the header's path when it read the message.
            path = ObjectPath(unchecked: String(cString: rawPath))
            active.lastPath = path
        }
        active.receiver?.propertyValueChanged(path, value)
        return true
    }

    // The helpers below are nonisolated on purpose: a closure written in loop-isolated code and
    // handed to the standard library (`withCString`) checks its isolation with the concurrency
    // runtime each time it runs, about 370 instructions, several times per notification.
    private nonisolated static func stringArgument(_ iterator: inout DBusMessageIter, equals expected: String) -> Bool {
        guard dbus_message_iter_get_arg_type(&iterator) == DBUS_TYPE_STRING else { return false }
        var text: UnsafePointer<CChar>?
        dbus_message_iter_get_basic(&iterator, &text)
        guard let text else { return false }
        return equal(expected, text)
    }

    private nonisolated static func equal(_ string: String, _ cString: UnsafePointer<CChar>) -> Bool {
        string.withCString { strcmp($0, cString) } == 0
    }
}
