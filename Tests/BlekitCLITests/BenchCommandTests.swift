import Foundation
import Testing

/// `blekit bench` hands over to a checkout's `Benchmarks/run --quick` and reports its outcome;
/// the real benchmark takes minutes, so a stand-in script plays it here.
@Suite(.serialized) struct BenchCommandTests {
    /// A fake checkout whose `Benchmarks/run` records its arguments and exits with `status`.
    private func checkout(exiting status: Int32) throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-bench-\(UUID().uuidString)")
        let benchmarks = root.appendingPathComponent("Benchmarks")
        try FileManager.default.createDirectory(at: benchmarks, withIntermediateDirectories: true)
        let script = benchmarks.appendingPathComponent("run")
        try Data("#!/bin/sh\necho \"ran with $*\" > \"$(dirname \"$0\")/ran\"\nexit \(status)\n".utf8).write(to: script)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        return root
    }

    private func environment(root: String) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["BLEKIT_SOURCE_ROOT"] = root
        return environment
    }

    @Test func benchRunsTheQuickBenchmarkOfTheCheckoutAndSaysWhereTheTablesAre() async throws {
        let root = try checkout(exiting: 0)
        defer { try? FileManager.default.removeItem(at: root) }
        let run = try await CLIRun.run(["bench"], environment: environment(root: root.path))
        #expect(run.status == 0 && run.output.contains("the tables are in \(root.path)/Benchmarks/RESULTS.md"), "\(run.transcript)")
        let ran = try String(contentsOf: root.appendingPathComponent("Benchmarks/ran"), encoding: .utf8)
        #expect(ran.contains("ran with --quick"), "\(ran)")
    }

    @Test func aFailedBenchmarkIsAFailedBench() async throws {
        let root = try checkout(exiting: 1)
        defer { try? FileManager.default.removeItem(at: root) }
        let run = try await CLIRun.run(["bench"], environment: environment(root: root.path))
        #expect(run.status == 1 && run.errors.contains("the benchmark failed (status 1)"), "\(run.transcript)")
        #expect(!run.output.contains("done"), "\(run.transcript)")
    }

    @Test func outsideACheckoutBenchSaysWhereToRunIt() async throws {
        let run = try await CLIRun.run(["bench"], environment: environment(root: "/nonexistent/blekit"))
        #expect(run.status == 3 && run.errors.contains("run it from a BleKit checkout or set BLEKIT_SOURCE_ROOT"), "\(run.transcript)")
    }
}
