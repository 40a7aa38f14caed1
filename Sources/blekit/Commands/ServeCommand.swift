import BleCore
import BleSim
import Foundation

/// `blekit serve FILE.json`: a GATT peripheral from a file, through `PeripheralManager`.
enum ServeCommand: BlekitCommand {
    static let name = "serve"
    static let synopsis = "FILE.json"
    static let summary = "serve a peripheral from a file (BleSim's scenario format) through PeripheralManager"
    static let options: [OptionSpec] = [
        .value("--peripheral", "NAME", "in a scenario file with several peripherals, the one with this name"),
        .value("--duration", "SECONDS", "stop after this long (default: until Ctrl-C)"),
        .value("--agent", "IO", "register a pairing agent (the default agent, asked when a central pairs) with this IO capability: \(IOCapability.allCases.map(\.rawValue).joined(separator: ", "))"),
        .flag("--yes", "with --agent: accept confirmations and authorizations without asking (needed when not on a terminal)"),
    ]
    static let details = """
    FILE is one peripheral object as in BleSim's scenarios ({"name", "serviceUUIDs",
    "manufacturerData", "services": [{"uuid", "characteristics": [{"uuid", "flags", "value"}]}],
    "rules"}) or a whole scenario. Reads answer the current value, writes replace it; rules run
    as in BleSim: on write (with a prefix), on subscribe, every N ms → notify, echo, setValue,
    attError. Each request is printed. With --agent, pairing questions are asked (or, with --yes,
    accepted) and printed with the passkey. Ctrl-C stops advertising and unregisters.
    Example: blekit serve Scenarios/led-status.json
    """

    @MainActor
    static func run(_ invocation: Invocation) async -> ExitCode {
        guard invocation.positionals.count == 1 else { return invocation.usage("wants one FILE.json", help: help) }
        let duration: Double?
        do {
            duration = invocation.arguments.has("--duration") ? try invocation.arguments.seconds("--duration", default: 0) : nil
        } catch {
            return invocation.usage(error.description, help: help)
        }
        var agent: (capability: IOCapability, acceptAll: Bool)?
        if let text = invocation.arguments.value("--agent") {
            guard let capability = IOCapability.allCases.first(where: { $0.rawValue.lowercased() == text.lowercased() }) else {
                return invocation.usage("--agent: '\(text)' is not one of \(IOCapability.allCases.map(\.rawValue).joined(separator: ", "))", help: help)
            }
            agent = (capability, invocation.arguments.has("--yes"))
        }
        do {
            let served = try ServedPeripheral.load(path: invocation.positionals[0], name: invocation.arguments.value("--peripheral"))
            let server = PeripheralServer(served: served, invocation: invocation, agent: agent)
            return try await server.run(duration: duration)
        } catch {
            return invocation.fail(error)
        }
    }
}
