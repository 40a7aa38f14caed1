import Glibc
/// A validated D-Bus object path such as `/org/bluez/hci0`.
///
/// Construction validates the text, so a value of this type can always be sent; paths that
/// arrive from a peer were already validated by libdbus.
public struct ObjectPath: Hashable, Comparable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The path text.
    public let rawValue: String

    /// The root path `/`.
    public static let root = ObjectPath(unchecked: "/")

    /// Validates `rawValue`: it starts with `/`, elements are `[A-Za-z0-9_]+`, no trailing `/`.
    public init(_ rawValue: String) throws(DBusError) {
        guard ObjectPath.isValid(rawValue) else {
            throw .invalidArgument("'\(rawValue)' is not a valid D-Bus object path: use '/' and elements of A-Z, a-z, 0-9 and '_'.")
        }
        self.rawValue = rawValue
    }

    /// For literals in code. An invalid literal is a programming error in this repository's own
    /// code and traps; paths from outside go through `init(_:)`.
    public init(stringLiteral value: String) {
        precondition(ObjectPath.isValid(value), "invalid object path literal '\(value)'")
        self.rawValue = value
    }

    init(unchecked rawValue: String) {
        self.rawValue = rawValue
    }

    /// The path text.
    public var description: String { rawValue }

    /// Orders paths by their text, which puts parents before their children.
    public static func < (lhs: ObjectPath, rhs: ObjectPath) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The path of a child element, e.g. `/org/bluez` + `hci0`.
    public func appending(_ element: String) throws(DBusError) -> ObjectPath {
        try ObjectPath(rawValue == "/" ? "/" + element : rawValue + "/" + element)
    }

    /// True when `self` equals `ancestor` or lies below it.
    public func isDescendant(of ancestor: ObjectPath, orEqual: Bool = true) -> Bool {
        if rawValue == ancestor.rawValue { return orEqual }
        if ancestor.rawValue == "/" { return true }
        return rawValue.hasPrefix(ancestor.rawValue) &&
            rawValue.utf8.dropFirst(ancestor.rawValue.utf8.count).first == UInt8(ascii: "/")
    }

    /// True when `parent` is this path's parent: the same answer as `self.parent == parent`,
    /// read off the bytes without building the parent's string (asked for every device signal).
    public func isChild(of parent: ObjectPath) -> Bool {
        // On the bytes themselves (memcmp, memchr): the generic UTF-8 view algorithms cost about
        // 1,400 instructions per call, paid by every device signal while scanning.
        let contiguous = rawValue.utf8.withContiguousStorageIfAvailable { bytes in
            parent.rawValue.utf8.withContiguousStorageIfAvailable { prefix in
                Self.isChild(bytes, of: prefix, parentIsRoot: prefix.count == 1)
            }
        }
        if let answer = contiguous ?? nil { return answer }
        let bytes = rawValue.utf8
        let prefix = parent.rawValue.utf8
        guard rawValue != "/" else { return false }
        let start = parent.rawValue == "/" ? 0 : prefix.count
        guard bytes.count > start + 1, bytes.starts(with: prefix) else { return false }
        let rest = bytes.dropFirst(start)
        return rest.first == UInt8(ascii: "/") && !rest.dropFirst().contains(UInt8(ascii: "/"))
    }

    private static func isChild(_ bytes: UnsafeBufferPointer<UInt8>, of prefix: UnsafeBufferPointer<UInt8>, parentIsRoot: Bool) -> Bool {
        let slash = UInt8(ascii: "/")
        let start = parentIsRoot ? 0 : prefix.count
        guard bytes.count > start + 1, bytes[start] == slash, let path = bytes.baseAddress else { return false }
        if !parentIsRoot {
            guard let parent = prefix.baseAddress, memcmp(path, parent, start) == 0 else { return false }
        }
        return memchr(path + start + 1, Int32(slash), bytes.count - start - 1) == nil
    }

    /// The last element of the path (empty for `/`).
    public var lastElement: Substring {
        guard let slash = rawValue.lastIndex(of: "/") else { return Substring(rawValue) }
        return rawValue[rawValue.index(after: slash)...]
    }

    /// The number of elements (`/` has 0, `/org/bluez/hci0` has 3).
    public var depth: Int {
        rawValue == "/" ? 0 : rawValue.utf8.reduce(0) { $0 + ($1 == UInt8(ascii: "/") ? 1 : 0) }
    }

    /// The ancestor (or `self`) made of the first `depth` elements, nil when the path is
    /// shallower. One pass over the bytes, no validation: a prefix of a valid path is valid.
    /// BlueZ routing uses it to find a GATT object's device (`/org/bluez/hci0/dev_…` is depth 4)
    /// without walking parents one string at a time.
    public func ancestor(depth wanted: Int) -> ObjectPath? {
        guard wanted > 0 else { return .root }
        var seen = 0
        let bytes = rawValue.utf8
        var index = bytes.startIndex
        while index != bytes.endIndex {
            if bytes[index] == UInt8(ascii: "/") {
                if seen == wanted { return ObjectPath(unchecked: String(rawValue[..<index])) }
                seen += 1
            }
            index = bytes.index(after: index)
        }
        return seen == wanted ? self : nil
    }

    /// The parent path, or nil for `/`.
    public var parent: ObjectPath? {
        guard rawValue != "/", let slash = rawValue.lastIndex(of: "/") else { return nil }
        if slash == rawValue.startIndex { return .root }
        return ObjectPath(unchecked: String(rawValue[..<slash]))
    }

    /// Checks the D-Bus object path grammar.
    public static func isValid(_ text: String) -> Bool {
        let bytes = text.utf8
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        var previousWasSlash = true
        for byte in bytes.dropFirst() {
            if byte == UInt8(ascii: "/") {
                if previousWasSlash { return false }
                previousWasSlash = true
            } else if DBusNames.isElementCharacter(byte) {
                previousWasSlash = false
            } else {
                return false
            }
        }
        return !previousWasSlash
    }
}

/// Validation of bus, interface, member and error names, so that nothing invalid ever reaches
/// libdbus (whose own checks abort the process).
public enum DBusNames {
    static func isElementCharacter(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")) ||
            (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) ||
            (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) ||
            byte == UInt8(ascii: "_")
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// An interface or error name: two or more dot-separated elements, none starting with a digit.
    public static func isValidInterface(_ name: String) -> Bool {
        // The UTF-8 view, not an array of it: these checks run on every message sent.
        let bytes = name.utf8
        guard !bytes.isEmpty, bytes.count <= 255 else { return false }
        var elements = 0
        var elementLength = 0
        for byte in bytes {
            if byte == UInt8(ascii: ".") {
                if elementLength == 0 { return false }
                elements += 1
                elementLength = 0
            } else {
                guard isElementCharacter(byte), !(elementLength == 0 && isDigit(byte)) else { return false }
                elementLength += 1
            }
        }
        guard elementLength > 0 else { return false }
        return elements + 1 >= 2
    }

    /// An error name follows the interface name grammar.
    public static func isValidErrorName(_ name: String) -> Bool { isValidInterface(name) }

    /// A member (method or signal) name: one element, not starting with a digit.
    public static func isValidMember(_ name: String) -> Bool {
        let bytes = name.utf8
        guard let first = bytes.first, bytes.count <= 255, !isDigit(first) else { return false }
        return bytes.allSatisfy(isElementCharacter)
    }

    /// A unique (`:1.42`) or well-known (`org.bluez`) bus name.
    public static func isValidBusName(_ name: String) -> Bool {
        let bytes = name.utf8
        guard let first = bytes.first, bytes.count <= 255 else { return false }
        let unique = first == UInt8(ascii: ":")
        var elements = 0
        var elementLength = 0
        for byte in bytes.dropFirst(unique ? 1 : 0) {
            if byte == UInt8(ascii: ".") {
                if elementLength == 0 { return false }
                elements += 1
                elementLength = 0
            } else {
                let allowed = isElementCharacter(byte) || byte == UInt8(ascii: "-")
                guard allowed, unique || !(elementLength == 0 && isDigit(byte)) else { return false }
                elementLength += 1
            }
        }
        guard elementLength > 0 else { return false }
        return elements + 1 >= 2
    }
}
