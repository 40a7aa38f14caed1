/// A failure a subcommand reports: what happened and what to do, with its exit status.
struct CLIError: Error, Sendable {
    /// The message, which says what to do about it.
    let message: String
    /// The exit status it ends the process with.
    let exitCode: ExitCode

    init(_ message: String, _ exitCode: ExitCode = .failure) {
        self.message = message
        self.exitCode = exitCode
    }
}
