import BenchmarkSupport
import BleDBus
import BleSim
import BleTestSupport
import Foundation

/// The measures beyond round trips: restart recovery, memory over many commands, scanning crowds.
extension BenchmarkRun {
    private var selfPath: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// BleSim killed and started again under a connected, notifying client; returns the report and
    /// the simulator now running.
    func measureRestarts(simulator first: Simulator, scenarioText: String, bus: PrivateBus) async throws -> (String, Simulator) {
        var simulator = first
        var steps: [String: [Double]] = [:]
        let names = ["powered": "bluetoothd seen again (poweredOn)", "scanning": "scanning resumed (first discovery)",
                     "reconnected": "reconnected (didConnect)", "notified": "next notification (after re-subscribing)"]
        for round in 0..<options.restarts {
            let child = try Subprocess([selfPath, "restart-client"])
            defer { child.finish() }
            guard child.readLine(timeout: 60) == "ready" else { throw ClientFailure("restart client \(round + 1) never got ready") }
            let killed = monotonicSeconds()
            await Self.stop(simulator)
            simulator = try await Self.startSimulator(scenarioText, bus.busAddress)
            guard let line = child.readLine(timeout: 90) else { throw ClientFailure("restart client \(round + 1) printed no result") }
            let fields = keyValues(line)
            for name in names.keys {
                guard let at = fields[name], at > 0 else { throw ClientFailure("restart \(round + 1): step \(name) never happened: \(line)") }
                steps[name, default: []].append((at - killed) * 1000)
            }
            FileHandle.standardError.write(Data(String(format: "bench: restart %d: scanning after %.0f ms, reconnected after %.0f ms, notified after %.0f ms\n",
                                                       round + 1, steps["scanning"]?.last ?? 0, steps["reconnected"]?.last ?? 0,
                                                       steps["notified"]?.last ?? 0).utf8))
        }
        var lines = ["### Restart recovery", "",
                     "BleSim killed (`stop(.kill)`: its bus name and objects vanish at once) and started again under a BleCore client that is connected to the",
                     "round-trip peripheral, subscribed (StartNotify) and scanning; the client's reconnect policy is written with the public API (connect on",
                     "discovery, re-discover, subscribe, write once). Times from the kill, which includes starting the new BleSim. \(options.restarts) restarts.", "",
                     "| Step | median ms | min – max |", "|---|---:|---:|"]
        for name in ["powered", "scanning", "reconnected", "notified"] {
            let values = steps[name] ?? []
            lines.append(String(format: "| %@ | %.0f | %.0f – %.0f |", names[name] ?? name, median(values), values.min() ?? 0, values.max() ?? 0))
        }
        let scanning = median(steps["scanning"] ?? [])
        lines.append("")
        lines.append(String(format: "Scanning resumed after %.0f ms (issue 15 target < 500 ms: %@).", scanning, scanning < 500 ? "met" : "missed"))
        return (lines.joined(separator: "\n"), simulator)
    }

    /// RSS after 10,000 round trips against after `memoryCommands`.
    func measureMemory() throws -> String {
        let checkpoint = min(10_000, options.memoryCommands)
        let line = try Subprocess.run([selfPath, "memory-client", String(options.memoryCommands), String(checkpoint)], timeout: 3600)
        let fields = keyValues(line)
        guard let early = fields["rss_at_\(checkpoint)"], let late = fields["rss_at_\(options.memoryCommands)"], early > 0 else {
            throw ClientFailure("memory client printed no RSS: \(line)")
        }
        let growth = (late - early) / early * 100
        FileHandle.standardError.write(Data(String(format: "bench: memory: RSS %.1f MiB after %d, %.1f MiB after %d round trips (%+.1f %%)\n",
                                                   early / 1_048_576, checkpoint, late / 1_048_576, options.memoryCommands, growth).utf8))
        return [
            "### Memory over many commands", "",
            String(format: "BleCore client, StartNotify round trips: RSS %.2f MiB after %d, %.2f MiB after %d: **%+.1f %%** (target within ±5 %%: %@).",
                   early / 1_048_576, checkpoint, late / 1_048_576, options.memoryCommands, growth, abs(growth) <= 5 ? "met" : "missed"),
            options.memoryCommands < 1_000_000 ? "This is `make bench`'s bounded variant; `Benchmarks/run --memory-commands 1000000` runs the full one (about 6 minutes)." : "",
        ].joined(separator: "\n")
    }

    /// Crowds of 100, 1,000 and 10,000 advertisers (1 s interval), BleKit and bleak in turns.
    func measureScan(bus: PrivateBus) async throws -> String {
        var rows: [(size: Int, kind: String, discovered: [Double], cpu: [Double], memory: [Double])] = []
        var ratios: [Int: [Double]] = [:]
        for size in options.scanSizes {
            let crowd = """
            {"crowd": {"count": \(size), "interval": 1000, "rssi": -70, "rssiJitter": 8}}
            """
            let simulator = try await Self.startSimulator(crowd, bus.busAddress)
            var mine = (discovered: [Double](), cpu: [Double](), memory: [Double]())
            var theirs = (discovered: [Double](), cpu: [Double](), memory: [Double]())
            do {
                for round in 0..<options.scanRounds {
                    var clients: [(String, [String])] = [("BleKit", [selfPath, "scan-client", String(size), String(options.scanWindow)])]
                    if let script = options.bleakScanScript { clients.append(("bleak", [options.python, script, String(size), String(options.scanWindow)])) }
                    if round % 2 == 1 { clients.reverse() }
                    var perSecond: [String: Double] = [:]
                    for (kind, command) in clients {
                        let fields = keyValues(try Subprocess.run(command, timeout: 180))
                        guard let cpu = fields["cpu_seconds"], let seconds = fields["seconds"], seconds > 0, let found = fields["discovered95_seconds"],
                              let memory = fields["rss_delta"] else { throw ClientFailure("\(kind) scan of \(size) printed no result") }
                        let entry = (found * 1000, cpu / seconds * 1000, memory / Double(size))
                        if kind == "BleKit" { mine.discovered.append(entry.0); mine.cpu.append(entry.1); mine.memory.append(entry.2) } else {
                            theirs.discovered.append(entry.0); theirs.cpu.append(entry.1); theirs.memory.append(entry.2)
                        }
                        perSecond[kind] = entry.1
                        FileHandle.standardError.write(Data(String(format: "bench: scan %d, round %d, %@: 95 %% after %.0f ms, %.1f ms CPU per s, %.0f bytes per device\n",
                                                                   size, round + 1, kind, entry.0, entry.1, entry.2).utf8))
                    }
                    if let a = perSecond["BleKit"], let b = perSecond["bleak"], b > 0 { ratios[size, default: []].append(a / b) }
                }
            } catch {
                await Self.stop(simulator)
                throw error
            }
            await Self.stop(simulator)
            rows.append((size, "BleKit", mine.discovered, mine.cpu, mine.memory))
            if !theirs.cpu.isEmpty { rows.append((size, "bleak", theirs.discovered, theirs.cpu, theirs.memory)) }
        }
        var lines = ["### Scanning crowds", "",
                     "BleSim crowds (`{\"crowd\": …}`, non-connectable, 1 s advertising interval, RSSI jitter, so the D-Bus traffic grows with the crowd),",
                     "scanned with each library's defaults (no filter). Time until 95 % are discovered; then client CPU over \(Int(options.scanWindow)) s of",
                     "steady scanning; resident memory added per device. \(options.scanRounds) rounds, clients alternating; medians.", "",
                     "| Advertisers | Client | 95 % discovered, ms | CPU ms per s of scanning | bytes per device | BleKit ÷ bleak CPU (rounds) |",
                     "|---:|---|---:|---:|---:|---:|"]
        for row in rows {
            let ratio = row.kind == "BleKit" ? ratios[row.size].map { String(format: "%.2f (%.2f – %.2f)", median($0), $0.min() ?? 0, $0.max() ?? 0) } ?? "" : ""
            lines.append(String(format: "| %d | %@ | %.0f | %.1f | %.0f | %@ |", row.size, row.kind, median(row.discovered), median(row.cpu),
                                median(row.memory), ratio))
        }
        // Linear growth: CPU per second of scanning against advertisers, least squares.
        let mine = rows.filter { $0.kind == "BleKit" }
        if mine.count >= 2 {
            let xs: [Double] = mine.map { Double($0.size) }
            let ys: [Double] = mine.map { median($0.cpu) }
            let mx: Double = xs.reduce(0, +) / Double(xs.count)
            let my: Double = ys.reduce(0, +) / Double(ys.count)
            var covariance = 0.0
            var variance = 0.0
            for (x, y) in zip(xs, ys) {
                covariance += (x - mx) * (y - my)
                variance += (x - mx) * (x - mx)
            }
            let slope = covariance / variance
            let perAdvertiser: [Double] = zip(xs, ys).map { pair in pair.1 / pair.0 }
            lines.append("")
            lines.append(String(format: "BleKit's slope: %.3f ms CPU per second per advertiser (least squares); per advertiser at each size: %@ "
                                + "(linear when these stay level). Median CPU ratio to bleak %.2f (issue 15 target ≤ 0.6).",
                                slope, perAdvertiser.map { String(format: "%.3f", $0) }.joined(separator: ", "),
                                median(ratios.values.flatMap { $0 })))
        }
        return lines.joined(separator: "\n")
    }
}
