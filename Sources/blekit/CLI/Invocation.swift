import Foundation

/// One run of a subcommand: its parsed command line and where its output goes.
struct Invocation: Sendable {
    /// The command's name, for messages (`blekit read: …`).
    let command: String
    /// The parsed command line.
    let arguments: ParsedArguments
    /// `--adapter`, `--bus`, `--json`.
    let global: GlobalOptions
    /// True when standard output is a terminal: live tables and spinners, else plain lines.
    let isTerminal: Bool

    /// The positional arguments.
    var positionals: [String] { arguments.positionals }

    /// Prints a line of output on standard output, at once (pipes see it before we exit).
    func out(_ text: String) {
        print(text)
        fflush(nil)
    }

    /// Prints one JSON object on a line.
    func json(_ object: [String: Any]) {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]),
              let text = String(data: data, encoding: .utf8) else {
            fail("could not encode the output as JSON")
            return
        }
        out(text)
    }

    /// Prints `blekit COMMAND: message` on standard error.
    func fail(_ message: String) {
        FileHandle.standardError.write(Data("blekit \(command): \(message)\n".utf8))
    }

    /// Reports a failure and returns its exit status.
    func fail(_ error: CLIError) -> ExitCode {
        fail(error.message)
        return error.exitCode
    }

    /// Refuses the command line: prints why and the command's usage line.
    func usage(_ message: String, help: String) -> ExitCode {
        fail("\(message)\n\(help.split(separator: "\n").first ?? "")\n(blekit \(command) --help for more)")
        return .usage
    }
}
