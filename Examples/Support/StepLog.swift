import Foundation

// @unchecked: its state is behind `lock`; examples call it from BleKit's callbacks.
/// An example's transcript: each step passes or fails, and the run ends with one verdict
/// line and a non-zero exit status when any step failed or never ran.
public final class StepLog: @unchecked Sendable {
    private let lock = NSLock()
    private let name: String
    private let start = Date()
    private let expected: [String]
    private var results: [(step: String, passed: Bool, detail: String)] = []
    private let linePrefix: String

    /// A log for the example `name` whose steps are `expected`, in order; every line starts
    /// with `linePrefix` (which process said it, when several share a terminal).
    public init(_ name: String, steps expected: [String], linePrefix: String = "") {
        self.name = name
        self.expected = expected
        self.linePrefix = linePrefix
    }

    /// Prints a line with the time since the start.
    public func note(_ text: String) {
        lock.lock()
        defer { lock.unlock() }
        print(linePrefix + String(format: "[%6.2f s] ", Date().timeIntervalSince(start)) + text)
        fflush(nil)
    }

    /// Records a step's outcome and prints it.
    public func step(_ step: String, passed: Bool, _ detail: String) {
        lock.lock()
        results.append((step, passed, detail))
        lock.unlock()
        note("\(passed ? "✓" : "✗") \(step): \(detail)")
    }

    /// True when every expected step ran and passed.
    public var passed: Bool {
        lock.lock()
        defer { lock.unlock() }
        return expected.allSatisfy { step in results.contains { $0.step == step } } && results.allSatisfy(\.passed)
    }

    /// `"CentralWalkthrough passed: 9 of 9 steps"` or what failed and what never ran.
    public var verdictLine: String {
        lock.lock()
        defer { lock.unlock() }
        let failed = results.filter { !$0.passed }.map(\.step)
        let missing = expected.filter { step in !results.contains { $0.step == step } }
        if failed.isEmpty && missing.isEmpty { return "\(name) passed: \(expected.count) of \(expected.count) steps" }
        var parts: [String] = []
        if !failed.isEmpty { parts.append("failed: \(failed.joined(separator: ", "))") }
        if !missing.isEmpty { parts.append("never ran: \(missing.joined(separator: ", "))") }
        return "\(name) FAILED (\(parts.joined(separator: "; ")))"
    }

    /// Prints the verdict line and returns the exit status (0 only when everything passed).
    public func finish() -> Int32 {
        let line = verdictLine
        note("verdict: \(line)")
        return passed ? 0 : 1
    }
}
