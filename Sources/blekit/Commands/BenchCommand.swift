import Foundation

/// `blekit bench`: the short benchmark run (`Benchmarks/run --quick`): round trips through
/// BleCore and the BleDSL engine, ingest, multi-packet, restart recovery, memory and scanning,
/// against a libdbus C client and bleak, on BleSim. It builds and runs from a BleKit checkout:
/// the current directory or `BLEKIT_SOURCE_ROOT`.
enum BenchCommand: BlekitCommand {
    static let name = "bench"
    static let synopsis = ""
    static let summary = "a short benchmark run against BleSim (from a BleKit checkout)"
    static let options: [OptionSpec] = []
    static let details = """
    Runs Benchmarks/run --quick (about 3 minutes): BleKit's CPU per round trip, per notification
    and per second of scanning, set against a libdbus C client and bleak measured in the same run,
    and writes Benchmarks/RESULTS.md. `make bench` is the full run.
    """

    @MainActor
    static func run(_ invocation: Invocation) async -> ExitCode {
        guard invocation.positionals.isEmpty else { return invocation.usage("takes no arguments", help: help) }
        let root = ProcessInfo.processInfo.environment["BLEKIT_SOURCE_ROOT"] ?? FileManager.default.currentDirectoryPath
        let script = URL(fileURLWithPath: root).appendingPathComponent("Benchmarks/run").path
        guard FileManager.default.isExecutableFile(atPath: script) else {
            // Not `unavailable` (3): that status means no Bluetooth, and Bluetooth is not missing.
            FileHandle.standardError.write(Data("blekit bench: \(script) not found; run it from a BleKit checkout or set BLEKIT_SOURCE_ROOT\n".utf8))
            return .failure
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: script)
        process.arguments = ["--quick"]
        process.currentDirectoryURL = URL(fileURLWithPath: root)
        do {
            try process.run()
        } catch {
            FileHandle.standardError.write(Data("blekit bench: could not start \(script): \(error)\n".utf8))
            return .failure
        }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            FileHandle.standardError.write(Data("blekit bench: the benchmark failed (status \(process.terminationStatus))\n".utf8))
            return .failure
        }
        print("blekit bench: done; the tables are in \(root)/Benchmarks/RESULTS.md")
        return .success
    }
}
