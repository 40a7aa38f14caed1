/// One `--option` a command accepts.
package struct OptionSpec: Sendable {
    /// The spelling, with its dashes (`--timeout`).
    package let name: String
    /// The value's placeholder (`SECONDS`), or nil for a flag.
    package let value: String?
    /// What it does, for `--help`.
    package let help: String
    /// Other spellings (`-h`).
    package var aliases: [String] = []

    /// A flag that takes no value.
    package static func flag(_ name: String, _ help: String, aliases: [String] = []) -> OptionSpec {
        OptionSpec(name: name, value: nil, help: help, aliases: aliases)
    }

    /// An option followed by a value.
    package static func value(_ name: String, _ placeholder: String, _ help: String) -> OptionSpec {
        OptionSpec(name: name, value: placeholder, help: help)
    }

    /// The line `--help` shows for it.
    package var helpLine: String {
        let spelled = ([name] + aliases).joined(separator: ", ") + (value.map { " " + $0 } ?? "")
        return "  " + spelled.padding(toLength: max(28, spelled.count + 2), withPad: " ", startingAt: 0) + help
    }
}
