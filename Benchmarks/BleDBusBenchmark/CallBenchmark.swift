import BleDBus
import Foundation

/// The echo method both sides export: `com.example.Echo.Echo(s) -> s` at `/test`, the same
/// names `dbus_ping.c` uses, so either client can call either server.
enum Echo {
    static let path: ObjectPath = "/test"
    static let interface = "com.example.Echo"
    static let member = "Echo"
    /// A short string, like most BlueZ arguments (an address, a UUID).
    static let payload = "hello, bluetooth"
    /// Unmeasured calls before each measurement, as dbus_ping makes.
    static let warmupCalls = 500

    enum Failure: Error, CustomStringConvertible {
        case wrongReply(String)
        var description: String { "the echo reply was \(self)" }
    }

    /// Exports the echo method on `connection`.
    @BleLoop
    static func export(on connection: Connection) {
        connection.objects.register(path, interfaces: [ExportedInterface(interface, methods: [
            ExportedMethod(member, in: [ArgumentDescription("text", .string)], out: [ArgumentDescription("text", .string)]) { call in
                call.reply(call.arguments)
            },
        ])])
    }

    /// One call, checking the answer as the C client does.
    @BleLoop
    static func call(_ client: Connection, destination: String) async throws {
        let reply = try await client.call(destination: destination, path: path, interface: interface, member: member,
                                          arguments: [.string(payload)])
        guard reply.count == 1, case .string(let text) = reply[0], text == payload else {
            throw Failure.wrongReply(reply.map(\.description).joined(separator: ", "))
        }
    }

    /// `count` calls one after another.
    ///
    /// Runs on the loop, as the BleKit layers above BleDBus do, so each call costs what it
    /// costs them: no executor hop besides the loop's own.
    @BleLoop
    static func sequential(_ client: Connection, destination: String, count: Int) async throws -> Measurement {
        for _ in 0..<warmupCalls { try await call(client, destination: destination) }
        let start = ContinuousClock.now
        let cpu = processCPUSeconds()
        for _ in 0..<count { try await call(client, destination: destination) }
        return Measurement(calls: count, seconds: (ContinuousClock.now - start).seconds, cpuSeconds: processCPUSeconds() - cpu)
    }

    /// `count` calls with `depth` in flight at all times: `depth` tasks on the loop, each
    /// calling in turn.
    @BleLoop
    static func pipelined(_ client: Connection, destination: String, count: Int, depth: Int) async throws -> Measurement {
        try await inFlight(client, destination: destination, count: warmupCalls, depth: depth)
        let start = ContinuousClock.now
        let cpu = processCPUSeconds()
        try await inFlight(client, destination: destination, count: count, depth: depth)
        return Measurement(calls: count, seconds: (ContinuousClock.now - start).seconds, cpuSeconds: processCPUSeconds() - cpu)
    }

    @BleLoop
    private static func inFlight(_ client: Connection, destination: String, count: Int, depth: Int) async throws {
        // Unstructured lanes rather than a task group: the compiler's region checker cannot
        // yet follow a group whose child closures are @BleLoop inside @BleLoop code.
        var lanes: [Task<Void, any Error>] = []
        for lane in 0..<depth {
            // Spread the remainder so exactly `count` calls are made.
            let calls = count / depth + (lane < count % depth ? 1 : 0)
            lanes.append(Task { @BleLoop in
                for _ in 0..<calls { try await call(client, destination: destination) }
            })
        }
        for lane in lanes { try await lane.value }
    }
}

/// One measured run of calls.
struct Measurement {
    var calls: Int
    var seconds: Double
    /// CPU time of the client and server processes (not dbus-daemon's) during the calls.
    var cpuSeconds: Double
    /// dbus-daemon's CPU time for the same calls: it does the same work per call whoever calls,
    /// so it is a ruler that shrinks and grows with the machine's speed at that moment.
    var daemonCPUSeconds: Double = 0

    var callsPerSecond: Double { Double(calls) / seconds }
    var cpuMicrosecondsPerCall: Double { cpuSeconds / Double(calls) * 1e6 }
    /// Client and server CPU per call in units of the daemon's CPU per call.
    var cpuInDaemonUnits: Double { daemonCPUSeconds > 0 ? cpuSeconds / daemonCPUSeconds : .nan }
}

/// The pid of the `dbus-daemon` whose command line names `configDirectory` (the private bus's).
func daemonPID(configDirectory: String) -> pid_t? {
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
        guard let pid = pid_t(entry),
              let commandLine = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { continue }
        let words = commandLine.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        if words.first?.hasSuffix("dbus-daemon") == true, words.contains(where: { $0.contains(configDirectory) }) {
            return pid
        }
    }
    return nil
}

/// CPU time of this process, every thread, user plus system.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6 +
        Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
}

/// CPU time of another process so far, from `/proc` (clock-tick resolution).
func processCPUSeconds(pid: pid_t) -> Double {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let end = stat.lastIndex(of: ")") else { return 0 }
    // Fields after the command name: state is field 3; utime and stime are 14 and 15.
    let fields = stat[stat.index(after: end)...].split(separator: " ")
    guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double {
        let (whole, fraction) = components
        return Double(whole) + Double(fraction) / 1e18
    }
}
