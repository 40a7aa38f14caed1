import BleDBus
import BleSim
import Foundation

/// `blekit sim`: BleSim on a private bus (or a given one), serving a scenario until interrupted.
enum SimCommand: BlekitCommand {
    static let name = "sim"
    static let synopsis = "[SCENARIO.json]"
    static let summary = "serve a BleSim scenario on a private D-Bus bus until interrupted"
    static let options: [OptionSpec] = [
        .value("--address", "ADDRESS", "serve on this bus instead of starting a private dbus-daemon"),
    ]
    static let details = """
    Prints DBUS_SYSTEM_BUS_ADDRESS=… first: give that address to other blekit commands with
    --bus ADDRESS, or export it for any BlueZ client. Then one line per adapter (`adapter hci0
    00:AA:01:00:00:00`) and per peripheral (`peripheral C0:FF:EE:00:00:01 LED`), then a summary.
    Stops on SIGINT or SIGTERM.
    """

    @MainActor
    static func run(_ invocation: Invocation) async -> ExitCode {
        guard invocation.positionals.count <= 1 else { return invocation.usage("at most one scenario file", help: help) }
        let scenario: Scenario
        do {
            scenario = try invocation.positionals.first.map { path throws(Scenario.LoadError) in try Scenario.load(path: path) } ?? Scenario()
        } catch {
            invocation.fail("\(error)")
            return .failure
        }
        var bus: PrivateBus?
        let address: String
        if let explicit = invocation.arguments.value("--address") {
            address = explicit
        } else {
            do {
                let started = try PrivateBus()
                bus = started
                address = started.address
            } catch {
                invocation.fail("\(error)")
                return .failure
            }
        }
        let simulator = await scenario.makeSimulator()
        do {
            try await simulator.start(on: .address(address))
        } catch {
            invocation.fail("\(error)")
            bus?.stop()
            return .failure
        }
        invocation.out("DBUS_SYSTEM_BUS_ADDRESS=\(address)")
        for adapter in scenario.configuration.adapters {
            invocation.out("adapter \(adapter.name) \(adapter.address)\(adapter.powered ? "" : " (powered off)")")
        }
        // A crowd is thousands of advertisers: the first few say what they look like.
        for peripheral in scenario.peripherals.prefix(20) {
            invocation.out("peripheral \(peripheral.address) \(peripheral.name ?? "(no name)")")
        }
        if scenario.peripherals.count > 20 { invocation.out("… and \(scenario.peripherals.count - 20) more peripheral(s)") }
        invocation.out("BleSim is serving \(scenario.peripherals.count) peripheral(s) on \(scenario.configuration.adapters.map(\.name).joined(separator: ", ")). Point clients at it with --bus \(address) (or export DBUS_SYSTEM_BUS_ADDRESS). Press Ctrl-C to stop.")
        await Termination.wait()
        await simulator.stop(.clean)
        bus?.stop()
        return .success
    }
}
