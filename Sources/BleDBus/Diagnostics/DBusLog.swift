import BleLogging
import Foundation

/// Diagnostics for conditions that have no caller to report to, through BleLogging's
/// `Logger` (label `"BleKit"`), so `LoggingSystem.bootstrap` sends them where BleCore's go.
/// Debug lines show at `BLEKIT_LOG=debug` (or the older `BLEKIT_DEBUG=1`).
public enum DBusLog {
    private static let debugEnabled = ProcessInfo.processInfo.environment["BLEKIT_DEBUG"] == "1"

    /// Something went wrong where no caller could be told (e.g. a match rule was refused).
    public static func warning(_ text: @autoclosure () -> String) {
        Logger(label: "BleKit").warning(Logger.Message(text()))
    }

    /// Detail for people debugging BleKit itself.
    public static func debug(_ text: @autoclosure () -> String) {
        var logger = Logger(label: "BleKit")
        if debugEnabled, logger.logLevel > .debug { logger.logLevel = .debug }
        logger.debug(Logger.Message(text()))
    }
}
