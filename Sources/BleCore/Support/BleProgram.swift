import Dispatch
import Foundation

/// The entry point of a command-line BLE program.
///
/// On iOS the main run loop always runs, so callbacks on the main queue just arrive. A Linux
/// `main.swift` that starts a scan and falls off its end exits before anything is heard, and
/// one that waits on a semaphore on the main thread blocks the queue its own `queue: .main`
/// callbacks need. `BleProgram.run` does what the iOS app's run loop did: it runs `body` on the
/// main actor, then serves the main queue until the program calls `finish(status)`, and exits
/// with that status (or, after `timeout`, with status 2 and a message saying so).
///
/// ```swift
/// BleProgram.run(timeout: .seconds(30)) { finish in
///     app.start(finish: finish)   // a @MainActor delegate with `queue: .main`
/// }
/// ```
public enum BleProgram {
    /// The status `run` exits with when `timeout` passes before `finish` was called.
    public static let timeoutStatus: Int32 = 2

    /// Runs `body` on the main actor and serves the main queue until `finish` is called; never returns.
    public static func run(timeout: Duration? = nil,
                           _ body: @escaping @MainActor @Sendable (_ finish: @escaping @Sendable (Int32) -> Void) -> Void) -> Never {
        let finish: @Sendable (Int32) -> Void = { status in
            // On the main queue, after whatever the program printed there.
            DispatchQueue.main.async {
                fflush(nil)
                exit(status)
            }
        }
        if let timeout {
            let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
            DispatchQueue.main.asyncAfter(deadline: .now() + seconds) {
                fflush(nil)
                BleLog.error("BleProgram: not finished within \(timeout); exiting with status \(timeoutStatus)")
                exit(timeoutStatus)
            }
        }
        DispatchQueue.main.async { MainActor.assumeIsolated { body(finish) } }
        dispatchMain()
    }
}
