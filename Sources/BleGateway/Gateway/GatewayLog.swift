import Foundation
import Synchronization

/// The gateway's log lines on standard error, `blekit gateway: …`; quiet unless `verbose`, except warnings.
public enum GatewayLog {
    private static let verboseFlag = Atomic<Bool>(false)

    /// Whether informational lines are written.
    public static var verbose: Bool {
        get { verboseFlag.load(ordering: .relaxed) }
        set { verboseFlag.store(newValue, ordering: .relaxed) }
    }

    static func info(_ text: @autoclosure () -> String) {
        guard verbose else { return }
        write("gateway: \(text())")
    }

    /// Said even without `verbose`: something a person running the gateway should know that is not wrong.
    static func notice(_ text: @autoclosure () -> String) {
        write("gateway: \(text())")
    }

    static func warning(_ text: @autoclosure () -> String) {
        write("gateway: warning: \(text())")
    }

    private static func write(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}
