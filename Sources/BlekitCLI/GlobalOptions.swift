import BleCore
import Foundation

/// The options every subcommand accepts: which adapter and bus, and the output form.
package struct GlobalOptions: Sendable {
    /// The global option specs, listed in every `--help`.
    package static let specs: [OptionSpec] = [
        .value("--adapter", "NAME", "the adapter by name (hci1) or address; default: the first powered one"),
        .value("--bus", "BUS", "system (default), session, or a D-Bus address such as unix:path=/tmp/bus"),
        .flag("--json", "print data as JSON, one object per line"),
        .flag("--help", "show this help", aliases: ["-h"]),
        .flag("--version", "print blekit's version"),
    ]

    /// `--adapter`.
    package var adapter: String?
    /// `--bus`, resolved.
    package var bus: BleBus = .system
    /// `--json`.
    package var json = false

    /// Reads the global options out of `arguments`.
    package init(_ arguments: ParsedArguments, environment: [String: String] = ProcessInfo.processInfo.environment) throws(ParsedArguments.UsageError) {
        adapter = arguments.value("--adapter")
        json = arguments.has("--json")
        switch arguments.value("--bus") {
        case nil, "system":
            bus = .system
        case "session":
            guard let address = environment["DBUS_SESSION_BUS_ADDRESS"], !address.isEmpty else {
                throw ParsedArguments.UsageError(description: "--bus session: DBUS_SESSION_BUS_ADDRESS is not set (start a session bus, or give its address with --bus ADDRESS)")
            }
            bus = .address(address)
        case let address?:
            guard address.contains(":") else {
                throw ParsedArguments.UsageError(description: "--bus wants system, session or a D-Bus address such as unix:path=/tmp/bus, not '\(address)'")
            }
            bus = .address(address)
        }
    }

    /// The options of a `CentralManager` that talks to the chosen bus and adapter.
    package var centralOptions: CentralManagerOptions {
        CentralManagerOptions(bus: bus, adapter: adapter)
    }
}
