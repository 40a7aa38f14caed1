/// One `blekit` subcommand: a type in Commands/ plus one line in `CommandRegistry.commands`.
protocol BlekitCommand: Sendable {
    /// The word after `blekit`.
    static var name: String { get }
    /// The arguments after the name, for the usage line (`ADDRESS CHARACTERISTIC`).
    static var synopsis: String { get }
    /// One line for `blekit --help`.
    static var summary: String { get }
    /// The options this command accepts besides the global ones.
    static var options: [OptionSpec] { get }
    /// A paragraph or two for `blekit NAME --help`: what it prints, examples.
    static var details: String { get }
    /// Runs with the parsed command line; returns the process's exit status.
    @MainActor static func run(_ invocation: Invocation) async -> ExitCode
}

extension BlekitCommand {
    static var details: String { "" }

    /// `blekit NAME --help`.
    static var help: String {
        var text = "usage: blekit \(name)\(synopsis.isEmpty ? "" : " " + synopsis) [options]\n\n\(summary)\n"
        if !details.isEmpty { text += "\n\(details)\n" }
        let all = options + GlobalOptions.specs
        text += "\noptions:\n" + all.map { $0.helpLine }.joined(separator: "\n")
        return text
    }
}
