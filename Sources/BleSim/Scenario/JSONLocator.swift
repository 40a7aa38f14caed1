import Foundation

/// Finds the line of a value in JSON text by its coding path, so that a scenario error can say
/// where the bad field is (`line 12, peripherals[1].address`). JSONDecoder reports the path but
/// not the position of type errors.
struct JSONLocator {
    private let bytes: [UInt8]
    private var index = 0
    private var line = 1
    /// Nesting kept bounded: deeper text is reported at the line reached.
    private var depth = 0

    /// The 1-based line where the value at `path` starts (or the deepest value of the path that
    /// exists); nil when the text is not JSON this far.
    static func line(of path: [CodingKey], in data: Data) -> Int? {
        var locator = JSONLocator(bytes: [UInt8](data))
        return locator.locate(path[...])
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private mutating func locate(_ path: ArraySlice<CodingKey>) -> Int? {
        skipWhitespace()
        guard index < bytes.count else { return nil }
        guard let key = path.first else { return line }
        let here = line
        switch bytes[index] {
        case UInt8(ascii: "{"):
            index += 1
            while true {
                skipWhitespace()
                guard index < bytes.count else { return here }
                if bytes[index] == UInt8(ascii: "}") { return here }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                guard let name = readString() else { return here }
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return here }
                index += 1
                if key.intValue == nil, name == key.stringValue { return locate(path.dropFirst()) ?? here }
                guard skipValue() else { return here }
            }
        case UInt8(ascii: "["):
            index += 1
            var element = 0
            while true {
                skipWhitespace()
                guard index < bytes.count else { return here }
                if bytes[index] == UInt8(ascii: "]") { return here }
                if bytes[index] == UInt8(ascii: ",") { index += 1; element += 1; continue }
                if key.intValue == element { return locate(path.dropFirst()) ?? here }
                guard skipValue() else { return here }
            }
        default:
            return here
        }
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\n"): line += 1; index += 1
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r"): index += 1
            default: return
            }
        }
    }

    private mutating func readString() -> String? {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        index += 1
        var raw: [UInt8] = []
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: "\\"), index < bytes.count {
                raw.append(bytes[index])
                index += 1
                continue
            }
            if byte == UInt8(ascii: "\"") { return String(decoding: raw, as: UTF8.self) }
            if byte == UInt8(ascii: "\n") { line += 1 }
            raw.append(byte)
        }
        return nil
    }

    /// Skips one value of any kind; false at malformed text.
    private mutating func skipValue() -> Bool {
        skipWhitespace()
        guard index < bytes.count else { return false }
        switch bytes[index] {
        case UInt8(ascii: "\""): return readString() != nil
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var nesting = 0
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    guard readString() != nil else { return false }
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): nesting += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    nesting -= 1
                    if nesting == 0 { index += 1; return true }
                case UInt8(ascii: "\n"): line += 1
                default: break
                }
                index += 1
            }
            return false
        default:
            while index < bytes.count, !",}] \t\r\n".utf8.contains(bytes[index]) { index += 1 }
            return true
        }
    }
}
