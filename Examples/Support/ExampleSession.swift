import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation

/// How an example runs: against the real bluetoothd on the system bus, or with `--sim`
/// against BleSim on a private bus serving the example's own scenario.
public final class ExampleSession: @unchecked Sendable {
    /// The options for the example's `CentralManager`.
    public let options: CentralManagerOptions
    /// BleSim, with `--sim` (examples that change the simulated world use it).
    public let simulator: Simulator?
    /// The private bus, with `--sim`.
    public let bus: PrivateBus?
    /// The arguments after the ones `start` understood.
    public let arguments: [String]

    private init(options: CentralManagerOptions, simulator: Simulator?, bus: PrivateBus?, arguments: [String]) {
        self.options = options
        self.simulator = simulator
        self.bus = bus
        self.arguments = arguments
    }

    /// True when this run is against BleSim.
    public var isSimulated: Bool { simulator != nil }

    /// Reads `--sim`, `--bus ADDRESS` and `--adapter NAME` from the command line; with `--sim`
    /// starts BleSim serving `scenario` (JSON in BleSim's scenario format). Exits with status 1
    /// (after saying why) when BleSim cannot start, 2 on `--help`-less bad arguments.
    public static func start(_ name: String, scenario: String, usage: String) async -> ExampleSession {
        var arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.contains("--help") || arguments.contains("-h") {
            print(usage)
            exit(0)
        }
        func take(_ option: String) -> String? {
            guard let index = arguments.firstIndex(of: option) else { return nil }
            guard index + 1 < arguments.count else {
                FileHandle.standardError.write(Data("\(name): \(option) needs a value\n\(usage)\n".utf8))
                exit(2)
            }
            let value = arguments[index + 1]
            arguments.removeSubrange(index...index + 1)
            return value
        }
        let simulated = arguments.contains("--sim")
        arguments.removeAll { $0 == "--sim" }
        let adapter = take("--adapter")
        let busAddress = take("--bus")
        guard simulated else {
            return ExampleSession(options: CentralManagerOptions(bus: busAddress.map { .address($0) } ?? .system, adapter: adapter),
                                  simulator: nil, bus: nil, arguments: arguments)
        }
        do {
            let bus = try await PrivateBus.start()
            let parsed = try Scenario.parse(Data(scenario.utf8), name: "\(name)'s scenario")
            let simulator = await parsed.makeSimulator()
            try await simulator.start(on: bus.busAddress)
            let names = parsed.peripherals.map { $0.name ?? $0.address }
            // A crowded room would fill the screen: name the first few.
            let served = names.count > 6 ? names.prefix(3).joined(separator: ", ") + " and \(names.count - 3) more" : names.joined(separator: ", ")
            print("[\(name)] BleSim serves \(served.isEmpty ? "no peripherals" : served) on a private bus (--sim)")
            // Before any child process (or BleKit's log on stderr) writes after it.
            fflush(nil)
            return ExampleSession(options: CentralManagerOptions(bus: .address(bus.address), adapter: adapter),
                                  simulator: simulator, bus: bus, arguments: arguments)
        } catch {
            FileHandle.standardError.write(Data("\(name): could not start BleSim: \(error)\n".utf8))
            exit(1)
        }
    }

    /// Stops BleSim and its bus.
    public func stop() async {
        if let simulator { await simulator.stop(.clean) }
        bus?.stop()
    }
}
