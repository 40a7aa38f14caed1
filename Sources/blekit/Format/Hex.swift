import Foundation

/// Bytes as hex for output, and hex from a command line.
enum Hex {
    /// `"01 ff 3c"`.
    static func spaced(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined(separator: " ") }

    /// `"01ff3c"`.
    static func compact(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

    /// Parses `01ff`, `01 ff`, `0x01ff`, `01:ff`; nil for anything else (odd length, non-hex).
    static func parse(_ text: String) -> Data? {
        var digits = text.lowercased().filter { $0 != " " && $0 != ":" && $0 != "-" }
        if digits.hasPrefix("0x") { digits.removeFirst(2) }
        guard !digits.isEmpty, digits.count % 2 == 0, digits.allSatisfy(\.isHexDigit) else { return nil }
        var bytes = Data()
        var index = digits.startIndex
        while index < digits.endIndex {
            let next = digits.index(index, offsetBy: 2)
            guard let byte = UInt8(digits[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        return bytes
    }

    /// The bytes as text when they are printable UTF-8, for showing beside the hex.
    static func printable(_ data: Data) -> String? {
        guard !data.isEmpty, let text = String(data: data, encoding: .utf8),
              text.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7f }) else { return nil }
        return text
    }
}
