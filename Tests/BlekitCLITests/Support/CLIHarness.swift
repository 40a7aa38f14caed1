import BleDBus
import BleSim
import BleTestSupport
import Foundation

/// BleSim on a private bus serving a scenario, for running `blekit` against it.
final class SimulatedRoom: @unchecked Sendable {
    let bus: PrivateBus
    let simulator: Simulator

    private init(bus: PrivateBus, simulator: Simulator) {
        self.bus = bus
        self.simulator = simulator
    }

    /// Starts a private bus and BleSim with the scenario given as JSON.
    static func start(_ json: String) async throws -> SimulatedRoom {
        let bus = try await PrivateBus.start()
        do {
            let scenario = try Scenario.parse(Data(json.utf8), name: "test scenario")
            let simulator = await scenario.makeSimulator()
            try await simulator.start(on: bus.busAddress)
            return SimulatedRoom(bus: bus, simulator: simulator)
        } catch {
            bus.stop()
            throw error
        }
    }

    /// Stops BleSim and the bus.
    func stop() async {
        await simulator.stop(.clean)
        bus.stop()
    }

    /// Runs blekit against this room: `--bus` is added.
    func blekit(_ arguments: [String], timeout: TimeInterval = 60, environment: [String: String]? = nil) async throws -> CLIRun {
        try await CLIRun.run(arguments + ["--bus", bus.address], timeout: timeout, environment: environment)
    }
}

/// One finished run of `blekit`.
struct CLIRun: Sendable {
    /// The exit status (nil when it had to be killed at the deadline).
    let status: Int32?
    let output: String
    let errors: String

    /// The built `blekit`, next to the test bundle.
    static var executable: String? {
        let me = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0])
        let candidate = me.deletingLastPathComponent().appendingPathComponent("blekit").path
        return FileManager.default.isExecutableFile(atPath: candidate) ? candidate : nil
    }

    struct NotBuilt: Error, CustomStringConvertible {
        var description: String { "blekit is not built next to the test bundle (swift build --build-tests builds it)" }
    }

    /// The environment blekit runs in: ours, with its name memory (`XDG_CACHE_HOME`) in a
    /// directory of this test process, never the user's.
    static let environment: [String: String] = {
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CACHE_HOME"] = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-cli-cache-\(getpid())").path
        return environment
    }()

    /// `environment` with a cache directory of its own: a run that remembers nothing yet.
    static func freshEnvironment() -> [String: String] {
        var fresh = environment
        fresh["XDG_CACHE_HOME"] = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-cli-cache-\(UUID().uuidString)").path
        return fresh
    }

    /// Runs blekit with `arguments` off the cooperative pool (the wait blocks a thread).
    static func run(_ arguments: [String], timeout: TimeInterval = 60, environment: [String: String]? = nil,
                    executable program: String? = nil) async throws -> CLIRun {
        guard let executable = program ?? executable else { throw NotBuilt() }
        let errorsPath = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-cli-\(UUID().uuidString).err").path
        let child = try ChildProcess(arguments: [executable] + arguments, environment: environment ?? Self.environment, standardErrorPath: errorsPath)
        let result = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: child.runToCompletion(timeout: timeout)) }
        }
        let errors = (try? String(contentsOfFile: errorsPath, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: errorsPath)
        return CLIRun(status: result.status, output: result.output, errors: errors)
    }

    /// Everything it printed, for failure messages.
    var transcript: String { "status \(status.map(String.init) ?? "killed")\n--- stdout\n\(output)\n--- stderr\n\(errors)" }
}

/// A `blekit` running in the background (notify), stopped with a signal.
final class RunningCLI: @unchecked Sendable {
    let child: ChildProcess
    let errorsPath: String

    init(_ arguments: [String], environment: [String: String] = CLIRun.environment) throws {
        guard let executable = CLIRun.executable else { throw CLIRun.NotBuilt() }
        errorsPath = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-cli-\(UUID().uuidString).err").path
        child = try ChildProcess(arguments: [executable] + arguments, environment: environment, standardErrorPath: errorsPath)
    }

    /// The next line of its output, or nil at the deadline.
    func line(timeout: TimeInterval = 20) async -> String? {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: self.child.readLine(timeout: timeout)) }
        }
    }

    /// Sends `signal`, then collects the rest of its output and its status.
    func stop(with signal: Int32, timeout: TimeInterval = 20) async -> CLIRun {
        kill(child.pid, signal)
        let result = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: self.child.runToCompletion(timeout: timeout)) }
        }
        let errors = (try? String(contentsOfFile: errorsPath, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: errorsPath)
        return CLIRun(status: result.status, output: result.output, errors: errors)
    }
}

/// The scenarios the CLI tests use.
enum Rooms {
    static let heartRate = #"""
    {"timing": {"scale": 0.2}, "peripherals": [
      {"address": "C0:FF:EE:00:00:02", "name": "HR-Strap", "rssi": -55, "serviceUUIDs": ["180d"],
       "manufacturerData": {"0x004c": "0215"},
       "services": [
         {"uuid": "180d", "characteristics": [
           {"uuid": "2a37", "flags": ["notify"], "value": "0048"},
           {"uuid": "2a38", "flags": ["read"], "value": "01"}]},
         {"uuid": "180f", "characteristics": [{"uuid": "2a19", "flags": ["read", "notify"], "value": "5a"}]},
         {"uuid": "180a", "characteristics": [
           {"uuid": "2a29", "flags": ["read"], "value": "41636d65"},
           {"uuid": "2a50", "flags": ["read"], "value": "01590034122105"}]}],
       "rules": [{"on": {"every": 200}, "then": [{"notify": "2a37", "value": "1648"}]}]},
      {"address": "C0:FF:EE:00:00:01", "name": "LED-Status", "rssi": -40, "serviceUUIDs": ["ff00"],
       "manufacturerData": {"0x0059": "0102"},
       "services": [{"uuid": "ff00", "characteristics": [
         {"uuid": "ff01", "flags": ["read", "write", "write-without-response"], "value": "00"},
         {"uuid": "ff02", "flags": ["read", "notify"], "value": "00"}]}],
       "rules": [{"on": {"write": "ff01"}, "then": [{"echo": "ff02"}]}]},
      {"address": "C0:FF:EE:00:00:09", "name": "Far-Away", "rssi": -92, "serviceUUIDs": ["1809"]}
    ]}
    """#
}
