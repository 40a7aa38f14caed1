import BleDBus
import Foundation

/// BleCore's log, on standard error, with the level from `BLEKIT_LOG`:
/// `error`, `warning` (default), `info`, `debug`, or `trace` (also every D-Bus message sent and
/// received, through `Connection.tracer`) — the first thing to reach for on a misbehaving device.
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

    private static let storage = Locked<Level>(Level(name: ProcessInfo.processInfo.environment["BLEKIT_LOG"] ?? "") ?? .warning)

    /// The current level; starts from `BLEKIT_LOG`, may be changed at run time.
    public static var level: Level {
        get { storage.value }
        set { storage.value = newValue }
    }

    package static func log(_ level: Level, _ text: @autoclosure () -> String) {
        guard level <= self.level else { return }
        FileHandle.standardError.write(Data("BleKit[\(level)]: \(text())\n".utf8))
    }

    static func error(_ text: @autoclosure () -> String) { log(.error, text()) }
    static func warning(_ text: @autoclosure () -> String) { log(.warning, text()) }
    static func info(_ text: @autoclosure () -> String) { log(.info, text()) }
    static func debug(_ text: @autoclosure () -> String) { log(.debug, text()) }
}
