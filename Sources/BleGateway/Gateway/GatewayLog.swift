import BleLogging
import Foundation
import Synchronization

/// The gateway's log lines (`gateway: …`), through BleLogging's `Logger` (label `"BleKit"`) as
/// BleCore's are, so `LoggingSystem.bootstrap` sends them elsewhere; informational lines only
/// when `verbose`, notices and warnings always.
public enum GatewayLog {
    private static let verboseFlag = Atomic<Bool>(false)

    /// Whether informational lines are written.
    public static var verbose: Bool {
        get { verboseFlag.load(ordering: .relaxed) }
        set { verboseFlag.store(newValue, ordering: .relaxed) }
    }

    static func info(_ text: @autoclosure () -> String) {
        guard verbose else { return }
        logger(atLeast: .info).info(Logger.Message("gateway: \(text())"))
    }

    /// Said even without `verbose`: something a person running the gateway should know that is not wrong.
    static func notice(_ text: @autoclosure () -> String) {
        logger(atLeast: .notice).notice(Logger.Message("gateway: \(text())"))
    }

    static func warning(_ text: @autoclosure () -> String) {
        logger(atLeast: .warning).warning(Logger.Message("gateway: \(text())"))
    }

    /// The logger, letting through at least `level` (the gateway's own choice, whatever
    /// `BLEKIT_LOG` says for the library).
    private static func logger(atLeast level: Logger.Level) -> Logger {
        var logger = Logger(label: "BleKit")
        if logger.logLevel > level { logger.logLevel = level }
        return logger
    }
}
