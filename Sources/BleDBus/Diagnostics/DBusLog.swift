import Foundation

/// Diagnostics on standard error, for conditions that have no caller to report to.
/// Set `BLEKIT_DEBUG=1` to see debug lines too.
public enum DBusLog {
    private static let debugEnabled = ProcessInfo.processInfo.environment["BLEKIT_DEBUG"] == "1"

    /// Something went wrong where no caller could be told (e.g. a match rule was refused).
    public static func warning(_ text: @autoclosure () -> String) {
        FileHandle.standardError.write(Data("BleKit warning: \(text())\n".utf8))
    }

    /// Detail for people debugging BleKit itself.
    public static func debug(_ text: @autoclosure () -> String) {
        guard debugEnabled else { return }
        FileHandle.standardError.write(Data("BleKit: \(text())\n".utf8))
    }
}
