import CDBus
import Foundation

/// Method calls built once and copied for each later call to the same method on the same
/// object: the common case of a GATT client, which calls `WriteValue` on one characteristic
/// thousands of times.
///
/// Two levels, both copies of messages libdbus built:
/// - **The header.** libdbus sets and validates each header field of a new message one by one,
///   and reorders the header every time (measured: 10,000 instructions per
///   `dbus_message_new_method_call` on a BlueZ characteristic path, against 2,600 for
///   `dbus_message_copy` of a header-only message).
/// - **The whole call**, when the arguments repeat: equal, or equal but for the bytes of `ay`
///   arguments of the same length (a `WriteValue` of a new value with the same options). libdbus
///   appends an argument through its type writer, which rewrites the header's signature field
///   and walks the header's fields for every container it closes: 50,000 instructions to append
///   a 4-byte `ay` and a one-entry `a{sv}`. A copy of the complete call with the new bytes
///   written over the old costs 2,000.
///
/// A copy is a new, unlocked message with serial 0, as a new one would be.
///
/// Few entries, replaced round-robin: a client talks to a handful of attributes at a time, and
/// comparing strings that are equal costs little (identical storage first, then bytes).
struct MessageTemplates: ~Copyable {
    static let capacity = 16
    /// Arguments larger than this (bytes, roughly as marshalled) are not kept as a template:
    /// a call that big is rare, and sixteen of them would be a lot of memory.
    static let largestKeptBody = 4096

    /// A complete call: its arguments, and the message libdbus built from them.
    private struct Call {
        let body: [DBusValue]
        let raw: OpaquePointer
        /// Whether libdbus has located the header fields of `raw` (done on the first reuse):
        /// the locations are copied with it, so a copy finds its body without reading its
        /// header again (5,700 instructions on a BlueZ characteristic path).
        var fieldsLocated: Bool
    }

    private struct Entry {
        let destination: String?
        let path: ObjectPath
        let interface: String?
        let member: String
        let noReply: Bool
        let header: OpaquePointer
        var call: Call?

        func matches(destination: String?, path: ObjectPath, interface: String?, member: String, noReply: Bool) -> Bool {
            self.member == member && self.path == path && self.interface == interface
                && self.destination == destination && self.noReply == noReply
        }
    }

    /// The outcome of `lookUp`.
    enum Lookup {
        /// A complete call with these arguments, for the caller to send.
        case complete(OpaquePointer)
        /// A copy of the header only; `slot` is for `keep(_:of:in:)`.
        case header(OpaquePointer, slot: Int)
        /// No template for this header yet: `insert` makes one, once the names are checked.
        case absent
        /// libdbus could not allocate the message.
        case outOfMemory
    }

    private var entries: [Entry] = []
    private var nextSlot = 0

    init() {}

    /// A copy of the template for this method call: complete, when one with these arguments
    /// exists; else header-only, for the caller to append `body` to.
    mutating func lookUp(destination: String?, path: ObjectPath, interface: String?, member: String, noReply: Bool,
                         body: [DBusValue]) -> Lookup {
        guard let slot = entries.firstIndex(where: {
            $0.matches(destination: destination, path: path, interface: interface, member: member, noReply: noReply)
        }) else { return .absent }
        if let call = entries[slot].call, Self.sameShape(call.body, body),
           let copy = completeCopy(in: slot, call: call, body: body) {
            return .complete(copy)
        }
        guard let copy = dbus_message_copy(entries[slot].header) else { return .outOfMemory }
        return .header(copy, slot: slot)
    }

    /// A new header template for these fields (checked by the caller: libdbus aborts on an
    /// invalid name), and a copy of it with its slot; nil when libdbus is out of memory.
    mutating func insert(destination: String?, path: ObjectPath, interface: String?, member: String,
                         noReply: Bool) -> (raw: OpaquePointer, slot: Int)? {
        guard let header = Self.newMethodCall(destination: destination, path: path, interface: interface, member: member)
        else { return nil }
        if noReply { dbus_message_set_no_reply(header, 1) }
        let entry = Entry(destination: destination, path: path, interface: interface, member: member, noReply: noReply,
                          header: header, call: nil)
        let slot: Int
        if entries.count < Self.capacity {
            slot = entries.count
            entries.append(entry)
        } else {
            slot = nextSlot
            Self.release(entries[slot])
            entries[slot] = entry
            nextSlot = (nextSlot + 1) % Self.capacity
        }
        guard let copy = dbus_message_copy(header) else { return nil }
        return (copy, slot)
    }

    /// Keeps a copy of `raw`, built from the header in `slot` with `body` appended, as the
    /// complete call for later calls with these arguments (replacing the slot's last one).
    mutating func keep(_ raw: OpaquePointer, of body: [DBusValue], in slot: Int) {
        guard entries.indices.contains(slot), Self.isSmall(body), !body.contains(where: DBusValue.containsFileDescriptor),
              let copy = dbus_message_copy(raw) else { return }
        if let old = entries[slot].call { dbus_message_unref(old.raw) }
        entries[slot].call = Call(body: body, raw: copy, fieldsLocated: false)
    }

    /// A copy of the slot's complete call with the bytes of `body`'s `ay` arguments, or nil
    /// when libdbus's message does not have the arrays where `body` has them.
    private mutating func completeCopy(in slot: Int, call: Call, body: [DBusValue]) -> OpaquePointer? {
        if !call.fieldsLocated {
            // Reading the body makes libdbus locate (and remember) every header field.
            var iter = DBusMessageIter()
            _ = dbus_message_iter_init(call.raw, &iter)
            entries[slot].call?.fieldsLocated = true
        }
        guard let copy = dbus_message_copy(call.raw) else { return nil }
        guard Self.overwriteBytes(of: body, in: copy) else {
            dbus_message_unref(copy)
            return nil
        }
        return copy
    }

    /// Whether `body` is `template` but for the bytes (not the lengths) of top-level `ay`
    /// arguments.
    static func sameShape(_ template: [DBusValue], _ body: [DBusValue]) -> Bool {
        guard template.count == body.count else { return false }
        for index in body.indices {
            if case .bytes(let old) = template[index], case .bytes(let new) = body[index] {
                guard old.count == new.count else { return false }
            } else if template[index] != body[index] {
                return false
            }
        }
        return true
    }

    /// Writes the bytes of `body`'s top-level `ay` arguments over those of the same arguments in
    /// `message`, a fresh copy no one else holds.
    ///
    /// libdbus hands out a read-only pointer to an `ay`'s bytes; writing through it is sound
    /// here because `dbus_message_copy` gave this message a body of its own, the message is not
    /// locked or queued yet, and the length stays the same, so the framing libdbus wrote stays
    /// true. Anything unexpected (another type, another length) returns false and the caller
    /// builds the message the slow way.
    static func overwriteBytes(of body: [DBusValue], in message: OpaquePointer) -> Bool {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return body.isEmpty }
        for (index, value) in body.enumerated() {
            if case .bytes(let data) = value {
                guard dbus_message_iter_get_arg_type(&iter) == DBUS_TYPE_ARRAY,
                      dbus_message_iter_get_element_type(&iter) == DBUS_TYPE_BYTE else { return false }
                var array = DBusMessageIter()
                dbus_message_iter_recurse(&iter, &array)
                var pointer: UnsafeRawPointer?
                var count: Int32 = 0
                if !data.isEmpty {
                    withUnsafeMutablePointer(to: &pointer) { out in dbus_message_iter_get_fixed_array(&array, out, &count) }
                }
                guard Int(count) == data.count else { return false }
                if let pointer, count > 0 {
                    data.withUnsafeBytes { source in
                        guard let base = source.baseAddress else { return }
                        UnsafeMutableRawPointer(mutating: pointer).copyMemory(from: base, byteCount: source.count)
                    }
                }
            }
            if index < body.count - 1 { _ = dbus_message_iter_next(&iter) }
        }
        return true
    }

    /// Whether `body` is small enough to keep (`largestKeptBody`), found without walking all of
    /// a large value.
    static func isSmall(_ body: [DBusValue]) -> Bool {
        var budget = largestKeptBody
        for value in body {
            guard fits(value, budget: &budget) else { return false }
        }
        return true
    }

    private static func fits(_ value: DBusValue, budget: inout Int) -> Bool {
        switch value {
        case .bytes(let data): budget -= data.count + 4
        case .string(let text): budget -= text.utf8.count + 5
        case .objectPath(let path): budget -= path.rawValue.utf8.count + 5
        case .signature(let signature): budget -= signature.rawValue.utf8.count + 2
        case .variant(let inner):
            budget -= 4
            return budget >= 0 && fits(inner, budget: &budget)
        case .array(_, let values), .structure(let values):
            budget -= 8
            for element in values {
                guard fits(element, budget: &budget) else { return false }
            }
        case .dictionary(_, _, let entries):
            budget -= 8
            for entry in entries {
                guard fits(entry.key, budget: &budget), fits(entry.value, budget: &budget) else { return false }
            }
        default: budget -= 8
        }
        return budget >= 0
    }

    /// A new method call with these header fields, built by libdbus.
    static func newMethodCall(destination: String?, path: ObjectPath, interface: String?, member: String) -> OpaquePointer? {
        // Through `withCString`: an optional string passed to C straight is copied into a new
        // array per argument, four allocations per call.
        withOptionalCString(destination) { destination in
            withOptionalCString(interface) { interface in
                path.rawValue.withCString { path in
                    member.withCString { member in dbus_message_new_method_call(destination, path, interface, member) }
                }
            }
        }
    }

    private static func withOptionalCString<Result>(_ text: String?, _ body: (UnsafePointer<CChar>?) -> Result) -> Result {
        guard let text else { return body(nil) }
        return text.withCString { body($0) }
    }

    private static func release(_ entry: Entry) {
        dbus_message_unref(entry.header)
        if let call = entry.call { dbus_message_unref(call.raw) }
    }

    deinit {
        for entry in entries { Self.release(entry) }
    }
}
