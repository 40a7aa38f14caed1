import BenchmarkSupport
import BleDBus
import BleTestSupport
import Foundation
import BlueZVocabulary

// BleDBus benchmark: method-call round trips and GetManagedObjects decoding, each against a
// libdbus C baseline (Benchmarks/c/dbus_ping.c) measured in the same run, on the same private
// dbus-daemon. Run through Benchmarks/run, which builds both and writes Benchmarks/RESULTS.md;
// this program prints the Markdown body of that file and its progress on stderr.

struct Options {
    var cBinary = ""
    var calls = 20_000
    var depth = 64
    var rounds = 5
    var devices = 1_000
    var gattObjectsPerDevice = 20
    var decodeIterations = 5
    var decodeRounds = 3
    var skipCalls = false
    var skipDecode = false
    /// Only these call configurations (e.g. `blekit.seq`), for profiling one of them.
    var only: Set<String> = []

    static let usage = """
        usage: BleDBusBenchmark --c-binary PATH [--calls N] [--depth N] [--rounds N] [--devices N]
                                [--gatt-objects N] [--decode-iterations N] [--decode-rounds N]
                                [--skip-calls] [--skip-decode] [--only KEY,KEY…]
        Call configuration keys: blekit.seq c.seq c1.seq blekit.pipe c.pipe c1.pipe,
        and the mixed pairs blekit-c.seq c-blekit.seq blekit-c.pipe c-blekit.pipe.
        """

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        func number(_ flag: String) throws -> Int {
            guard let text = rest.popFirst(), let value = Int(text), value > 0 else { throw UsageError("\(flag) needs a positive number") }
            return value
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--c-binary":
                guard let path = rest.popFirst() else { throw UsageError("--c-binary needs a path") }
                cBinary = path
            case "--calls": calls = try number(flag)
            case "--depth": depth = try number(flag)
            case "--rounds": rounds = try number(flag)
            case "--devices": devices = try number(flag)
            case "--gatt-objects": gattObjectsPerDevice = try number(flag)
            case "--decode-iterations": decodeIterations = try number(flag)
            case "--decode-rounds": decodeRounds = try number(flag)
            case "--skip-calls": skipCalls = true
            case "--skip-decode": skipDecode = true
            case "--only":
                guard let keys = rest.popFirst() else { throw UsageError("--only needs configuration keys") }
                only = Set(keys.split(separator: ",").map(String.init))
            default: throw UsageError("unknown option \(flag)")
            }
        }
        guard !cBinary.isEmpty else { throw UsageError("--c-binary is required (Benchmarks/run builds it)") }
        guard FileManager.default.isExecutableFile(atPath: cBinary) else { throw UsageError("\(cBinary) is not executable") }
    }
}

struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ text: String) { description = text + "\n" + Options.usage }
}

func progress(_ text: String) {
    FileHandle.standardError.write(Data("bench: \(text)\n".utf8))
}

func median(_ samples: [Double]) -> Double {
    let sorted = samples.sorted()
    guard !sorted.isEmpty else { return .nan }
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

func format(_ value: Double, _ decimals: Int = 0) -> String { String(format: "%.\(decimals)f", value) }

// MARK: Calls

/// Every configuration's measurements, one per round, keyed by configuration.
struct CallResults {
    var samples: [String: [Measurement]] = [:]
    var only: Set<String> = []
    /// The private bus's daemon, whose CPU time each measurement records too.
    var daemon: pid_t?
    /// The share of a run's server and daemon CPU time that the measured calls (not the
    /// warm-up) account for.
    var measuredShare = 1.0

    /// Measures `key` unless `--only` left it out.
    mutating func add(_ key: String, _ measure: () async throws -> Measurement) async rethrows {
        guard only.isEmpty || only.contains(key) else { return }
        let before = daemon.map { processCPUSeconds(pid: $0) } ?? 0
        var measurement = try await measure()
        if let daemon { measurement.daemonCPUSeconds = (processCPUSeconds(pid: daemon) - before) * measuredShare }
        samples[key, default: []].append(measurement)
    }

    func rates(_ key: String) -> [Double] { (samples[key] ?? []).map(\.callsPerSecond) }
    func rate(_ key: String) -> Double { median(rates(key)) }
    func cpu(_ key: String) -> Double { median((samples[key] ?? []).map(\.cpuMicrosecondsPerCall)) }
    func cpuInDaemonUnits(_ key: String) -> Double { median((samples[key] ?? []).map(\.cpuInDaemonUnits)) }
    func ratios(_ numerator: String, _ denominator: String) -> [Double] {
        zip(rates(numerator), rates(denominator)).map { $0 / $1 }
    }
}

func runCalls(_ options: Options, bus: PrivateBus) async throws -> CallResults {
    let server = try await Connection.open(bus.busAddress)
    let client = try await Connection.open(bus.busAddress)
    await Echo.export(on: server)
    let bleKitServer = await server.uniqueName

    let cServer = try Subprocess([options.cBinary, "serve", bus.address])
    defer { cServer.finish() }
    guard let cServerName = cServer.readLine(timeout: 10), cServerName.hasPrefix(":") else {
        throw Subprocess.Failure.noOutput("dbus_ping serve")
    }
    let timeout = Double(options.calls) / 500 + 60
    // A server's CPU time is read around the whole run, warm-up included: count its share.
    let measuredShare = Double(options.calls) / Double(options.calls + Echo.warmupCalls)

    /// A dbus_ping client run; `serverCPU` reads the CPU time of the server it calls, if that
    /// server is another process than the client.
    func c(_ arguments: [String], serverCPU: (() -> Double)?) throws -> Measurement {
        let before = serverCPU?() ?? 0
        let line = try Subprocess.run([options.cBinary] + arguments, timeout: timeout)
        let server = ((serverCPU?() ?? 0) - before) * measuredShare
        let fields = keyValues(line)
        guard let calls = fields["calls"], let seconds = fields["seconds"], let cpu = fields["cpu_seconds"] else {
            throw Subprocess.Failure.noOutput(line)
        }
        return Measurement(calls: Int(calls), seconds: seconds, cpuSeconds: cpu + server)
    }
    /// A BleKit client run calling the C server: its CPU is added.
    func bleKitCallingC(_ run: () async throws -> Measurement) async throws -> Measurement {
        let before = processCPUSeconds(pid: cServer.pid)
        var measurement = try await run()
        measurement.cpuSeconds += (processCPUSeconds(pid: cServer.pid) - before) * measuredShare
        return measurement
    }
    let cServerCPU = { processCPUSeconds(pid: cServer.pid) }
    let bleKitServerCPU = { processCPUSeconds() }

    let address = bus.address
    let calls = String(options.calls)
    let depth = String(options.depth)
    var results = CallResults()
    results.only = options.only
    results.daemon = daemonPID(configDirectory: bus.directory.path)
    results.measuredShare = measuredShare
    if results.daemon == nil { progress("dbus-daemon's pid not found: no CPU figures in daemon units") }
    for round in 1...options.rounds {
        progress("calls, round \(round) of \(options.rounds)")
        // Interleaved, so drift on a shared machine touches every configuration alike.
        try await results.add("blekit.seq") { try await Echo.sequential(client, destination: bleKitServer, count: options.calls) }
        try await results.add("c.seq") { try c(["seq", address, cServerName, calls], serverCPU: cServerCPU) }
        try await results.add("c1.seq") { try c(["loop", address, calls, "1"], serverCPU: nil) }
        try await results.add("blekit.pipe") {
            try await Echo.pipelined(client, destination: bleKitServer, count: options.calls, depth: options.depth)
        }
        try await results.add("c.pipe") { try c(["pipe", address, cServerName, calls, depth], serverCPU: cServerCPU) }
        try await results.add("c1.pipe") { try c(["loop", address, calls, depth], serverCPU: nil) }
        // Mixed pairs: which side of BleKit (caller or callee) costs what.
        try await results.add("blekit-c.seq") {
            try await bleKitCallingC { try await Echo.sequential(client, destination: cServerName, count: options.calls) }
        }
        try await results.add("c-blekit.seq") { try c(["seq", address, bleKitServer, calls], serverCPU: bleKitServerCPU) }
        try await results.add("blekit-c.pipe") {
            try await bleKitCallingC { try await Echo.pipelined(client, destination: cServerName, count: options.calls, depth: options.depth) }
        }
        try await results.add("c-blekit.pipe") { try c(["pipe", address, bleKitServer, calls, depth], serverCPU: bleKitServerCPU) }
        let latest = results.samples.sorted { $0.key < $1.key }.compactMap { key, values in
            values.last.map {
                "\(key) \(format($0.callsPerSecond))/s \(format($0.cpuMicrosecondsPerCall, 1))µs \(format($0.cpuInDaemonUnits, 2))d"
            }
        }
        progress(latest.joined(separator: ", "))
    }
    await client.close()
    await server.close()
    return results
}

func callReport(_ results: CallResults, options: Options) -> String {
    let variants = [("seq", "sequential"), ("pipe", "pipelined, \(options.depth) in flight")]
    var text = "## Method-call round trips\n\n"
    text += "`com.example.Echo.Echo(s) -> s` with a 16-byte string, through the private dbus-daemon. "
    text += "\(options.calls) calls per measurement after \(Echo.warmupCalls) warm-up calls, \(options.rounds) interleaved rounds; "
    text += "each figure is the median of the rounds.\n\n"
    text += "| Variant | BleKit calls/s | libdbus C calls/s, client + server processes | ratio | libdbus C calls/s, one thread | ratio | **BleKit ÷ best C** |\n"
    text += "|---|---:|---:|---:|---:|---:|---:|\n"
    for (kind, label) in variants {
        let bleKit = results.rate("blekit.\(kind)")
        let processes = results.rate("c.\(kind)")
        let oneThread = results.rate("c1.\(kind)")
        let best = max(processes, oneThread)
        text += "| \(label) | \(format(bleKit)) | \(format(processes)) | \(format(bleKit / processes, 2)) | \(format(oneThread)) | "
        text += "\(format(bleKit / oneThread, 2)) | **\(format(bleKit / best, 2))** |\n"
    }
    text += "\nPer-round ratios (BleKit ÷ C client + server processes, in round order), to show the spread:\n\n"
    for (kind, label) in variants {
        let ratios = results.ratios("blekit.\(kind)", "c.\(kind)").map { format($0, 2) }.joined(separator: ", ")
        let oneThread = results.ratios("blekit.\(kind)", "c1.\(kind)").map { format($0, 2) }.joined(separator: ", ")
        text += "- \(label): \(ratios) (against the one-thread C: \(oneThread))\n"
    }
    text += "\nCPU time per call, client and server together (dbus-daemon's own time excluded), in µs; "
    text += "less noisy than the rates on a shared machine:\n\n"
    text += "| Variant | BleKit | libdbus C, processes | libdbus C, one thread | BleKit ÷ C processes |\n|---|---:|---:|---:|---:|\n"
    for (kind, label) in variants {
        let bleKit = results.cpu("blekit.\(kind)")
        let processes = results.cpu("c.\(kind)")
        text += "| \(label) | \(format(bleKit, 1)) | \(format(processes, 1)) | \(format(results.cpu("c1.\(kind)"), 1)) | "
        text += "\(format(bleKit / processes, 2)) |\n"
    }
    text += "\nThe same CPU time in units of dbus-daemon's CPU time for the same calls. The daemon does "
    text += "the same work per call whoever calls it, so this ratio does not drift with the machine's load:\n\n"
    text += "| Variant | BleKit | libdbus C, processes | libdbus C, one thread | BleKit ÷ C processes | BleKit ÷ C one thread |\n"
    text += "|---|---:|---:|---:|---:|---:|\n"
    for (kind, label) in variants {
        let bleKit = results.cpuInDaemonUnits("blekit.\(kind)")
        let processes = results.cpuInDaemonUnits("c.\(kind)")
        let oneThread = results.cpuInDaemonUnits("c1.\(kind)")
        text += "| \(label) | \(format(bleKit, 2)) | \(format(processes, 2)) | \(format(oneThread, 2)) | "
        text += "\(format(bleKit / processes, 2)) | \(format(bleKit / oneThread, 2)) |\n"
    }
    text += "\nMixed pairs (diagnostic: which side of BleKit costs what), medians in calls per second (CPU µs per call):\n\n"
    text += "| Variant | BleKit client → C server | C client → BleKit server | C client → C server |\n|---|---:|---:|---:|\n"
    for (kind, label) in variants {
        let cells = ["blekit-c.\(kind)", "c-blekit.\(kind)", "c.\(kind)"].map { "\(format(results.rate($0))) (\(format(results.cpu($0), 1)))" }
        text += "| \(label) | \(cells.joined(separator: " | ")) |\n"
    }
    return text
}

// MARK: Decode

struct DecodeResults {
    var bleKitMessage: [Double] = []
    var bleKitTotal: [Double] = []
    var bleKitRelease: [Double] = []
    var cWalk: [Double] = []
    var cDemarshal: [Double] = []
    var bytes = 0
    var values = 0
    var objects = 0
}

func runDecode(_ options: Options) throws -> DecodeResults {
    progress("building \(options.devices) devices × \(options.gattObjectsPerDevice) GATT objects")
    let value = try ManagedObjectsFixture.value(devices: options.devices, gattObjectsPerDevice: options.gattObjectsPerDevice)
    var message = DBusMessage.methodCall(destination: "org.bluez", path: "/", interface: "org.freedesktop.DBus.ObjectManager",
                                         member: "GetManagedObjects", body: [value])
    // libdbus refuses to demarshal serial 0, which marks a message never sent.
    message.serial = 1
    let wireBytes = try message.wireBytes()
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-bench-\(getpid()).bin")
    try wireBytes.write(to: file)
    defer { try? FileManager.default.removeItem(at: file) }

    var results = DecodeResults()
    results.bytes = wireBytes.count
    results.objects = ManagedObjectsFixture.objectCount(devices: options.devices, gattObjectsPerDevice: options.gattObjectsPerDevice)
    // Unmeasured, as dbus_ping's first round is: page faults and caches are not the decoder's.
    _ = try DecodeBenchmark.measure(wireBytes, expectedObjects: results.objects)
    for round in 1...options.decodeRounds {
        progress("decode, round \(round) of \(options.decodeRounds)")
        let line = try Subprocess.run([options.cBinary, "decode", file.path, String(options.decodeIterations)], timeout: 600)
        let fields = keyValues(line)
        guard let walk = fields["walk_ms"], let demarshal = fields["demarshal_ms"] else { throw Subprocess.Failure.noOutput(line) }
        results.cWalk.append(walk)
        results.cDemarshal.append(demarshal)
        results.values = Int(fields["values"] ?? 0)
        var samples: [DecodeBenchmark.Sample] = []
        for _ in 0..<options.decodeIterations {
            samples.append(try DecodeBenchmark.measure(wireBytes, expectedObjects: results.objects))
        }
        results.bleKitMessage.append(median(samples.map(\.messageMilliseconds)))
        results.bleKitTotal.append(median(samples.map(\.totalMilliseconds)))
        results.bleKitRelease.append(median(samples.map(\.releaseMilliseconds)))
        progress("decode BleKit \(format(results.bleKitTotal.last!, 1)) ms, C walk \(format(walk, 1)) ms")
    }
    return results
}

func decodeReport(_ results: DecodeResults, options: Options) -> String {
    let cWalk = median(results.cWalk)
    let bleKitTotal = median(results.bleKitTotal)
    let bleKitMessage = median(results.bleKitMessage)
    var text = "## Decoding a GetManagedObjects reply\n\n"
    text += "\(options.devices) devices with \(options.gattObjectsPerDevice) GATT objects each (services, characteristics, descriptors) "
    text += "plus the adapter: \(results.objects) objects, \(results.values) D-Bus values, \(results.bytes) bytes on the wire, "
    text += "encoded once with `DBusMessage.methodCall(…).wireBytes()`. Each figure is the median of \(options.decodeRounds) interleaved "
    text += "rounds of \(options.decodeIterations) decodes (per round the median is taken), after one unmeasured decode.\n\n"
    text += "| Step | ms per decode |\n|---|---:|\n"
    text += "| libdbus C: `dbus_message_demarshal` only | \(format(median(results.cDemarshal), 2)) |\n"
    text += "| libdbus C: demarshal + walk every value with `dbus_message_iter_*` (**baseline**) | \(format(cWalk, 2)) |\n"
    text += "| BleKit: `DBusMessage(wireBytes:)` (demarshal + decode into `DBusValue`) | \(format(bleKitMessage, 2)) |\n"
    text += "| BleKit: … + `BlueZShapes.managedObjects` (**the decode**) | \(format(bleKitTotal, 2)) |\n"
    text += "| BleKit: releasing the decoded message and dictionaries (not counted above) | \(format(median(results.bleKitRelease), 2)) |\n\n"
    text += "**Decode ratio (BleKit decode ÷ libdbus iteration): \(format(bleKitTotal / cWalk, 2))×** "
    text += "(`DBusMessage(wireBytes:)` alone: \(format(bleKitMessage / cWalk, 2))×). "
    text += "Per round: \(zip(results.bleKitTotal, results.cWalk).map { format($0 / $1, 2) }.joined(separator: ", ")).\n"
    return text
}

// MARK: Main

if CommandLine.arguments.contains("--help") || CommandLine.arguments.contains("-h") {
    print(Options.usage)
    exit(0)
}

let options: Options
do {
    options = try Options(Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("\(error)\n".utf8))
    exit(64)
}

/// The headline: every ratio against its baseline from this run, and the call-rate target.
func summary(calls: CallResults?, decode: DecodeResults?, options: Options) -> String {
    var text = "## Summary\n\n| Measure | BleKit | baseline (same run) | ratio |\n|---|---:|---:|---:|\n"
    func verdict(_ ratio: Double) -> String { ratio >= 0.8 ? "meets ≥ 0.8×" : "misses ≥ 0.8×" }
    if let calls {
        let variants = [("seq", "sequential"), ("pipe", "pipelined, \(options.depth) in flight")]
        for (kind, label) in variants {
            let bleKit = calls.rate("blekit.\(kind)")
            let processes = calls.rate("c.\(kind)")
            let oneThread = calls.rate("c1.\(kind)")
            let (best, which) = processes >= oneThread ? (processes, "C client + server processes") : (oneThread, "C, one thread")
            text += "| \(label) calls/s, client + server: BleKit vs the faster C | \(format(bleKit)) | \(format(best)) (\(which)) | "
            text += "**\(format(bleKit / best, 2))×** (\(verdict(bleKit / best))) |\n"
        }
        for (kind, label) in variants {
            let bleKit = calls.rate("blekit.\(kind)")
            let oneThread = calls.rate("c1.\(kind)")
            text += "| \(label) calls/s, client + server on one thread, as BleKit runs them | \(format(bleKit)) | "
            text += "\(format(oneThread)) (C, one thread) | **\(format(bleKit / oneThread, 2))×** (\(verdict(bleKit / oneThread))) |\n"
        }
        for (kind, label) in variants {
            let bleKit = calls.rate("blekit-c.\(kind)")
            let c = calls.rate("c.\(kind)")
            text += "| \(label) calls/s, client vs client (both calling the C server) | \(format(bleKit)) | \(format(c)) (C client) | "
            text += "**\(format(bleKit / c, 2))×** (\(verdict(bleKit / c))) |\n"
        }
    }
    if let decode {
        let bleKit = median(decode.bleKitTotal)
        let c = median(decode.cWalk)
        text += "| GetManagedObjects decode, ms (lower is better) | \(format(bleKit, 1)) | \(format(c, 1)) (libdbus iteration) | "
        text += "**\(format(bleKit / c, 2))×** the time |\n"
    }
    text += "\nCall ratios are BleKit's rate ÷ the baseline's (higher is better); the decode ratio is BleKit's "
    text += "time ÷ libdbus's (lower is better). BleKit serves its client and its server on one loop thread; "
    text += "the C processes run them on two threads, which matters once calls overlap (pipelined) on a "
    text += "machine with few CPUs, hence the one-thread C baseline and the client-vs-client row.\n"
    return text
}

do {
    var calls: CallResults?
    var decode: DecodeResults?
    if !options.skipCalls {
        let bus = try PrivateBus()
        defer { bus.stop() }
        calls = try await runCalls(options, bus: bus)
    }
    if !options.skipDecode {
        decode = try runDecode(options)
    }
    var sections = [summary(calls: calls, decode: decode, options: options)]
    if let calls { sections.append(callReport(calls, options: options)) }
    if let decode { sections.append(decodeReport(decode, options: options)) }
    print(sections.joined(separator: "\n"))
} catch {
    FileHandle.standardError.write(Data("BleDBusBenchmark failed: \(error)\n".utf8))
    exit(1)
}
