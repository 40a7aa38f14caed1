import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation

// Does `blekit gateway` keep up with 1,000 advertisers at 100 ms, and what does a published
// advertisement cost it in CPU, beside Theengs Gateway (PyPI) on the same BleSim room and broker?
//
// This process hosts BleSim (one adapter, a crowd whose every report carries its sending time in
// its manufacturer data) and a mosquitto broker. Each round runs each gateway in turn as a child
// process, alone on the room, and counts what reaches a subscriber of the broker
// (Benchmarks/c/mqtt_count, a libmosquitto C program): messages per second and how late each is
// (the subscriber's clock minus the report's stamp). Rounds alternate the order of the gateways,
// and every figure is the median of its rounds, because the machine is shared and drifts.
//
// "Keeping up" means, over the measured window (after a warm-up):
//   - published: messages/s at the subscriber ≥ 95 % of the reports/s BleSim delivered to the
//     scanning adapter (the gateway publishes every advertisement: no interval, no filter), and
//   - bounded lag: the lag does not grow. A gateway that falls behind queues in D-Bus, and its
//     lag grows by the share it misses every second (5 % of 10,000/s missed: +50 ms each second).
//     The slope of the per-second median lag over the window (Theil–Sen, robust to a stalled
//     second) must stay under +25 ms per second: a backlog growing by at most 2.5 % of the
//     offered rate, half the 5 % the published share allows, and over a 20 s window about six
//     times the slope's error from the ±100 ms scheduling jitter of a shared 2-core machine. A
//     gateway still draining its start-up backlog has a negative slope.

struct Options {
    var seconds = 20.0
    // A gateway starting on a crowd first works through a burst (1,000 new devices and the
    // reports queued meanwhile): the window opens once that backlog had time to drain.
    var warmup = 8.0
    var rounds = 3
    var count = 1000
    var theengsPython: String?
    var counter: String?
    var markdown: String?

    init(_ arguments: [String]) throws {
        var index = 1
        func value() throws -> String {
            index += 1
            guard index < arguments.count else { throw BenchmarkError.usage("\(arguments[index - 1]) needs a value") }
            return arguments[index]
        }
        while index < arguments.count {
            switch arguments[index] {
            case "--seconds": seconds = Double(try value()) ?? seconds
            case "--warmup": warmup = Double(try value()) ?? warmup
            case "--rounds": rounds = max(1, Int(try value()) ?? rounds)
            case "--count": count = max(1, Int(try value()) ?? count)
            case "--theengs-python": theengsPython = try value()
            case "--counter": counter = try value()
            case "--markdown": markdown = try value()
            default: throw BenchmarkError.usage("unknown option \(arguments[index])")
            }
            index += 1
        }
    }
}

enum BenchmarkError: Error, CustomStringConvertible {
    case usage(String)
    case failed(String)
    /// The gateway published nothing within its start-up allowance: for the baseline that
    /// loses a round (theengsgateway's scan sometimes never starts), for BleKit's gateway it
    /// fails the benchmark.
    case didNotStart(String)

    var description: String {
        switch self {
        case .usage(let text): return "usage: GatewayBenchmark --counter PATH [--seconds S] [--warmup S] [--rounds N] [--count N] [--theengs-python PATH] [--markdown FILE]: \(text)"
        case .failed(let text), .didNotStart(let text): return text
        }
    }
}

/// One line of mqtt_count's output: a wall-clock second and its messages and lags (µs).
struct CounterSecond {
    var second: Int
    var messages: Int
    var stamped: Int
    var p50: Double
    var p99: Double
    var maximum: Double

    init?(_ line: Substring) {
        let fields = line.split(separator: " ").compactMap { Double($0) }
        guard fields.count == 6 else { return nil }
        second = Int(fields[0])
        messages = Int(fields[1])
        stamped = Int(fields[2])
        p50 = fields[3] / 1000
        p99 = fields[4] / 1000
        maximum = fields[5] / 1000
    }
}

/// What one gateway did in one round.
struct Measurement {
    var gateway: String
    var seconds: Double
    var offeredPerSecond: Double
    var publishedPerSecond: Double
    var cpuSeconds: Double
    /// Seconds runnable but waiting for a CPU, over the window.
    var waitedSeconds: Double
    /// The machine's 1-minute load average at the end of the window.
    var load: Double
    /// Lags in ms: the median second's p50, its slope (ms per second), the worst p99 and maximum.
    var lagMedian: Double
    var lagSlope: Double
    var lagWorstP99: Double
    var lagMaximum: Double
    var stampedShare: Double
    /// The per-second median lags (ms), for the log.
    var lagSeries: [Double]
    /// Seconds from the gateway's start to the first message at the subscriber.
    var firstMessageAfter: Double

    var publishedShare: Double { publishedPerSecond / max(1, offeredPerSecond) }
    var cpuMicrosecondsPerMessage: Double { cpuSeconds / seconds / max(1e-9, publishedPerSecond) * 1e6 }
    var keptUp: Bool { publishedShare >= 0.95 && lagSlope <= 25 }

    var line: String {
        String(format: "%@: offered %.0f/s, published %.0f/s (%.1f %%), lag p50 %.1f ms (slope %+.1f ms/s), worst p99 %.1f ms, max %.1f ms; CPU %.3f cores, %.1f µs per published advertisement%@",
               gateway, offeredPerSecond, publishedPerSecond, publishedShare * 100, lagMedian, lagSlope,
               lagWorstP99, lagMaximum, cpuSeconds / seconds, cpuMicrosecondsPerMessage, keptUp ? "" : "  (FELL BEHIND)")
            + String(format: "\n    load %.1f; waited for a CPU %.0f %% of the window; first message %.1f s after start; median lag per second (ms): ",
                     load, waitedSeconds / seconds * 100, firstMessageAfter)
            + lagSeries.map { String(format: "%.0f", $0) }.joined(separator: " ")
    }
}

func median(_ values: [Double]) -> Double {
    guard !values.isEmpty else { return .nan }
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// The Theil–Sen slope of `values` against their index (per step): the median of the slopes
/// between every two points, so one second stalled by another process on a shared machine does
/// not tilt it, while a lag that grows second after second does.
func slope(_ values: [Double]) -> Double {
    guard values.count >= 2 else { return .nan }
    var slopes: [Double] = []
    for first in values.indices {
        for second in values.indices where second > first {
            slopes.append((values[second] - values[first]) / Double(second - first))
        }
    }
    return median(slopes)
}

/// utime + stime of a process (all its threads), from /proc/PID/stat, in seconds.
func cpuSeconds(of pid: pid_t) -> Double {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = text.lastIndex(of: ")") else { return 0 }
    let fields = text[text.index(after: close)...].split(separator: " ")
    // After the command: state is field 3, utime 14, stime 15 (1-based over the whole line).
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// Seconds the process's threads spent runnable but waiting for a CPU (the second field of
/// /proc/PID/task/*/schedstat): how much a shared machine starved it, whatever its own cost.
func runQueueSeconds(of pid: pid_t) -> Double {
    guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task") else { return 0 }
    var total = 0.0
    for task in tasks {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/schedstat", encoding: .utf8) else { continue }
        let fields = text.split(separator: " ")
        if fields.count >= 2, let waited = Double(fields[1]) { total += waited / 1e9 }
    }
    return total
}

func realtimeSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_REALTIME, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}

func readSeconds(_ path: String) -> [CounterSecond] {
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
    return text.split(separator: "\n").compactMap(CounterSecond.init)
}

/// A gateway the benchmark can start on the room: its name on the broker and its command line.
struct GatewayUnderTest {
    var name: String
    var arguments: [String]
    var environment: [String: String]?
    /// Sends SIGTERM and returns the gateway's own verdict, if it prints one.
    var verdictOnStop: Bool
}

@BleLoop
func measure(_ gateway: GatewayUnderTest, options: Options, broker: MosquittoBroker, simulator: Simulator,
             scratch: URL) async throws -> Measurement {
    let file = scratch.appendingPathComponent("\(gateway.name)-\(UUID().uuidString).txt").path
    guard let counterPath = options.counter else { throw BenchmarkError.usage("--counter is required") }
    let counter = try ChildProcess(arguments: [counterPath, "127.0.0.1", String(broker.port), "home/\(gateway.name)/BTtoMQTT/+", file])
    defer { counter.stop(with: SIGTERM) }
    guard counter.readLine(timeout: 10)?.hasPrefix("subscribed") == true else {
        throw BenchmarkError.failed("mqtt_count did not subscribe")
    }
    let stderrPath = scratch.appendingPathComponent("\(gateway.name)-stderr.txt").path
    let child = try ChildProcess(arguments: gateway.arguments, environment: gateway.environment, standardErrorPath: stderrPath)
    var stopped = false
    defer { if !stopped { child.stop(with: SIGKILL) } }
    // Warm-up: from the first message at the broker (Python's start-up and bleak's set-up take
    // seconds), then `warmup` seconds more, so the window sees the steady state.
    let launched = ContinuousClock.now
    let deadline = launched + .seconds(120)
    while readSeconds(file).allSatisfy({ $0.messages == 0 }) {
        guard ContinuousClock.now < deadline else {
            let log = (try? String(contentsOfFile: stderrPath, encoding: .utf8))?.suffix(800) ?? ""
            throw BenchmarkError.didNotStart("\(gateway.name) published nothing within 120 s; its stderr ends: \(log)")
        }
        try await Task.sleep(for: .milliseconds(200))
    }
    let firstMessage = ContinuousClock.now - launched
    try await Task.sleep(for: .seconds(options.warmup))
    simulator.resetAdvertisingStatistics()
    let cpuBefore = cpuSeconds(of: child.pid)
    let waitedBefore = runQueueSeconds(of: child.pid)
    let start = ContinuousClock.now
    let startWall = realtimeSeconds()
    try await Task.sleep(for: .seconds(options.seconds))
    let cpu = cpuSeconds(of: child.pid) - cpuBefore
    let waited = runQueueSeconds(of: child.pid) - waitedBefore
    let load = Double(loadAverage().split(separator: " ").first ?? "") ?? .nan
    let elapsed = ContinuousClock.now - start
    let endWall = realtimeSeconds()
    let offered = simulator.advertisingStatistics.reports
    // The counter writes a second once it is over: wait for the window's last one.
    let lastWhole = Int(endWall.rounded(.down)) - 1
    let flushDeadline = ContinuousClock.now + .seconds(5)
    while !readSeconds(file).contains(where: { $0.second >= lastWhole }) && ContinuousClock.now < flushDeadline {
        try await Task.sleep(for: .milliseconds(100))
    }
    kill(child.pid, SIGTERM)
    let (status, output) = child.runToCompletion(timeout: 20)
    stopped = true
    if gateway.verdictOnStop {
        let verdict = output.split(separator: "\n").last.map(String.init) ?? ""
        print("  \(gateway.name)'s own verdict: \(verdict) (exit \(status.map(String.init) ?? "killed"))")
    }
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    // Whole wall-clock seconds inside the window only.
    let firstWhole = Int(startWall.rounded(.up))
    let inside = readSeconds(file).filter { $0.second >= firstWhole && $0.second <= lastWhole }
    guard inside.count >= 3 else { throw BenchmarkError.failed("\(gateway.name): the subscriber saw only \(inside.count) whole seconds") }
    let stamped = inside.filter { $0.stamped > 0 }
    let messages = inside.reduce(0) { $0 + $1.messages }
    return Measurement(gateway: gateway.name, seconds: seconds, offeredPerSecond: Double(offered) / seconds,
                       publishedPerSecond: Double(messages) / Double(inside.count), cpuSeconds: cpu,
                       waitedSeconds: waited, load: load,
                       lagMedian: median(stamped.map(\.p50)), lagSlope: slope(stamped.map(\.p50)),
                       lagWorstP99: stamped.map(\.p99).max() ?? .nan, lagMaximum: stamped.map(\.maximum).max() ?? .nan,
                       stampedShare: Double(inside.reduce(0) { $0 + $1.stamped }) / Double(max(1, messages)),
                       lagSeries: stamped.map(\.p50),
                       firstMessageAfter: Double(firstMessage.components.seconds) + Double(firstMessage.components.attoseconds) / 1e18)
}

func loadAverage() -> String {
    ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "").split(separator: " ").prefix(3).joined(separator: " ")
}

@BleLoop
func run(_ options: Options) async throws -> Int32 {
    let bus = try PrivateBus()
    defer { bus.stop() }
    let crowd = #"{"adapters": [{"name": "hci0", "address": "00:AA:01:00:00:00"}], "crowd": {"count": \#(options.count), "interval": 100, "rssi": -70, "rssiJitter": 8, "timestamped": true}}"#
    let simulator = try Scenario.parse(Data(crowd.utf8), name: "crowd").makeSimulator()
    try await simulator.start(on: bus.busAddress)
    defer { simulator.stop(.kill) }
    let broker = try MosquittoBroker()
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-gateway-bench-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: scratch) }
    let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    let blekit = directory.appendingPathComponent("blekit").path
    guard FileManager.default.isExecutableFile(atPath: blekit) else {
        throw BenchmarkError.failed("\(blekit) is missing; build the blekit product in the same configuration")
    }
    var gateways = [GatewayUnderTest(name: "BleKitBench",
                                     arguments: [blekit, "gateway", "--bus", bus.address, "--adapter", "hci0", "--broker", "127.0.0.1:\(broker.port)",
                                                 "--name", "BleKitBench"],
                                     environment: nil, verdictOnStop: true)]
    if let python = options.theengsPython {
        let home = scratch.appendingPathComponent("theengs-home")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus.address
        environment["HOME"] = home.path
        // Every advertisement published as it comes (-pa 1: undecoded ones too; -D 0: no
        // discovery, which would publish Home Assistant configs instead), one long scan
        // (-sd 3600 -tb 0), active with DuplicateData off as Theengs sets it, and the raw fields
        // kept in the message (-padv 1) so the subscriber finds the stamp.
        gateways.append(GatewayUnderTest(name: "TheengsBench",
                                         arguments: [python, "-m", "TheengsGateway", "-c", home.appendingPathComponent("theengsgw.conf").path,
                                                     "-H", "127.0.0.1", "-P", String(broker.port), "-a", "hci0", "-pa", "1", "-padv", "1",
                                                     "-D", "0", "-sd", "3600", "-tb", "0", "-s", "active", "-gs", "0",
                                                     "-pt", "home/TheengsBench/BTtoMQTT", "-Lt", "home/TheengsBench/LWT", "-ll", "INFO"],
                                         environment: environment, verdictOnStop: false))
    } else {
        print("Theengs Gateway baseline skipped: PyPI unreachable (scripts/gateway-python)")
    }
    let loadBefore = loadAverage()
    print("room: \(options.count) advertisers at 100 ms (\(options.count * 10) reports/s scheduled, each stamped); \(options.rounds) rounds, "
        + "\(String(format: "%.0f", options.seconds)) s measured per gateway after the first message and \(String(format: "%.0f", options.warmup)) s warm-up; load \(loadBefore)")
    var results: [String: [Measurement]] = [:]
    // Per round, what each gateway measured: the CPU ratio pairs the two gateways of one round.
    var rounds: [[String: Measurement]] = []
    var roundLines: [String] = []
    for round in 1...options.rounds {
        let order = round % 2 == 1 ? gateways : gateways.reversed()
        var measured: [String: Measurement] = [:]
        for gateway in order {
            let result: Measurement
            do {
                result = try await measure(gateway, options: options, broker: broker, simulator: simulator, scratch: scratch)
            } catch BenchmarkError.didNotStart(let reason) where gateway.name != "BleKitBench" {
                // The baseline's failure to start says nothing about BleKit: the round counts
                // without it, and the report says so.
                print("round \(round) \(gateway.name): DID NOT START, round not counted for it: \(reason)")
                roundLines.append("round \(round) \(gateway.name): DID NOT START (published nothing within 120 s), round not counted for it")
                continue
            }
            print("round \(round) \(result.line)")
            roundLines.append("round \(round) \(result.line)")
            results[gateway.name, default: []].append(result)
            measured[gateway.name] = result
        }
        rounds.append(measured)
    }
    let loadAfter = loadAverage()
    let blekitRuns = results["BleKitBench"] ?? []
    func spread(_ values: [Double], _ format: String) -> String {
        String(format: format, median(values)) + " (" + String(format: format, values.min() ?? .nan) + "–" + String(format: format, values.max() ?? .nan) + ")"
    }
    var table = [
        "| Gateway | offered/s | published/s | published share | lag p50 (ms) | lag slope (ms/s) | worst p99 (ms) | CPU µs per published advertisement | CPU used (cores) | waited for a CPU | kept up |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for gateway in gateways {
        let runs = results[gateway.name] ?? []
        guard !runs.isEmpty else {
            table.append("| theengsgateway | did not start in any of \(options.rounds) rounds |" + String(repeating: " — |", count: 9))
            continue
        }
        table.append("| \(gateway.name == "BleKitBench" ? "blekit gateway" : "theengsgateway") | \(spread(runs.map(\.offeredPerSecond), "%.0f")) | "
            + "\(spread(runs.map(\.publishedPerSecond), "%.0f")) | \(spread(runs.map { $0.publishedShare * 100 }, "%.1f %%")) | "
            + "\(spread(runs.map(\.lagMedian), "%.1f")) | \(spread(runs.map(\.lagSlope), "%+.1f")) | \(spread(runs.map(\.lagWorstP99), "%.0f")) | "
            + "\(spread(runs.map(\.cpuMicrosecondsPerMessage), "%.1f")) | \(spread(runs.map { $0.cpuSeconds / $0.seconds }, "%.2f")) | "
            + "\(spread(runs.map { $0.waitedSeconds / $0.seconds * 100 }, "%.0f %%")) | \(runs.filter(\.keptUp).count)/\(runs.count) rounds |")
    }
    var summary: [String] = []
    if results["TheengsBench"] != nil {
        let ratios = rounds.compactMap { round -> Double? in
            guard let blekit = round["BleKitBench"], let theengs = round["TheengsBench"] else { return nil }
            return theengs.cpuMicrosecondsPerMessage / blekit.cpuMicrosecondsPerMessage
        }
        summary.append("CPU per published advertisement, theengsgateway / blekit gateway: " + spread(ratios, "%.1f×") + " (median of the rounds' ratios, range)")
    }
    let keptUp = blekitRuns.filter(\.keptUp).count * 2 > blekitRuns.count
    summary.append(keptUp ? "VERDICT: blekit gateway kept up (published ≥ 95 % of offered, lag not growing) in \(blekitRuns.filter(\.keptUp).count)/\(blekitRuns.count) rounds"
                          : "VERDICT: blekit gateway FELL BEHIND in \(blekitRuns.count - blekitRuns.filter(\.keptUp).count)/\(blekitRuns.count) rounds")
    print("")
    table.forEach { print($0) }
    print("")
    summary.forEach { print($0) }
    if let path = options.markdown {
        let header = [
            "- Load average (1, 5, 15 min) before: \(loadBefore); after: \(loadAfter)",
            "- \(options.count) advertisers at 100 ms, \(options.rounds) rounds, \(String(format: "%.0f", options.seconds)) s measured per gateway and round; medians, (min–max) over the rounds",
            "",
        ]
        let rounds = ["", "Each round (the lag per second shows when a gateway fell behind; *waited* when the machine starved it):", "", "```"]
            + roundLines + ["```"]
        try (header + table + [""] + summary.map { "- \($0)" } + rounds).joined(separator: "\n").appending("\n").write(toFile: path, atomically: true, encoding: .utf8)
    }
    return keptUp ? 0 : 1
}

do {
    let options = try Options(CommandLine.arguments)
    exit(try await run(options))
} catch {
    FileHandle.standardError.write(Data("GatewayBenchmark: \(error)\n".utf8))
    exit(1)
}
