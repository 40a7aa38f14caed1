import BleDBus
import BleSim
import BleTestSupport
import Foundation
import BlueZVocabulary

// Can BleSim keep 1,000 advertisers at 100 ms on one core? The crowd is heard by a scanning
// adapter with a filter set and DuplicateData on, so every report becomes a PropertiesChanged
// signal, which a client in this process receives. Baselines, measured in the same run: the
// reports the schedule calls for (1,000 × seconds / 0.1 s), and one core (CPU s per wall s).

@BleLoop
final class SignalCounter {
    var received = 0
}

@BleLoop
func run(seconds: Double, count: Int) async throws -> String {
    let bus = try PrivateBus()
    defer { bus.stop() }
    let crowd = """
    {"crowd": {"count": \(count), "interval": 100, "rssi": -70, "rssiJitter": 8}}
    """
    let scenario = try Scenario.parse(Data(crowd.utf8), name: "crowd")
    let simulator = scenario.makeSimulator()
    try await simulator.start(on: bus.busAddress)
    defer { simulator.stop(.kill) }
    let client = try await Connection.open(bus.busAddress)
    defer { client.close() }
    let counter = SignalCounter()
    let subscription = try client.signals.subscribe(SignalMatch(sender: "org.bluez")) { _ in counter.received += 1 }
    defer { subscription.cancel() }
    _ = try await client.call(destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.bluez.Adapter1",
                              member: "SetDiscoveryFilter",
                              arguments: [BlueZShapes.propertyDictionary([("DuplicateData", .boolean(true)), ("Transport", .string("le"))])])
    _ = try await client.call(destination: "org.bluez", path: "/org/bluez/hci0", interface: "org.bluez.Adapter1", member: "StartDiscovery")
    // Let every device object appear first: the steady state is what is measured.
    try await Task.sleep(for: .seconds(1))
    simulator.resetAdvertisingStatistics()
    let signalsBefore = counter.received
    let cpuBefore = cpuSeconds()
    let start = ContinuousClock.now
    try await Task.sleep(for: .seconds(seconds))
    let wall = ContinuousClock.now - start
    let cpu = cpuSeconds() - cpuBefore
    let stats = simulator.advertisingStatistics
    let signals = counter.received - signalsBefore
    let wallSeconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18
    let expected = Double(count) * wallSeconds / 0.1
    let lagMilliseconds = Double(stats.maximumLag.components.seconds) * 1000 + Double(stats.maximumLag.components.attoseconds) / 1e15
    return String(format: """
    advertisers: %d at 100 ms for %.1f s
    reports delivered / scheduled: %d / %.0f = %.3f
    PropertiesChanged received by the client: %d (%.0f per s)
    worst report lateness: %.1f ms (tick %d ms)
    CPU of simulator + client + decoding, per wall second: %.3f cores (baseline: 1 core)
    """, count, wallSeconds, stats.reports, expected, Double(stats.reports) / expected, signals, Double(signals) / wallSeconds,
                  lagMilliseconds, 10, cpu / wallSeconds)
}

func cpuSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

let arguments = CommandLine.arguments
let seconds = arguments.firstIndex(of: "--seconds").flatMap { Double(arguments[$0 + 1]) } ?? 10
let count = arguments.firstIndex(of: "--count").flatMap { Int(arguments[$0 + 1]) } ?? 1000
do {
    print(try await run(seconds: seconds, count: count))
} catch {
    FileHandle.standardError.write(Data("SimulatorBenchmark: \(error)\n".utf8))
    exit(1)
}
