import BleDBus
import BleLogging
import Foundation

/// BleCore's log, on standard error, with the level from `BLEKIT_LOG`:
/// `error`, `warning` (default), `info`, `debug`, or `trace` (also every D-Bus message sent and
/// received, through `Connection.tracer`) — the first thing to reach for on a misbehaving device.
/// Messages go through `logger` (BleLogging's swift-log-shaped `Logger`), so
/// `LoggingSystem.bootstrap` sends them elsewhere, such as into swift-log.
public enum BleLog {
    /// How much to log.
    public enum Level: Int, Sendable, Comparable {
        /// Failures only.
        case error = 0
        /// Also conditions BleKit worked around.
        case warning = 1
        /// Also state changes and connections.
        case info = 2
        /// Also every BlueZ call BleKit makes and its outcome.
        case debug = 3
        /// Also every D-Bus message.
        case trace = 4

        /// Orders by verbosity.
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rawValue < rhs.rawValue }

        /// The swift-log-shaped level this one logs at.
        public var loggerLevel: Logger.Level {
            switch self {
            case .error: return .error
            case .warning: return .warning
            case .info: return .info
            case .debug: return .debug
            case .trace: return .trace
            }
        }

        /// The nearest of BleKit's levels (notice counts as info, critical as error).
        public init(loggerLevel: Logger.Level) {
            switch loggerLevel {
            case .trace: self = .trace
            case .debug: self = .debug
            case .info, .notice: self = .info
            case .warning: self = .warning
            case .error, .critical: self = .error
            }
        }

        init?(name: String) {
            switch name.lowercased() {
            case "error": self = .error
            case "warning", "warn": self = .warning
            case "info": self = .info
            case "debug": self = .debug
            case "trace": self = .trace
            default: return nil
            }
        }
    }

    private static let storage = Locked<Level>(LoggingSystem.environmentLevel().map(Level.init(loggerLevel:)) ?? .warning)
    private static let current = Locked<(generation: Int, logger: Logger)?>(nil)

    /// BleKit's logger (label `"BleKit"`), made by `LoggingSystem` (again after each
    /// `bootstrap`); `level` decides what reaches it.
    public static var logger: Logger {
        let generation = LoggingSystem.bootstrapGeneration
        if let made = current.value, made.generation == generation { return made.logger }
        var logger = Logger(label: "BleKit")
        logger.logLevel = .trace
        current.value = (generation, logger)
        return logger
    }

    /// The current level; starts from `BLEKIT_LOG`, may be changed at run time.
    public static var level: Level {
        get { storage.value }
        set { storage.value = newValue }
    }

    package static func log(_ level: Level, _ text: @autoclosure () -> String) {
        guard level <= self.level else { return }
        logger.log(level: level.loggerLevel, Logger.Message(text()))
    }

    static func error(_ text: @autoclosure () -> String) { log(.error, text()) }
    static func warning(_ text: @autoclosure () -> String) { log(.warning, text()) }
    static func info(_ text: @autoclosure () -> String) { log(.info, text()) }
    static func debug(_ text: @autoclosure () -> String) { log(.debug, text()) }
}
