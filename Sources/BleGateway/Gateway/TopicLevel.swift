/// One level of an MQTT topic made from outside text (a gateway or fleet name, a device
/// address): checked before anything is published under it, because libmosquitto refuses a
/// topic with `+` or `#` (the message is lost), a `/` moves it to another topic, and a
/// megabyte name makes every message a megabyte.
enum TopicLevel {
    /// The longest level accepted, in UTF-8 bytes.
    static let maximumLength = 128

    /// Why `text` cannot be one topic level, or nil when it can.
    static func problem(_ text: String) -> String? {
        if text.isEmpty { return "is empty; a topic level needs at least one character" }
        if text.utf8.count > maximumLength { return "is \(text.utf8.count) bytes long; a topic level may have at most \(maximumLength)" }
        if let bad = text.unicodeScalars.first(where: { $0 == "/" || $0 == "+" || $0 == "#" || $0.value == 0 }) {
            return "contains '\(bad == "\u{0}" ? "NUL" : String(bad))', which MQTT reserves (/ separates levels, + and # are wildcards)"
        }
        return nil
    }
}
