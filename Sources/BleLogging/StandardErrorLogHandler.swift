import Foundation

/// BleKit's default handler: `BleKit[level]: message key=value` lines on standard error.
public struct StandardErrorLogHandler: LogHandler {
    /// The logger's label.
    public let label: String
    /// The least severe level written; starts from `BLEKIT_LOG` (default `warning`).
    public var logLevel: Logger.Level
    /// Metadata written with every message.
    public var metadata: Logger.Metadata = [:]

    /// A handler for `label`.
    public init(label: String) {
        self.label = label
        logLevel = LoggingSystem.environmentLevel() ?? .warning
    }

    /// Metadata written with every message.
    public subscript(metadataKey key: String) -> Logger.MetadataValue? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    /// Writes one line.
    public func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?,
                    source: String, file: String, function: String, line: UInt) {
        let merged = self.metadata.merging(metadata ?? [:]) { _, new in new }
        let suffix = merged.isEmpty ? "" : " " + merged.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        FileHandle.standardError.write(Data("\(label)[\(level)]: \(message)\(suffix)\n".utf8))
    }
}
