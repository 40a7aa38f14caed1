/// Where a `Logger`'s messages go — swift-log's `LogHandler` requirements, so a handler that
/// forwards to swift-log is a few lines:
///
/// ```swift
/// struct SwiftLogBridge: BleLogging.LogHandler {
///     var target: Logging.Logger
///     var logLevel: BleLogging.Logger.Level = .warning
///     var metadata: BleLogging.Logger.Metadata = [:]
///     subscript(metadataKey key: String) -> BleLogging.Logger.MetadataValue? {
///         get { metadata[key] } set { metadata[key] = newValue }
///     }
///     func log(level: BleLogging.Logger.Level, message: BleLogging.Logger.Message, metadata: BleLogging.Logger.Metadata?,
///              source: String, file: String, function: String, line: UInt) {
///         target.log(level: Logging.Logger.Level(rawValue: level.rawValue) ?? .info, "\(message)",
///                    metadata: (metadata ?? [:]).mapValues { .string($0.description) }, source: source,
///                    file: file, function: function, line: line)
///     }
/// }
/// BleLogging.LoggingSystem.bootstrap { label in SwiftLogBridge(target: Logging.Logger(label: label)) }
/// ```
public protocol LogHandler: Sendable {
    /// Handles one message that passed `logLevel`.
    func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?,
             source: String, file: String, function: String, line: UInt)
    /// Metadata attached to every message.
    subscript(metadataKey key: String) -> Logger.MetadataValue? { get set }
    /// All attached metadata.
    var metadata: Logger.Metadata { get set }
    /// The least severe level handled.
    var logLevel: Logger.Level { get set }
}
