import CDBus
import Foundation

/// A D-Bus message decoded once into Swift values: header fields and body.
///
/// Received signals, method calls and replies reach BleKit code in this form; raw libdbus
/// messages never leave `BleDBus`.
public struct DBusMessage: Sendable, CustomStringConvertible {
    /// The four D-Bus message kinds.
    public enum Kind: Sendable, Equatable {
        /// A method call.
        case methodCall
        /// A successful reply.
        case methodReturn
        /// An error reply.
        case error
        /// A signal.
        case signal
    }

    /// Call, reply, error or signal: which of the header fields below are meaningful.
    public var kind: Kind
    /// The serial the sender gave the message (0 until sent).
    public var serial: UInt32
    /// For replies: the serial of the call answered.
    public var replySerial: UInt32
    /// The unique name of the sender, when it came through a bus.
    public var sender: String?
    /// The addressee.
    public var destination: String?
    /// The object path (calls and signals).
    public var path: ObjectPath?
    /// The interface (calls may omit it).
    public var interface: String?
    /// The method or signal name.
    public var member: String?
    /// For error replies: the error name.
    public var errorName: String?
    /// The body's signature.
    public var signature: String {
        get { storedSignature ?? body.map(MessageEncoder.signature(of:)).joined() }
        set { storedSignature = newValue }
    }
    /// The signature as received or set; nil for a message built here, whose signature follows
    /// its body (computed when asked: sending never needs the text).
    private var storedSignature: String?
    /// The arguments, in order; `signature` is derived from them unless the message carried one.
    public var body: [DBusValue]
    /// For calls: the caller does not want a reply.
    public var noReplyExpected: Bool

    /// A method call to send.
    public static func methodCall(destination: String?, path: ObjectPath, interface: String?, member: String,
                                  body: [DBusValue] = []) -> DBusMessage {
        DBusMessage(kind: .methodCall, serial: 0, replySerial: 0, sender: nil, destination: destination, path: path,
                    interface: interface, member: member, errorName: nil,
                    signature: nil, body: body, noReplyExpected: false)
    }

    /// A signal to emit.
    public static func signal(path: ObjectPath, interface: String, member: String, body: [DBusValue] = [],
                              destination: String? = nil) -> DBusMessage {
        DBusMessage(kind: .signal, serial: 0, replySerial: 0, sender: nil, destination: destination, path: path,
                    interface: interface, member: member, errorName: nil,
                    signature: nil, body: body, noReplyExpected: true)
    }

    /// Parses the D-Bus wire format (as `dbus_message_marshal` writes it).
    ///
    /// Truncated or malformed bytes throw `DBusError.malformedMessage` with libdbus's reason.
    public init(wireBytes: Data) throws(DBusError) {
        // libdbus reports an incomplete buffer as "Not enough memory"; say what it really is.
        let needed: Int32 = wireBytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
            return dbus_message_demarshal_bytes_needed(base.assumingMemoryBound(to: CChar.self), Int32(clamping: buffer.count))
        }
        if needed == 0 || Int(needed) > wireBytes.count {
            let wanted = needed == 0 ? "at least 16" : "\(needed)"
            throw .malformedMessage("truncated: \(wireBytes.count) bytes of a message that needs \(wanted)")
        }
        let error = DBusErrorBox()
        let parsed: OpaquePointer? = wireBytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress, buffer.count > 0 else { return nil }
            return dbus_message_demarshal(base.assumingMemoryBound(to: CChar.self), Int32(buffer.count), &error.raw)
        }
        guard let parsed else {
            throw .malformedMessage(error.isSet ? error.message : "empty or truncated message")
        }
        defer { dbus_message_unref(parsed) }
        self = try DBusMessage(decoding: parsed)
    }

    /// The D-Bus wire format of this message.
    public func wireBytes() throws(DBusError) -> Data {
        let raw = try makeRaw()
        defer { dbus_message_unref(raw) }
        if serial != 0 { dbus_message_set_serial(raw, serial) }
        var buffer: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        guard dbus_message_marshal(raw, &buffer, &length) != 0, let buffer else { throw .outOfMemory }
        defer { dbus_free(buffer) }
        return Data(bytes: buffer, count: Int(length))
    }

    /// Decodes a libdbus message on its own (parsed wire bytes).
    init(decoding raw: OpaquePointer) throws(DBusError) {
        var strings = StringCache()
        try self.init(decoding: raw, strings: &strings)
    }

    /// Decodes a libdbus message; used for every received message. `strings` carries the
    /// header and body strings of earlier messages on the connection, which repeat.
    init(decoding raw: OpaquePointer, strings: inout StringCache) throws(DBusError) {
        switch dbus_message_get_type(raw) {
        case Int32(DBUS_MESSAGE_TYPE_METHOD_CALL): kind = .methodCall
        case Int32(DBUS_MESSAGE_TYPE_METHOD_RETURN): kind = .methodReturn
        case Int32(DBUS_MESSAGE_TYPE_ERROR): kind = .error
        case Int32(DBUS_MESSAGE_TYPE_SIGNAL): kind = .signal
        default: throw .malformedMessage("unknown message type \(dbus_message_get_type(raw))")
        }
        serial = dbus_message_get_serial(raw)
        replySerial = dbus_message_get_reply_serial(raw)
        // libdbus validated every header field already (names, path, signature).
        sender = strings.string(dbus_message_get_sender(raw))
        destination = strings.string(dbus_message_get_destination(raw))
        path = strings.string(dbus_message_get_path(raw)).map { ObjectPath(unchecked: $0) }
        interface = strings.string(dbus_message_get_interface(raw))
        member = strings.string(dbus_message_get_member(raw))
        errorName = strings.string(dbus_message_get_error_name(raw))
        storedSignature = strings.string(dbus_message_get_signature(raw)) ?? ""
        noReplyExpected = dbus_message_get_no_reply(raw) != 0
        body = try MessageDecoder.decodeBody(of: raw, strings: &strings)
    }

    init(kind: Kind, serial: UInt32, replySerial: UInt32, sender: String?, destination: String?, path: ObjectPath?,
         interface: String?, member: String?, errorName: String?, signature: String?, body: [DBusValue],
         noReplyExpected: Bool) {
        self.kind = kind
        self.serial = serial
        self.replySerial = replySerial
        self.sender = sender
        self.destination = destination
        self.path = path
        self.interface = interface
        self.member = member
        self.errorName = errorName
        self.storedSignature = signature
        self.body = body
        self.noReplyExpected = noReplyExpected
    }

    /// Builds the libdbus message; the caller owns the returned reference.
    ///
    /// Every header field is validated first: libdbus aborts on invalid names.
    func makeRaw() throws(DBusError) -> OpaquePointer {
        var names = ValidatedNames()
        return try makeRaw(names: &names)
    }

    /// Builds the libdbus message, skipping the checks of names in `names` (and adding those
    /// that pass).
    func makeRaw(names: inout ValidatedNames) throws(DBusError) -> OpaquePointer {
        try makeRaw(names: &names, methodCall: MessageTemplates.newMethodCall)
    }

    /// As `makeRaw(names:)`, a method call copied from `templates` (see `MessageTemplates`):
    /// whole when an earlier call had these arguments, else its header, and the call built is
    /// kept for the next.
    func makeRaw(names: inout ValidatedNames, templates: inout MessageTemplates) throws(DBusError) -> OpaquePointer {
        guard kind == .methodCall, let path, let member else { return try makeRaw(names: &names) }
        // A template's names were checked when it was built, and a lookup matches them exactly.
        let noReply = noReplyExpected
        let lookup = templates.lookUp(destination: destination, path: path, interface: interface, member: member,
                                      noReply: noReply, body: body)
        var slot: Int?
        let raw: OpaquePointer
        switch lookup {
        case .complete(let complete): return complete
        case .outOfMemory: throw .outOfMemory
        case .header(let header, let headerSlot):
            slot = headerSlot
            var handedOver = false
            do {
                raw = try makeRaw(names: &names) { _, _, _, _ in
                    handedOver = true
                    return header
                }
            } catch {
                if !handedOver { dbus_message_unref(header) }
                throw error
            }
        case .absent:
            raw = try makeRaw(names: &names) { destination, path, interface, member in
                guard let (header, newSlot) = templates.insert(destination: destination, path: path, interface: interface,
                                                               member: member, noReply: noReply) else { return nil }
                slot = newSlot
                return header
            }
        }
        if let slot { templates.keep(raw, of: body, in: slot) }
        return raw
    }

    private func makeRaw(names: inout ValidatedNames,
                         methodCall: (String?, ObjectPath, String?, String) -> OpaquePointer?) throws(DBusError) -> OpaquePointer {
        if let destination, !names.isValid(destination, as: .busName) {
            throw .invalidArgument("'\(destination)' is not a valid bus name")
        }
        if let interface, !names.isValid(interface, as: .interface) {
            throw .invalidArgument("'\(interface)' is not a valid interface name")
        }
        if let member, !names.isValid(member, as: .member) {
            throw .invalidArgument("'\(member)' is not a valid member name")
        }
        let raw: OpaquePointer?
        switch kind {
        case .methodCall:
            guard let path, let member else { throw .invalidArgument("a method call needs a path and a member") }
            raw = methodCall(destination, path, interface, member)
        case .signal:
            guard let path, let interface, let member else {
                throw .invalidArgument("a signal needs a path, an interface and a member")
            }
            raw = path.rawValue.withCString { path in
                interface.withCString { interface in member.withCString { member in dbus_message_new_signal(path, interface, member) } }
            }
        case .methodReturn:
            raw = dbus_message_new(Int32(DBUS_MESSAGE_TYPE_METHOD_RETURN))
            if let raw { dbus_message_set_reply_serial(raw, replySerial) }
        case .error:
            let name = errorName ?? "org.freedesktop.DBus.Error.Failed"
            guard names.isValid(name, as: .errorName) else { throw .invalidArgument("'\(name)' is not a valid error name") }
            raw = dbus_message_new(Int32(DBUS_MESSAGE_TYPE_ERROR))
            if let raw {
                dbus_message_set_error_name(raw, name)
                dbus_message_set_reply_serial(raw, replySerial)
            }
        }
        guard let raw else { throw .outOfMemory }
        if let destination, kind != .methodCall { dbus_message_set_destination(raw, destination) }
        if noReplyExpected && kind == .methodCall { dbus_message_set_no_reply(raw, 1) }
        do {
            try MessageEncoder.append(body, to: raw)
        } catch {
            dbus_message_unref(raw)
            throw error
        }
        return raw
    }

    /// `signal /path iface.Member (args)` style rendering for logs and traces.
    public var description: String {
        let name = [interface, member].compactMap { $0 }.joined(separator: ".")
        let args = body.map(\.description).joined(separator: ", ")
        switch kind {
        case .methodCall: return "call \(path?.rawValue ?? "?") \(name)(\(args))"
        case .methodReturn: return "return #\(replySerial) (\(args))"
        case .error: return "error #\(replySerial) \(errorName ?? "?") (\(args))"
        case .signal: return "signal \(path?.rawValue ?? "?") \(name)(\(args))"
        }
    }

    /// For error replies: the error as `DBusError.remote`, with the first string argument as message.
    public var remoteError: DBusError? {
        guard kind == .error else { return nil }
        var message = ""
        if case .string(let text)? = body.first { message = text }
        return .remote(name: errorName ?? "org.freedesktop.DBus.Error.Failed", message: message)
    }
}

/// Owns a libdbus `DBusError` struct and frees it.
final class DBusErrorBox {
    var raw = CDBus.DBusError()

    init() { dbus_error_init(&raw) }

    var isSet: Bool { dbus_error_is_set(&raw) != 0 }

    var name: String { raw.name.map { String(cString: $0) } ?? "" }
    var message: String { raw.message.map { String(cString: $0) } ?? "" }

    deinit { dbus_error_free(&raw) }
}
