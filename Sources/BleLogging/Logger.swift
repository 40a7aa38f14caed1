/// A log, in the shape of swift-log's `Logger`: a value with a label, a level, metadata and a
/// pluggable handler, so that an app using swift-log bridges BleKit's logs to it in a few lines
/// (a `LogHandler` that forwards to a swift-log `Logger`, installed with `LoggingSystem.bootstrap`).
///
/// BleKit logs under the label `"BleKit"`; the level starts from `BLEKIT_LOG`.
public struct Logger: Sendable {
    /// How severe a message is, least severe first (swift-log's levels).
    public enum Level: String, Sendable, Comparable, CaseIterable, Codable {
        /// Everything, including every D-Bus message.
        case trace
        /// Every BlueZ call BleKit makes and its outcome.
        case debug
        /// State changes and connections.
        case info
        /// Unusual but expected conditions.
        case notice
        /// Conditions BleKit worked around.
        case warning
        /// Failures.
        case error
        /// Failures that stop BleKit from working at all.
        case critical

        private var severity: Int { Self.allCases.firstIndex(of: self) ?? 0 }

        /// Orders by severity.
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.severity < rhs.severity }
    }

    /// Key-value context attached to messages.
    public typealias Metadata = [String: MetadataValue]

    /// One metadata value.
    public enum MetadataValue: Sendable, Equatable, CustomStringConvertible, ExpressibleByStringLiteral,
                               ExpressibleByStringInterpolation, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
        /// Text.
        case string(String)
        /// Nested metadata.
        case dictionary(Metadata)
        /// A list.
        case array([MetadataValue])

        /// A string value.
        public init(stringLiteral value: String) { self = .string(value) }
        /// A list value.
        public init(arrayLiteral elements: MetadataValue...) { self = .array(elements) }
        /// A nested value.
        public init(dictionaryLiteral elements: (String, MetadataValue)...) {
            self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
        }

        /// The value as text: strings bare, lists in brackets, dictionaries in braces.
        public var description: String {
            switch self {
            case .string(let text): return text
            case .array(let values): return "[" + values.map(\.description).joined(separator: ", ") + "]"
            case .dictionary(let values): return "{" + values.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ") + "}"
            }
        }
    }

    /// A message; built from a string literal or interpolation, like swift-log's.
    public struct Message: Sendable, Equatable, CustomStringConvertible, ExpressibleByStringLiteral, ExpressibleByStringInterpolation {
        /// The text.
        public var description: String

        /// A message from a literal.
        public init(stringLiteral value: String) { description = value }
        /// A message from text.
        public init(_ text: String) { description = text }
    }

    /// What the log is of (`"BleKit"`).
    public let label: String
    /// Where messages go.
    public var handler: any LogHandler

    /// A logger whose handler comes from `LoggingSystem` (standard error unless bootstrapped).
    public init(label: String) {
        self.label = label
        handler = LoggingSystem.makeHandler(label)
    }

    /// A logger with an explicit handler.
    public init(label: String, handler: any LogHandler) {
        self.label = label
        self.handler = handler
    }

    /// The least severe level that is logged (the handler's).
    public var logLevel: Level {
        get { handler.logLevel }
        set { handler.logLevel = newValue }
    }

    /// The metadata attached to every message (the handler's).
    public subscript(metadataKey key: String) -> MetadataValue? {
        get { handler[metadataKey: key] }
        set { handler[metadataKey: key] = newValue }
    }

    /// Logs `message` at `level` when the level is enabled; the message and metadata are only
    /// built when it is.
    public func log(level: Level, _ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                    source: @autoclosure () -> String? = nil, file: String = #fileID, function: String = #function, line: UInt = #line) {
        guard level >= handler.logLevel else { return }
        handler.log(level: level, message: message(), metadata: metadata(), source: source() ?? label,
                    file: file, function: function, line: line)
    }

    /// Logs at `trace`.
    public func trace(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                      file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(level: .trace, message(), metadata: metadata(), file: file, function: function, line: line)
    }

    /// Logs at `debug`.
    public func debug(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                      file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(level: .debug, message(), metadata: metadata(), file: file, function: function, line: line)
    }

    /// Logs at `info`.
    public func info(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                     file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(level: .info, message(), metadata: metadata(), file: file, function: function, line: line)
    }

    /// Logs at `notice`.
    public func notice(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                       file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(level: .notice, message(), metadata: metadata(), file: file, function: function, line: line)
    }

    /// Logs at `warning`.
    public func warning(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                        file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(level: .warning, message(), metadata: metadata(), file: file, function: function, line: line)
    }

    /// Logs at `error`.
    public func error(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                      file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(level: .error, message(), metadata: metadata(), file: file, function: function, line: line)
    }

    /// Logs at `critical`.
    public func critical(_ message: @autoclosure () -> Message, metadata: @autoclosure () -> Metadata? = nil,
                         file: String = #fileID, function: String = #function, line: UInt = #line) {
        log(level: .critical, message(), metadata: metadata(), file: file, function: function, line: line)
    }
}
