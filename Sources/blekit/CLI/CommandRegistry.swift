import BleCore
import Foundation

/// Every `blekit` subcommand. A new one is a file in Commands/ and one line here.
enum CommandRegistry {
    /// The subcommands, in the order `blekit --help` lists them.
    static let commands: [any BlekitCommand.Type] = [
        ScanCommand.self,
        InfoCommand.self,
        GattCommand.self,
        ReadCommand.self,
        WriteCommand.self,
        NotifyCommand.self,
        PairCommand.self,
        BondsCommand.self,
        ServeCommand.self,
        SimCommand.self,
        DemoCommand.self,
        GatewayCommand.self,
    ]

    /// blekit's version, printed by `--version`.
    static let version = "0.2.0"

    /// `blekit --help`.
    static var usage: String {
        let width = (commands.map { $0.name.count }.max() ?? 8) + 2
        var text = "usage: blekit <command> [options]\n\ncommands:\n"
        for command in commands {
            text += "  " + command.name.padding(toLength: width, withPad: " ", startingAt: 0) + command.summary + "\n"
        }
        text += "\nglobal options:\n" + GlobalOptions.specs.map(\.helpLine).joined(separator: "\n")
        text += "\n\nexit status:\n" + ExitCode.allCases.map { "  \($0.rawValue)  \($0.meaning)" }.joined(separator: "\n")
        text += "\n\n`blekit COMMAND --help` shows a command's options. BLEKIT_LOG=error|warning|info|debug|trace sets the log level."
        return text
    }

    /// `blekit --bus ADDRESS scan …` as `blekit scan --bus ADDRESS …`: the global options
    /// (`--adapter`, `--bus`, `--json`) may come before the command, as the README's "global"
    /// suggests and as git takes them. They used to be refused as "unknown command '--bus'".
    /// Anything else before the command is left where it is, for the usual refusal.
    static func commandFirst(_ arguments: [String]) -> [String] {
        let movable = GlobalOptions.specs.filter { $0.name != "--help" && $0.name != "--version" }
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            let name = argument.hasPrefix("--") ? String(argument.prefix { $0 != "=" }) : argument
            guard let spec = movable.first(where: { $0.name == name }) else { break }
            index += spec.value != nil && !argument.contains("=") ? 2 : 1
        }
        guard index > 0, index < arguments.count, commands.contains(where: { $0.name == arguments[index] }) else { return arguments }
        // Right after the command, so that a `--` later on still ends the options after them.
        return [arguments[index]] + arguments[..<index] + arguments[(index + 1)...]
    }

    /// Runs the command line (without the program name) and returns the exit status.
    @MainActor
    static func run(_ arguments: [String]) async -> ExitCode {
        let arguments = commandFirst(arguments)
        guard let first = arguments.first else {
            FileHandle.standardError.write(Data("\(usage)\n".utf8))
            return .usage
        }
        switch first {
        case "-h", "--help", "help":
            if arguments.count > 1, let command = commands.first(where: { $0.name == arguments[1] }) {
                print(command.help)
            } else {
                print(usage)
            }
            return .success
        case "--version", "version":
            print("blekit \(version)")
            return .success
        default:
            break
        }
        guard let command = commands.first(where: { $0.name == first }) else {
            if GlobalOptions.specs.contains(where: { first == $0.name || first.hasPrefix($0.name + "=") }) {
                FileHandle.standardError.write(Data("blekit: \(first.prefix { $0 != "=" }) is a global option; a command must follow the global options (blekit \(first.prefix { $0 != "=" }) … scan)\n\n\(usage)\n".utf8))
                return .usage
            }
            FileHandle.standardError.write(Data("blekit: unknown command '\(first)'\n\n\(usage)\n".utf8))
            return .usage
        }
        let parsed: ParsedArguments
        let global: GlobalOptions
        do {
            parsed = try ParsedArguments(Array(arguments.dropFirst()), specs: command.options + GlobalOptions.specs)
            global = try GlobalOptions(parsed)
        } catch {
            FileHandle.standardError.write(Data("blekit \(command.name): \(error.description)\n\(command.help)\n".utf8))
            return .usage
        }
        if parsed.has("--help") {
            print(command.help)
            return .success
        }
        if parsed.has("--version") {
            print("blekit \(version)")
            return .success
        }
        let invocation = Invocation(command: command.name, arguments: parsed, global: global, isTerminal: isatty(STDOUT_FILENO) == 1)
        return await command.run(invocation)
    }
}
