import Foundation

// `blekit`: BleKit's command-line tool. The subcommands are in Commands/, registered in
// CommandRegistry; the exit statuses are in ExitCode.
let status = await CommandRegistry.run(Array(CommandLine.arguments.dropFirst()))
exit(status.rawValue)
