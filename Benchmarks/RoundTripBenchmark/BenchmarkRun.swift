import BenchmarkSupport
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Glibc

/// How a run is shaped (command-line options of `RoundTripBenchmark run`).
struct RunOptions {
    var rounds = 7
    var calls = 2000
    var warmup = 300
    var notifications = 20000
    var ingestWarmup = 2000
    var modes = ClientMode.allCases
    var cBinary: String?
    var bleakScript: String?
    var python = "/usr/bin/python3"

    static let usage = """
    usage: RoundTripBenchmark run --c-binary PATH [--bleak-script PATH --python PATH] [--rounds R]
             [--calls N] [--warmup W] [--notifications K] [--ingest-warmup KW] [--modes signal,acquire,...]
           RoundTripBenchmark serve [same options]       (bus + BleSim only, for profiling a client by hand)
           RoundTripBenchmark client MODE COUNT WARMUP   (the BleCore client; the run starts it)
    """

    init(_ arguments: ArraySlice<String>) throws(ClientFailure) {
        var rest = arguments
        while let flag = rest.popFirst() {
            guard let value = rest.popFirst() else { throw ClientFailure("\(flag) needs a value\n\(Self.usage)") }
            func number() throws(ClientFailure) -> Int {
                guard let number = Int(value), number >= 0 else { throw ClientFailure("\(flag): not a count: \(value)") }
                return number
            }
            switch flag {
            case "--rounds": rounds = max(1, try number())
            case "--calls": calls = max(1, try number())
            case "--warmup": warmup = try number()
            case "--notifications": notifications = max(1, try number())
            case "--ingest-warmup": ingestWarmup = try number()
            case "--c-binary": cBinary = value
            case "--bleak-script": bleakScript = value.isEmpty ? nil : value
            case "--python": python = value
            case "--modes":
                var modes: [ClientMode] = []
                for name in value.split(separator: ",") {
                    guard let mode = ClientMode(rawValue: String(name)) else { throw ClientFailure("unknown mode \(name)") }
                    modes.append(mode)
                }
                self.modes = modes
            default: throw ClientFailure("unknown option \(flag)\n\(Self.usage)")
            }
        }
    }
}

/// The clients compared; C (libdbus) is the baseline of every ratio.
enum ClientKind: String, CaseIterable {
    case c = "C (libdbus)"
    case blecore = "BleCore"
    case bleak = "bleak"
}

/// The object paths the simulator gave the benchmark's characteristics.
struct BenchmarkPaths: Sendable {
    var write: String
    var notify: String
}

/// Starts the bus and BleSim, then runs every client in interleaved rounds and reports.
final class BenchmarkRun {
    let options: RunOptions
    private var samples: [ClientMode: [ClientKind: [Double]]] = [:]
    private var roundRatios: [ClientMode: [ClientKind: [Double]]] = [:]
    /// BleCore's CPU per operation over bleak's, per round.
    private var overBleak: [ClientMode: [Double]] = [:]

    init(options: RunOptions) { self.options = options }

    func run() async throws -> String {
        guard options.cBinary != nil else { throw ClientFailure("--c-binary is required\n\(RunOptions.usage)") }
        let bus = try PrivateBus()
        defer { bus.stop() }
        // Children inherit this process's environment: their system bus is the private one.
        setenv("DBUS_SYSTEM_BUS_ADDRESS", bus.address, 1)
        let scenarioText = BenchmarkScenario.json(burst: options.notifications, warmupBurst: options.ingestWarmup)
        let simulator = try await Self.startSimulator(scenarioText, bus.busAddress)
        do {
            try await measure(bus: bus)
        } catch {
            await Self.stop(simulator)
            throw error
        }
        await Self.stop(simulator)
        return report()
    }

    @BleLoop private static func stop(_ simulator: Simulator) { simulator.stop(.kill) }

    /// For profiling a client by hand: starts the bus and BleSim, prints the environment and the
    /// client command lines, and serves until stdin closes.
    func serve() async throws {
        let bus = try PrivateBus()
        defer { bus.stop() }
        let simulator = try await Self.startSimulator(BenchmarkScenario.json(burst: options.notifications, warmupBurst: options.ingestWarmup),
                                                      bus.busAddress)
        let paths = try await Self.findPaths(bus.busAddress)
        let selfPath = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var text = "export DBUS_SYSTEM_BUS_ADDRESS='\(bus.address)'\n"
        for mode in options.modes {
            for kind in ClientKind.allCases {
                text += "# \(kind.rawValue), \(mode.rawValue): " + command(kind, mode, selfPath: selfPath, paths: paths).joined(separator: " ") + "\n"
            }
        }
        // Unbuffered, so a reader sees it before this process waits on stdin.
        FileHandle.standardOutput.write(Data(text.utf8))
        while readLine() != nil {}
        await Self.stop(simulator)
    }

    private func measure(bus: PrivateBus) async throws {
        let paths = try await Self.findPaths(bus.busAddress)
        let selfPath = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        var kinds: [ClientKind] = [.c, .blecore]
        if options.bleakScript != nil { kinds.append(.bleak) }

        for round in 0..<options.rounds {
            for mode in options.modes {
                // Rotate who goes first each round, so drift in the machine's load hits all alike.
                let order = (0..<kinds.count).map { kinds[($0 + round) % kinds.count] }
                var thisRound: [ClientKind: Double] = [:]
                for kind in order {
                    let command = self.command(kind, mode, selfPath: selfPath, paths: paths)
                    let line = try Subprocess.run(command, timeout: 300)
                    let fields = keyValues(line)
                    guard let cpu = fields["cpu_seconds"], let ops = fields["ops"], ops > 0 else {
                        throw ClientFailure("\(kind.rawValue) \(mode.rawValue) printed no result: \(line)")
                    }
                    let perOperation = cpu / ops * 1e6
                    samples[mode, default: [:]][kind, default: []].append(perOperation)
                    thisRound[kind] = perOperation
                    FileHandle.standardError.write(Data(String(format: "bench: round %d %@ %@: %.2f µs CPU per %@\n", round + 1, mode.rawValue,
                                                               kind.rawValue, perOperation, mode.isIngest ? "notification" : "round trip").utf8))
                }
                if let blecore = thisRound[.blecore], let bleak = thisRound[.bleak], bleak > 0 {
                    overBleak[mode, default: []].append(blecore / bleak)
                }
                if let base = thisRound[.c], base > 0 {
                    for (kind, value) in thisRound where kind != .c {
                        roundRatios[mode, default: [:]][kind, default: []].append(value / base)
                    }
                }
            }
        }
    }

    @BleLoop private static func startSimulator(_ text: String, _ bus: BusAddress) async throws -> Simulator {
        let scenario = try Scenario.parse(Data(text.utf8), name: "round-trip")
        let simulator = scenario.makeSimulator()
        try await simulator.start(on: bus)
        return simulator
    }

    /// Connects once (as a client would) to learn the characteristics' paths for the C client,
    /// then disconnects, so every client starts from the same state.
    @BleLoop static func findPaths(_ bus: BusAddress) async throws -> BenchmarkPaths {
        let connection = try await Connection.open(bus)
        defer { connection.close() }
        let adapter: ObjectPath = "/org/bluez/hci0"
        let device = try ObjectPath(BenchmarkScenario.devicePath)
        _ = try await connection.call(destination: "org.bluez", path: adapter, interface: "org.bluez.Adapter1", member: "StartDiscovery")
        let deadline = ContinuousClock.now + .seconds(20)
        func objects() async throws -> ManagedObjects {
            let reply = try await connection.call(destination: "org.bluez", path: "/", interface: "org.freedesktop.DBus.ObjectManager",
                                                  member: "GetManagedObjects")
            guard let first = reply.first else { throw ClientFailure("GetManagedObjects: empty reply") }
            return try BlueZShapes.managedObjects(first)
        }
        while try await objects()[device] == nil {
            guard ContinuousClock.now < deadline else { throw ClientFailure("the simulated peripheral was never discovered") }
            try await Task.sleep(for: .milliseconds(10))
        }
        _ = try await connection.call(destination: "org.bluez", path: device, interface: "org.bluez.Device1", member: "Connect")
        var found: BenchmarkPaths?
        while found == nil {
            guard ContinuousClock.now < deadline else { throw ClientFailure("the benchmark characteristics never appeared") }
            var write: String?
            var notify: String?
            for (path, interfaces) in try await objects() where path.rawValue.hasPrefix(BenchmarkScenario.devicePath + "/") {
                guard let uuid = interfaces["org.bluez.GattCharacteristic1"]?["UUID"]?.as(String.self) else { continue }
                if uuid == BenchmarkScenario.writeUUID { write = path.rawValue }
                if uuid == BenchmarkScenario.notifyUUID { notify = path.rawValue }
            }
            if let write, let notify { found = BenchmarkPaths(write: write, notify: notify) } else { try await Task.sleep(for: .milliseconds(10)) }
        }
        _ = try await connection.call(destination: "org.bluez", path: device, interface: "org.bluez.Device1", member: "Disconnect")
        _ = try await connection.call(destination: "org.bluez", path: adapter, interface: "org.bluez.Adapter1", member: "StopDiscovery")
        guard let found else { throw ClientFailure("no paths") }
        return found
    }

    private func command(_ kind: ClientKind, _ mode: ClientMode, selfPath: String, paths: BenchmarkPaths) -> [String] {
        let count = String(mode.isIngest ? options.notifications : options.calls)
        let warmup = String(mode.isIngest ? options.ingestWarmup : options.warmup)
        switch kind {
        case .c:
            return [options.cBinary ?? "ble_roundtrip", mode.rawValue, BenchmarkScenario.adapterPath, BenchmarkScenario.devicePath,
                    paths.write, paths.notify, count, warmup]
        case .blecore:
            return [selfPath, "client", mode.rawValue, count, warmup]
        case .bleak:
            return [options.python, options.bleakScript ?? "", mode.rawValue, BenchmarkScenario.address, count, warmup]
        }
    }

    // MARK: Report

    private func report() -> String {
        var lines: [String] = []
        let load = (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))?.split(separator: " ").prefix(3).joined(separator: " ") ?? "?"
        lines.append("Rounds: \(options.rounds); per client run: \(options.calls) round trips after \(options.warmup) warm-up, "
                     + "or \(options.notifications) notifications after a burst of \(options.ingestWarmup). Load average at the end: \(load).")
        lines.append("")
        lines.append("| Path | Client | CPU µs per op (median) | min – max | × C (median of rounds) | per-round × C, min – max |")
        lines.append("|---|---|---:|---:|---:|---:|")
        for mode in options.modes {
            for kind in ClientKind.allCases {
                guard let values = samples[mode]?[kind], !values.isEmpty else { continue }
                let ratios = roundRatios[mode]?[kind] ?? []
                let ratioText = kind == .c ? "1.00 (baseline)" : String(format: "%.2f", median(ratios))
                let spread = ratios.isEmpty ? "" : String(format: "%.2f – %.2f", ratios.min() ?? 0, ratios.max() ?? 0)
                lines.append(String(format: "| %@ | %@ | %.2f | %.2f – %.2f | %@ | %@ |", Self.title(mode), kind.rawValue, median(values),
                                    values.min() ?? 0, values.max() ?? 0, ratioText, spread))
            }
        }
        lines.append("")
        lines.append("### Summary")
        lines.append("")
        for mode in options.modes {
            guard let blecore = roundRatios[mode]?[.blecore], !blecore.isEmpty else { continue }
            var text = String(format: "- %@: BleCore %.2f× the C client", Self.title(mode), median(blecore))
            if !mode.isIngest { text += " (issue 10 target ≤ 1.5×)" }
            if let bleak = roundRatios[mode]?[.bleak], !bleak.isEmpty, let ratios = overBleak[mode], !ratios.isEmpty {
                text += String(format: "; bleak %.2f× C; BleCore / bleak %.2f (rounds %.2f – %.2f)", median(bleak), median(ratios),
                               ratios.min() ?? 0, ratios.max() ?? 0)
                if mode == .ingest { text += " (issue 10 target ≤ 1.0)" }
            }
            lines.append(text)
        }
        return lines.joined(separator: "\n")
    }

    private static func title(_ mode: ClientMode) -> String {
        switch mode {
        case .signal: return "round trip, StartNotify (signal)"
        case .acquire: return "round trip, AcquireNotify (socket)"
        case .ingest: return "ingest, StartNotify (signal)"
        }
    }
}

func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}
