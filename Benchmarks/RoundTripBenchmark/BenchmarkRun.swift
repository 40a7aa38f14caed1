import BenchmarkSupport
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Glibc
import BlueZVocabulary

/// How a run is shaped (command-line options of `RoundTripBenchmark run`).
struct RunOptions {
    var rounds = 7
    var calls = 2000
    var warmup = 300
    var notifications = 100_000
    var ingestWarmup = 2000
    var responses = 20
    var modes = ClientMode.measured
    var cBinary: String?
    var bleakScript: String?
    var python = "/usr/bin/python3"
    var bleakScanScript: String?
    /// Crowd sizes of the scan measure (empty: skipped), rounds of it, seconds of steady scanning.
    var scanSizes = [100, 1000, 10_000]
    /// Rounds of the peripheral-role measure (BleKit serving through `PeripheralManager`); 0 skips it.
    var roleRounds = 3
    var scanRounds = 3
    var scanWindow = 3.0
    var restarts = 3
    /// Round trips of the memory measure (RSS after 10,000 against after this many; 0: skipped).
    var memoryCommands = 100_000

    static let usage = """
    usage: RoundTripBenchmark run --c-binary PATH [--bleak-script PATH --python PATH] [--rounds R]
             [--calls N] [--warmup W] [--notifications K] [--ingest-warmup KW] [--responses M] [--modes signal,acquire,...]
           RoundTripBenchmark serve [same options]       (bus + BleSim only, for profiling a client by hand)
             [--bleak-scan-script PATH] [--scan-sizes 100,1000,10000|none] [--scan-rounds R] [--scan-window S]
             [--restarts N] [--memory-commands N (0: skip; 10000 is the first sample)] [--role-rounds R (0: skip)]
           RoundTripBenchmark client MODE COUNT WARMUP   (the BleCore client; the run starts it)
           RoundTripBenchmark scan-client EXPECTED WINDOW | restart-client | memory-client COUNT CHECKPOINT
           RoundTripBenchmark role-server BURST WARMUP-BURST   (BleKit's PeripheralManager serving the round-trip peripheral)
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
            case "--responses": responses = max(1, try number())
            case "--c-binary": cBinary = value
            case "--bleak-script": bleakScript = value.isEmpty ? nil : value
            case "--python": python = value
            case "--bleak-scan-script": bleakScanScript = value.isEmpty ? nil : value
            case "--role-rounds": roleRounds = Int(value) ?? roleRounds
            case "--scan-sizes": scanSizes = value.isEmpty || value == "none" ? [] : value.split(separator: ",").compactMap { Int($0) }.filter { $0 > 0 }
            case "--scan-rounds": scanRounds = max(1, try number())
            case "--scan-window": scanWindow = Double(max(1, try number()))
            case "--restarts": restarts = try number()
            case "--memory-commands": memoryCommands = try number()
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
    case blecore = "BleKit"
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
    /// One client's runs of one mode: CPU µs per operation, operations per second, lost
    /// notifications, round-trip p50 and p99 (µs), and per-round ratios to the baselines.
    struct Series {
        var cpu: [Double] = []
        var rate: [Double] = []
        var lost: [Double] = []
        var p50: [Double] = []
        var p99: [Double] = []
        var overC: [Double] = []
        var overBleak: [Double] = []
    }
    /// Keyed by the mode the client ran (for C and bleak, the baseline mode) and the client.
    var series: [ClientMode: [ClientKind: Series]] = [:]

    init(options: RunOptions) { self.options = options }

    func run() async throws -> String {
        guard options.cBinary != nil else { throw ClientFailure("--c-binary is required\n\(RunOptions.usage)") }
        let bus = try PrivateBus()
        defer { bus.stop() }
        // Children inherit this process's environment: their system bus is the private one.
        setenv("DBUS_SYSTEM_BUS_ADDRESS", bus.address, 1)
        let scenarioText = BenchmarkScenario.json(burst: options.notifications, warmupBurst: options.ingestWarmup)
        var simulator = try await Self.startSimulator(scenarioText, bus.busAddress)
        var sections: [String] = []
        do {
            if !options.modes.isEmpty { try await measure(bus: bus) }
            sections.append(report())
            if options.restarts > 0 {
                let (text, last) = try await measureRestarts(simulator: simulator, scenarioText: scenarioText, bus: bus)
                simulator = last
                sections.append(text)
            }
            if options.memoryCommands > 0 { sections.append(try measureMemory()) }
        } catch {
            await Self.stop(simulator)
            throw error
        }
        await Self.stop(simulator)
        if options.roleRounds > 0 { sections.append(try await measurePeripheralRole(bus: bus)) }
        if !options.scanSizes.isEmpty { sections.append(try await measureScan(bus: bus)) }
        return sections.joined(separator: "\n\n")
    }

    @BleLoop static func stop(_ simulator: Simulator) { simulator.stop(.kill) }

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

        // One group per baseline mode: the C client and bleak run the baseline, BleKit every mode
        // set against it (BleCore and the BleDSL engine); the multi-packet modes are BleKit only.
        var groups: [(baseline: ClientMode?, runs: [(ClientKind, ClientMode)])] = []
        for mode in options.modes {
            let baseline = mode.baseline
            if let index = groups.firstIndex(where: { $0.baseline == baseline }) {
                groups[index].runs.append((.blecore, mode))
            } else {
                var runs: [(ClientKind, ClientMode)] = []
                if let baseline {
                    runs.append((.c, baseline))
                    if kinds.contains(.bleak) { runs.append((.bleak, baseline)) }
                }
                runs.append((.blecore, mode))
                groups.append((baseline, runs))
            }
        }
        for round in 0..<options.rounds {
            for group in groups {
                // Rotate who goes first each round, so drift in the machine's load hits all alike.
                let order = (0..<group.runs.count).map { group.runs[($0 + round) % group.runs.count] }
                var thisRound: [(ClientKind, ClientMode, Double)] = []
                for (kind, mode) in order {
                    let command = self.command(kind, mode, selfPath: selfPath, paths: paths)
                    let line = try Subprocess.run(command, timeout: 300)
                    let fields = keyValues(line)
                    guard let cpu = fields["cpu_seconds"], let ops = fields["ops"], ops > 0, let seconds = fields["seconds"] else {
                        throw ClientFailure("\(kind.rawValue) \(mode.rawValue) printed no result: \(line)")
                    }
                    let perOperation = cpu / ops * 1e6
                    var entry = series[mode, default: [:]][kind, default: Series()]
                    entry.cpu.append(perOperation)
                    entry.rate.append(seconds > 0 ? ops / seconds : 0)
                    entry.lost.append(fields["lost"] ?? 0)
                    if let p50 = fields["p50_us"] { entry.p50.append(p50) }
                    if let p99 = fields["p99_us"] { entry.p99.append(p99) }
                    series[mode, default: [:]][kind] = entry
                    thisRound.append((kind, mode, perOperation))
                    FileHandle.standardError.write(Data(String(format: "bench: round %d %@ %@: %.2f µs CPU per %@, %.0f/s, lost %.0f\n", round + 1,
                                                               mode.rawValue, kind.rawValue, perOperation, mode.unit, seconds > 0 ? ops / seconds : 0,
                                                               fields["lost"] ?? 0).utf8))
                }
                let base = thisRound.first { $0.0 == .c }?.2
                let bleak = thisRound.first { $0.0 == .bleak }?.2
                for (kind, mode, value) in thisRound where kind != .c {
                    if let base, base > 0 { series[mode]?[kind]?.overC.append(value / base) }
                    if kind == .blecore, let bleak, bleak > 0 { series[mode]?[kind]?.overBleak.append(value / bleak) }
                }
            }
        }
    }

    @BleLoop static func startSimulator(_ text: String, _ bus: BusAddress) async throws -> Simulator {
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
        let count = String(mode.isIngest ? options.notifications
                           : mode == .goon23 ? options.responses : mode == .goon517 ? options.responses * 4 : options.calls)
        let warmup = String(mode.isIngest ? options.ingestWarmup : mode.isMultiPacket ? 2 : options.warmup)
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
        lines.append("| Measure | Client | CPU µs per op (median) | min – max | ops/s (median) | p50 / p99 µs | lost (max of rounds) | × C (median of rounds, min – max) | BleKit ÷ bleak (median, min – max) |")
        lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        func spread(_ values: [Double]) -> String {
            values.isEmpty ? "" : String(format: "%.2f (%.2f – %.2f)", median(values), values.min() ?? 0, values.max() ?? 0)
        }
        var shownBaselines: Set<ClientMode> = []
        for mode in options.modes {
            var rows: [(ClientKind, Series)] = []
            if let baseline = mode.baseline, shownBaselines.insert(baseline).inserted {
                for kind in [ClientKind.c, .bleak] { if let entry = series[baseline]?[kind] { rows.append((kind, entry)) } }
            }
            if let entry = series[mode]?[.blecore] { rows.append((.blecore, entry)) }
            for (kind, entry) in rows where !entry.cpu.isEmpty {
                let measure = kind == .blecore ? mode.title : (mode.baseline ?? mode).title.replacingOccurrences(of: ", BleCore", with: "")
                    .replacingOccurrences(of: ", delegate", with: "")
                let latency = entry.p50.isEmpty ? "" : String(format: "%.0f / %.0f", median(entry.p50), median(entry.p99))
                let unit = mode.isMultiPacket ? " KiB" : ""
                lines.append(String(format: "| %@ | %@ | %.2f | %.2f – %.2f | %.0f%@ | %@ | %.0f | %@ | %@ |", measure, kind.rawValue, median(entry.cpu),
                                    entry.cpu.min() ?? 0, entry.cpu.max() ?? 0, median(entry.rate), unit, latency, entry.lost.max() ?? 0,
                                    kind == .c ? "1.00 (baseline)" : spread(entry.overC), spread(entry.overBleak)))
            }
        }
        lines.append("")
        lines.append("### Summary")
        lines.append("")
        for mode in options.modes {
            guard let entry = series[mode]?[.blecore], !entry.overC.isEmpty else { continue }
            var text = String(format: "- %@: BleKit %.2f× the C client's CPU", mode.title, median(entry.overC))
            if !mode.isIngest { text += " (targets: ≤ 1.5× issue 10, ≤ 1.2× issue 15)" }
            if !entry.overBleak.isEmpty {
                text += String(format: "; BleKit ÷ bleak %.2f (rounds %.2f – %.2f)", median(entry.overBleak), entry.overBleak.min() ?? 0, entry.overBleak.max() ?? 0)
                if mode == .ingest { text += " (target ≤ 1.0)" }
            }
            text += String(format: "; lost %.0f in all rounds", entry.lost.reduce(0, +))
            lines.append(text)
        }
        return lines.joined(separator: "\n")
    }
}

func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}
