import Foundation

/// A spinner with a countdown on standard error while a command waits, when standard error is
/// a terminal; silent otherwise, so that pipes and logs get only the result lines.
@MainActor
final class Spinner {
    private var task: Task<Void, Never>?
    private let enabled: Bool

    /// A spinner that draws only on a terminal.
    init(enabled: Bool = isatty(STDERR_FILENO) == 1) { self.enabled = enabled }

    /// Shows `label` with the seconds left until `deadline`, until `stop` or the next `start`.
    func start(_ label: String, deadline: Date?) {
        stop()
        guard enabled else { return }
        task = Task { @MainActor in
            let frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
            var frame = 0
            while !Task.isCancelled {
                var line = "\r\u{1B}[2K\(frames[frame % frames.count]) \(label)"
                if let deadline { line += String(format: " (%.0f s left)", max(0, deadline.timeIntervalSinceNow.rounded(.up))) }
                FileHandle.standardError.write(Data(line.utf8))
                frame += 1
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    /// Clears the spinner's line.
    func stop() {
        guard let task else { return }
        task.cancel()
        self.task = nil
        FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8))
    }
}
