import Foundation
import Testing

/// `blekit bench` hands over to a checkout's `Benchmarks/run --quick` and reports its outcome;
/// the real benchmark takes minutes, so a stand-in script plays it here.
@Suite(.serialized) struct BenchCommandTests {
    /// A fake checkout whose `Benchmarks/run` is `program`. A link to a system program, not a
    /// script written here: a script just written can be "text file busy" when another test's
    /// fork still holds its descriptor.
    private func checkout(running program: String) throws -> URL {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("blekit-bench-\(UUID().uuidString)")
        let benchmarks = root.appendingPathComponent("Benchmarks")
        try FileManager.default.createDirectory(at: benchmarks, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: benchmarks.appendingPathComponent("run").path, withDestinationPath: program)
        return root
    }

    private func environment(root: String) -> [String: String] {
        var environment = CLIRun.environment
        environment["BLEKIT_SOURCE_ROOT"] = root
        return environment
    }

    @Test func benchRunsTheQuickBenchmarkOfTheCheckoutAndSaysWhereTheTablesAre() async throws {
        // echo prints the arguments it was given: the quick run's.
        let root = try checkout(running: "/bin/echo")
        defer { try? FileManager.default.removeItem(at: root) }
        let run = try await CLIRun.run(["bench"], environment: environment(root: root.path))
        #expect(run.status == 0 && run.output.contains("the tables are in \(root.path)/Benchmarks/RESULTS.md"), "\(run.transcript)")
        #expect(run.output.hasPrefix("--quick\n"), "\(run.transcript)")
    }

    @Test func aFailedBenchmarkIsAFailedBench() async throws {
        let root = try checkout(running: "/bin/false")
        defer { try? FileManager.default.removeItem(at: root) }
        let run = try await CLIRun.run(["bench"], environment: environment(root: root.path))
        #expect(run.status == 1 && run.errors.contains("the benchmark failed (status 1)"), "\(run.transcript)")
        #expect(!run.output.contains("done"), "\(run.transcript)")
    }

    @Test func outsideACheckoutBenchSaysWhereToRunIt() async throws {
        let run = try await CLIRun.run(["bench"], environment: environment(root: "/nonexistent/blekit"))
        #expect(run.status == 1 && run.errors.contains("run it from a BleKit checkout or set BLEKIT_SOURCE_ROOT"), "\(run.transcript)")
    }
}
