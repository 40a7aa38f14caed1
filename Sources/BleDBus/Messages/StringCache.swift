import Glibc

/// Recently decoded strings, reused when the same bytes arrive again.
///
/// A flood of BlueZ signals repeats the same sender, path, interface, member and property
/// names in every message; comparing the bytes with a string seen before costs a fraction of
/// building a new `String` (UTF-8 validation and, past 15 bytes, a heap allocation), and the
/// reused strings then compare equal by identity. Owned by one connection, used on its loop.
struct StringCache {
    /// How many strings are kept; a miss compares the length of each.
    static let capacity = 16
    /// Longer strings are not kept: they rarely repeat, and comparing them costs more.
    static let longestCached = 128

    private var slots: [String] = []
    private var lengths: [Int] = []
    private var nextSlot = 0

    init() {}

    /// The string of the NUL-terminated UTF-8 text at `pointer`.
    mutating func string(_ pointer: UnsafePointer<CChar>) -> String {
        let length = strlen(pointer)
        guard length <= Self.longestCached else { return String(cString: pointer) }
        for index in lengths.indices where lengths[index] == length {
            var candidate = slots[index]
            let equal = candidate.withUTF8 { stored in
                guard let base = stored.baseAddress else { return length == 0 }
                return memcmp(base, pointer, length) == 0
            }
            if equal { return candidate }
        }
        let created = String(cString: pointer)
        // A string that repaired invalid UTF-8 differs from its bytes: never match it again.
        guard created.utf8.count == length else { return created }
        if slots.count < Self.capacity {
            slots.append(created)
            lengths.append(length)
        } else {
            slots[nextSlot] = created
            lengths[nextSlot] = length
            nextSlot = (nextSlot + 1) % Self.capacity
        }
        return created
    }

    /// Like `string(_:)`, for libdbus's optional header fields.
    mutating func string(_ pointer: UnsafePointer<CChar>?) -> String? {
        guard let pointer else { return nil }
        return string(pointer)
    }
}
