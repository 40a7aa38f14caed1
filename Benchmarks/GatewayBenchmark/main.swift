import BleCore
import BleDBus
import BleGateway
import BleSim
import BleTestSupport
import Foundation

// Does `blekit gateway` keep up with 1,000 advertisers at 100 ms, and what does a published
// advertisement cost it in CPU, beside Theengs Gateway (PyPI) on the same BleSim room and broker?
// Both run as child processes, one after the other, scanning the same simulated adapter; this
// process hosts BleSim and counts what reaches the broker. Baselines, in the same run: the
// reports BleSim delivered in the window (what "keeping up" is measured against) and Theengs
// Gateway's CPU per message.

/// The broker's own count of PUBLISH packets received, from `$SYS` (every second with
/// `sys_interval 1`): what reached the broker, whoever is slow to read it.
@BleLoop
final class BrokerCounter {
    var samples: [(at: ContinuousClock.Instant, received: Int)] = []
    let client: MQTTClient

    init(port: Int32) throws {
        client = try MQTTClient(options: MQTTOptions(host: "127.0.0.1", port: port, clientID: "bench-counter", offlineBufferCapacity: 10))
        client.subscribe("$SYS/broker/publish/messages/received", qos: 0)
        client.onMessage = { [weak self] message in
            guard let value = Int(String(decoding: message.payload, as: UTF8.self)) else { return }
            self?.samples.append((ContinuousClock.now, value))
        }
        client.start()
    }

    /// Publishes per second between the first sample after `start` and the last before `end`.
    func rate(from start: ContinuousClock.Instant, to end: ContinuousClock.Instant) -> (perSecond: Double, seconds: Double) {
        let inside = samples.filter { $0.at >= start && $0.at <= end }
        guard let first = inside.first, let last = inside.last, last.at > first.at else { return (0, 0) }
        let span = last.at - first.at
        let seconds = Double(span.components.seconds) + Double(span.components.attoseconds) / 1e18
        return (Double(last.received - first.received) / seconds, seconds)
    }
}

struct Measurement {
    var name: String
    var seconds: Double
    var delivered: Int
    var publishedPerSecond: Double
    var cpuSeconds: Double

    var deliveredPerSecond: Double { Double(delivered) / seconds }
    var cpuPerMessage: Double { cpuSeconds / seconds / max(1e-9, publishedPerSecond) }

    var line: String {
        String(format: "%@: %.0f published/s for %.0f reports/s delivered by BleSim (%.3f), CPU %.3f cores, %.1f µs CPU per published advertisement",
               name, publishedPerSecond, deliveredPerSecond, publishedPerSecond / max(1, deliveredPerSecond),
               cpuSeconds / seconds, cpuPerMessage * 1e6)
    }
}

/// utime + stime of a process, from /proc/PID/stat, in seconds.
func cpuSeconds(of pid: pid_t) -> Double {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = text.lastIndex(of: ")") else { return 0 }
    let fields = text[text.index(after: close)...].split(separator: " ")
    // After the command: state is field 3, utime 14, stime 15 (1-based over the whole line).
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

@BleLoop
func measure(_ name: String, child: ChildProcess, simulator: Simulator, counter: BrokerCounter,
             warmup: Double, seconds: Double) async throws -> Measurement {
    try await Task.sleep(for: .seconds(warmup))
    simulator.resetAdvertisingStatistics()
    let cpuBefore = cpuSeconds(of: child.pid)
    let start = ContinuousClock.now
    try await Task.sleep(for: .seconds(seconds))
    let end = ContinuousClock.now
    let cpu = cpuSeconds(of: child.pid) - cpuBefore
    let delivered = simulator.advertisingStatistics.reports
    let elapsed = end - start
    let wall = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    return Measurement(name: name, seconds: wall, delivered: delivered, publishedPerSecond: counter.rate(from: start, to: end).perSecond, cpuSeconds: cpu)
}

@BleLoop
func run(seconds: Double, count: Int, theengsPython: String?) async throws -> Int32 {
    let bus = try PrivateBus()
    defer { bus.stop() }
    let crowd = #"{"adapters": [{"name": "hci0", "address": "00:AA:01:00:00:00"}], "crowd": {"count": \#(count), "interval": 100, "rssi": -70, "rssiJitter": 8}}"#
    let simulator = try Scenario.parse(Data(crowd.utf8), name: "crowd").makeSimulator()
    try await simulator.start(on: bus.busAddress)
    defer { simulator.stop(.kill) }
    let broker = try MosquittoBroker()
    let counter = try BrokerCounter(port: broker.port)
    defer { counter.client.close() }
    let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    let blekit = directory.appendingPathComponent("blekit").path
    guard FileManager.default.isExecutableFile(atPath: blekit) else {
        FileHandle.standardError.write(Data("GatewayBenchmark: \(blekit) is missing; build the blekit product in the same configuration\n".utf8))
        return 1
    }
    print("room: \(count) advertisers at 100 ms (\(count * 10) reports/s scheduled); \(String(format: "%.0f", seconds)) s per gateway after 3 s warm-up")
    let warmup = 3.0
    let gateway = try ChildProcess(arguments: [blekit, "gateway", "--bus", bus.address, "--adapter", "hci0", "--broker", "127.0.0.1:\(broker.port)",
                                               "--name", "BleKitBench", "--timeout", String(seconds + warmup + 1)], standardErrorPath: nil)
    let blekitResult = try await measure("BleKitBench", child: gateway, simulator: simulator, counter: counter, warmup: warmup, seconds: seconds)
    let (status, output) = gateway.runToCompletion(timeout: 30)
    print(blekitResult.line)
    print("  blekit gateway's own verdict: \(output.split(separator: "\n").last ?? "") (exit \(status.map(String.init) ?? "killed"))")
    let keepsUp = blekitResult.publishedPerSecond >= blekitResult.deliveredPerSecond * 0.95
    var verdict: Int32 = keepsUp && status == 0 ? 0 : 1

    if let theengsPython {
        let home = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-theengs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: home) }
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus.address
        environment["HOME"] = home.path
        let theengs = try ChildProcess(arguments: [theengsPython, "-m", "TheengsGateway", "-H", "127.0.0.1", "-P", String(broker.port),
                                                   "-a", "hci0", "-pa", "1", "-D", "0", "-sd", "3600", "-tb", "0", "-s", "active",
                                                   "-pt", "home/TheengsGW/BTtoMQTT", "-Lt", "home/TheengsGW/LWT", "-ll", "ERROR"],
                                       environment: environment, standardErrorPath: home.appendingPathComponent("stderr").path)
        let theengsResult = try await measure("TheengsGW", child: theengs, simulator: simulator, counter: counter, warmup: warmup + 2, seconds: seconds)
        theengs.stop(with: SIGTERM)
        print(theengsResult.line)
        if theengsResult.publishedPerSecond > 0 && blekitResult.publishedPerSecond > 0 {
            let ratio = theengsResult.cpuPerMessage / blekitResult.cpuPerMessage
            print(String(format: "CPU per published advertisement: Theengs Gateway / BleKit = %.1f×", ratio))
        } else {
            print("Theengs Gateway published nothing; its stderr: \((try? String(contentsOf: home.appendingPathComponent("stderr"), encoding: .utf8))?.suffix(600) ?? "")")
            verdict = 1
        }
    } else {
        print("Theengs Gateway baseline skipped: PyPI unreachable (scripts/gateway-python)")
    }
    print(keepsUp ? "VERDICT: blekit gateway kept up (≥ 95 % of delivered reports published)"
                  : "VERDICT: blekit gateway FELL BEHIND (< 95 % of delivered reports published)")
    return verdict
}

let arguments = CommandLine.arguments
let seconds = arguments.firstIndex(of: "--seconds").flatMap { Double(arguments[$0 + 1]) } ?? 10
let count = arguments.firstIndex(of: "--count").flatMap { Int(arguments[$0 + 1]) } ?? 1000
let python = arguments.firstIndex(of: "--theengs-python").map { arguments[$0 + 1] }
do {
    exit(try await run(seconds: seconds, count: count, theengsPython: python))
} catch {
    FileHandle.standardError.write(Data("GatewayBenchmark: \(error)\n".utf8))
    exit(1)
}
