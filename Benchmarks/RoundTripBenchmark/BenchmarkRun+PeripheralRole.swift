import BenchmarkSupport
import BleCore
import BleSim
import BleTestSupport
import Foundation

extension BenchmarkRun {
    /// The peripheral role: the round-trip peripheral served by BleKit (`RoleServer`, a process
    /// of its own, `PeripheralManager` on hci0) instead of BleSim, and the same BleCore client on
    /// hci1 doing write→notification round trips (requests served) and bursts (notifications sent
    /// through `updateValue` with its back-pressure). The baseline is the same client against
    /// BleSim's peripheral earlier in this run.
    func measurePeripheralRole(bus: PrivateBus) async throws -> String {
        // No simulated peripheral: the only one advertising the service is BleKit's.
        let simulator = try await Self.startSimulator(#"{"peripherals": []}"#, bus.busAddress)
        let selfPath = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let server = try Subprocess([selfPath, "role-server", String(options.notifications), String(options.ingestWarmup)])
        defer { server.finish() }
        do {
            guard server.readLine(timeout: 60) == "ready" else { throw ClientFailure("the role server did not start advertising") }
            var rows: [ClientMode: (rate: [Double], clientCPU: [Double], serverCPU: [Double], lost: [Double], refusals: [Double])] = [:]
            for round in 0..<options.roleRounds {
                var modes: [ClientMode] = [.signal, .ingest]
                if round % 2 == 1 { modes.reverse() }
                for mode in modes {
                    let before = try counters(server)
                    let count = mode.isIngest ? options.notifications : options.calls
                    let warmup = mode.isIngest ? options.ingestWarmup : options.warmup
                    let line = try Subprocess.run([selfPath, "client", mode.rawValue, String(count), String(warmup)], timeout: 300)
                    let after = try counters(server)
                    let fields = keyValues(line)
                    guard let cpu = fields["cpu_seconds"], let ops = fields["ops"], ops > 0, let seconds = fields["seconds"], seconds > 0 else {
                        throw ClientFailure("the client (\(mode.rawValue)) against BleKit's peripheral printed no result: \(line)")
                    }
                    // The server's counters include the client's warm-up and set-up; its CPU per
                    // operation counts all it did over the operations it served or sent.
                    let served = mode.isIngest ? after["notifications", default: 0] - before["notifications", default: 0]
                                               : after["requests", default: 0] - before["requests", default: 0]
                    let serverCPU = (after["cpu_seconds", default: 0] - before["cpu_seconds", default: 0]) / max(served, 1) * 1e6
                    var entry = rows[mode] ?? ([], [], [], [], [])
                    entry.rate.append(ops / seconds)
                    entry.clientCPU.append(cpu / ops * 1e6)
                    entry.serverCPU.append(serverCPU)
                    entry.lost.append(fields["lost"] ?? 0)
                    entry.refusals.append(after["refusals", default: 0] - before["refusals", default: 0])
                    rows[mode] = entry
                    FileHandle.standardError.write(Data(String(format: "bench: role round %d %@: %.0f/s, server %.1f µs CPU per %@\n",
                                                               round + 1, mode.rawValue, ops / seconds, serverCPU, mode.unit).utf8))
                }
            }
            await Self.stop(simulator)
            var lines = ["### Peripheral role", "",
                         "BleKit's `PeripheralManager` (`RoundTripBenchmark role-server`, its own process, hci0) serves the round-trip peripheral; the BleCore",
                         "client on hci1 runs as against BleSim. Requests: write (with response) → answer → `updateValue` echo, in sequence. Notifications:",
                         "a write asks for a burst sent as fast as `updateValue` takes them, waiting for `peripheralManagerIsReady` when it refuses.",
                         "Baseline: the same client against BleSim's peripheral, earlier in this run. \(options.roleRounds) rounds, medians.", "",
                         "| Measure | served by | ops/s | client CPU µs per op | server CPU µs per op | refused `updateValue`s | lost | rate ÷ BleSim-served |",
                         "|---|---|---:|---:|---:|---:|---:|---:|"]
            for mode in [ClientMode.signal, .ingest] {
                guard let entry = rows[mode] else { continue }
                let against = series[mode]?[.blecore]
                let baselineRate = against.map { median($0.rate) }
                let ratio = baselineRate.map { $0 > 0 ? String(format: "%.2f", median(entry.rate) / $0) : "–" } ?? "–"
                let what = mode.isIngest ? "notifications sent (`updateValue`)" : "requests served (write → answer → notify)"
                lines.append(String(format: "| %@ | BleKit | %.0f | %.1f | %.1f | %.0f | %.0f | %@ |", what, median(entry.rate), median(entry.clientCPU),
                                    median(entry.serverCPU), median(entry.refusals), entry.lost.max() ?? 0, ratio))
                if let against {
                    lines.append(String(format: "| %@ | BleSim | %.0f | %.1f | – | – | %.0f | 1.00 |", what, median(against.rate), median(against.cpu),
                                        against.lost.max() ?? 0))
                }
            }
            return lines.joined(separator: "\n")
        } catch {
            await Self.stop(simulator)
            throw error
        }
    }

    private func counters(_ server: Subprocess) throws -> [String: Double] {
        server.send("counters")
        guard let line = server.readLine(timeout: 30) else { throw ClientFailure("the role server stopped answering") }
        return keyValues(line)
    }
}
