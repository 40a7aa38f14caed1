// The verdict of the walk-through: one line per step, so that a step that failed — a command
// after the reconnect that timed out, say — can never end in "done" and a zero exit status.
import Foundation

/// The steps of the DataLogger walk-through, in the order they run.
public enum WalkthroughStep: String, CaseIterable, Sendable {
    case scan = "scan for a data logger"
    case connect = "connect by identifier"
    case servicesReady = "services ready"
    case singlePacket = "single-packet command"
    case multiPacket = "multi-packet command"
    case stream = "stream of 4 packets"
    case taskQueue = "task queue"
    case reconnect = "link drop and automatic reconnect"
    case servicesReadyAfterReconnect = "services ready after the reconnect"
    case commandAfterReconnect = "command after the reconnect"
}

/// What each step of one walk-through came to.
public struct WalkthroughReport: Sendable {
    /// One step's verdict.
    public struct Verdict: Sendable {
        /// The step.
        public let step: WalkthroughStep
        /// True when the step did what it is there to show.
        public let passed: Bool
        /// What happened, in a few words (the answer, or why it failed).
        public let detail: String
    }

    /// The verdicts of the steps that ran, in order.
    public private(set) var verdicts: [Verdict] = []

    /// An empty report.
    public init() {}

    /// Records the verdict of `step`.
    public mutating func record(_ step: WalkthroughStep, passed: Bool, _ detail: String) {
        verdicts.append(Verdict(step: step, passed: passed, detail: detail))
    }

    /// The steps that never ran because one they depend on failed.
    public var notRun: [WalkthroughStep] {
        WalkthroughStep.allCases.filter { step in !verdicts.contains { $0.step == step } }
    }

    /// The steps that failed, then those that never ran: every step that did not pass.
    public var failedSteps: [WalkthroughStep] {
        verdicts.filter { !$0.passed }.map(\.step) + notRun
    }

    /// True only when every step ran and passed.
    public var passed: Bool { failedSteps.isEmpty }

    /// 0 when every step passed, else 1.
    public var exitStatus: Int32 { passed ? 0 : 1 }

    /// The summary: one line per step (passed, FAILED or not run), then the verdict, which
    /// names the first failed step.
    public var summary: [String] {
        var lines = ["summary:"]
        for verdict in verdicts {
            lines.append("  \(verdict.passed ? "passed " : "FAILED ") \(verdict.step.rawValue): \(verdict.detail)")
        }
        for step in notRun { lines.append("  not run \(step.rawValue)") }
        lines.append(verdictLine)
        return lines
    }

    /// `demo passed: 10 of 10 steps`, or `demo FAILED at <step>: …` with every step that did not pass.
    public var verdictLine: String {
        let total = WalkthroughStep.allCases.count
        guard let first = failedSteps.first else { return "demo passed: \(total) of \(total) steps" }
        let passedCount = verdicts.filter(\.passed).count
        return "demo FAILED at step '\(first.rawValue)' (\(passedCount) of \(total) steps passed; not passed: "
            + failedSteps.map { "'\($0.rawValue)'" }.joined(separator: ", ") + ")"
    }
}
