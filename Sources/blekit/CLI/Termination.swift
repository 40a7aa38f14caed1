import Foundation

/// SIGINT and SIGTERM as events, so that long-running commands stop cleanly (notifications
/// unsubscribed, BleSim stopped, the terminal's cursor shown again).
enum Termination {
    /// Waits for SIGINT or SIGTERM.
    @MainActor
    static func wait() async {
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        let sources = observe { continuation.yield() }
        for await _ in stream { break }
        sources.forEach { $0.cancel() }
    }

    /// Calls `handler` on the main queue on each SIGINT or SIGTERM until the sources are cancelled.
    static func observe(_ handler: @escaping @Sendable () -> Void) -> [any DispatchSourceSignal] {
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        return [SIGINT, SIGTERM].map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
            source.setEventHandler(handler: handler)
            source.resume()
            return source
        }
    }
}
