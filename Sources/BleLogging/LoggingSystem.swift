import Foundation

/// Chooses the handler new `Logger`s get, as swift-log's `LoggingSystem`: standard error by
/// default, at the level `BLEKIT_LOG` names.
public enum LoggingSystem {
    private static let lock = NSLock()
    nonisolated(unsafe) private static var factory: @Sendable (String) -> any LogHandler = { label in
        StandardErrorLogHandler(label: label)
    }

    /// Makes every `Logger` created from now on use `factory`'s handlers (BleKit's own logger
    /// picks it up on its next message).
    public static func bootstrap(_ factory: @escaping @Sendable (String) -> any LogHandler) {
        lock.lock()
        defer { lock.unlock() }
        self.factory = factory
        generation += 1
    }

    nonisolated(unsafe) private static var generation = 0

    /// Counts `bootstrap` calls, so long-lived loggers know to fetch a new handler.
    public static var bootstrapGeneration: Int {
        lock.lock()
        defer { lock.unlock() }
        return generation
    }

    static func makeHandler(_ label: String) -> any LogHandler {
        lock.lock()
        let make = factory
        lock.unlock()
        return make(label)
    }

    /// The level `BLEKIT_LOG` asks for; nil when unset. An unknown value is reported once on
    /// standard error (with the accepted ones) and gives nil, so logging stays at its default.
    public static func environmentLevel(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Logger.Level? {
        guard let text = environment["BLEKIT_LOG"], !text.isEmpty else { return nil }
        if let level = parseLevel(text) { return level }
        reportInvalid(text)
        return nil
    }

    /// `error`, `warning`/`warn`, `info`, `debug`, `trace` (and swift-log's `notice`, `critical`).
    public static func parseLevel(_ text: String) -> Logger.Level? {
        switch text.lowercased() {
        case "warn": return .warning
        default: return Logger.Level(rawValue: text.lowercased())
        }
    }

    nonisolated(unsafe) private static var reported = false

    private static func reportInvalid(_ text: String) {
        lock.lock()
        let first = !reported
        reported = true
        lock.unlock()
        guard first else { return }
        FileHandle.standardError.write(Data("BleKit: BLEKIT_LOG='\(text)' is not a log level; use error, warning, info, debug or trace. Logging at warning.\n".utf8))
    }
}
