import BleCore
import Foundation

/// `blekit bonds`: the adapter's paired devices; `--remove ADDRESS` forgets one.
enum BondsCommand: BlekitCommand {
    static let name = "bonds"
    static let synopsis = ""
    static let summary = "list the adapter's paired devices, or forget one with --remove ADDRESS"
    static let options: [OptionSpec] = [
        .value("--remove", "ADDRESS", "forget this device: disconnect it and delete its bond"),
    ]

    @MainActor
    static func run(_ invocation: Invocation) async -> ExitCode {
        guard invocation.positionals.isEmpty else { return invocation.usage("takes no arguments", help: help) }
        do throws(CLIError) {
            let session = try await CentralSession.open(invocation)
            defer { session.close() }
            let bonded = session.manager.bondedPeripherals()
            if let address = invocation.arguments.value("--remove") {
                guard let peripheral = bonded.first(where: { $0.address.uppercased() == address.uppercased() || $0.name == address }) else {
                    throw CLIError("\(address) is not paired with \(session.manager.adapterName ?? "this adapter"); `blekit bonds` lists the paired devices.", .deviceNotFound)
                }
                let outcome = PairingOutcome()
                session.manager.removeBond(peripheral) { outcome.finish($0) }
                if let error = await outcome.wait() { throw CLIError("removing the bond failed: \(error.description)", CentralSession.exitCode(for: error)) }
                invocation.out("forgot \(peripheral.address); the device may keep its own bond: remove it there too before pairing again")
                return .success
            }
            if invocation.global.json {
                for peripheral in bonded {
                    var object: [String: Any] = ["address": peripheral.address, "bonded": peripheral.isBonded, "trusted": peripheral.isTrusted]
                    object["name"] = peripheral.name
                    invocation.json(object)
                }
                return .success
            }
            for peripheral in bonded.sorted(by: { $0.address < $1.address }) {
                invocation.out("\(peripheral.address)  \(peripheral.name ?? "(no name)")  \(peripheral.isBonded ? "bonded" : "paired, not bonded")\(peripheral.isTrusted ? ", trusted" : "")")
            }
            invocation.out("\(bonded.count) paired device(s) on \(session.manager.adapterName ?? "the adapter")")
            return .success
        } catch {
            return invocation.fail(error)
        }
    }
}
