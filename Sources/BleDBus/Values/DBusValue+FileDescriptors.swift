extension DBusValue {
    /// True when `value` holds a Unix file descriptor anywhere inside: such a message needs a
    /// connection that can pass descriptors.
    static func containsFileDescriptor(_ value: DBusValue) -> Bool {
        switch value {
        case .unixFD: return true
        case .variant(let inner): return containsFileDescriptor(inner)
        case .array(let element, let values):
            return element == .unixFD || element == .variant || !element.isBasic ? values.contains(where: containsFileDescriptor) : false
        case .structure(let fields): return fields.contains(where: containsFileDescriptor)
        case .dictionary(_, _, let entries):
            return entries.contains { containsFileDescriptor($0.key) || containsFileDescriptor($0.value) }
        default: return false
        }
    }
}
