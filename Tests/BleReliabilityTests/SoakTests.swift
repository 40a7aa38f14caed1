@testable import BleCore
import BleDBus
import BleDSL
import BleSim
import BleTestSupport
import Foundation
import Testing

/// `make soak` (BLEKIT_SOAK=1): 100,000 DSL commands and 1,000 reconnects with random faults,
/// then checks that nothing leaked (RSS, fds, timers, match rules) and no completion was lost.
/// Not part of `make test`: it takes minutes.
@Suite(.enabled(if: ProcessInfo.processInfo.environment["BLEKIT_SOAK"] == "1"), .timeLimit(.minutes(TestTime.minutes(30))))
@BleLoop
struct SoakTests {
    static var commands: Int { Int(ProcessInfo.processInfo.environment["BLEKIT_SOAK_COMMANDS"] ?? "") ?? 100_000 }
    static var reconnects: Int { Int(ProcessInfo.processInfo.environment["BLEKIT_SOAK_RECONNECTS"] ?? "") ?? 1_000 }

    static func residentKilobytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
              let pages = text.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return 0 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE))) / 1024
    }

    static func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    @Test func dslCommandsAndReconnectsUnderRandomFaults() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        let policy = ReconnectPolicy.exponentialBackoff(initialDelay: 0.01, multiplier: 2, maximumDelay: 0.2, maximumAttempts: 50)
        try await stack.connect(extra: [.reconnect(policy), .connectTimeout(5)])
        let central = stack.manager.centralManager.centralManager
        let recorder = Recorder()
        central.multiDelegate.addDelegate(recorder)
        var generator = SystemRandomNumberGenerator()
        // Warm up, then take the baseline.
        for index in 0..<200 { _ = try await stack.run(EchoCommand(cmdData: Data([0x02, UInt8(index & 0xff)]))) }
        let baselineRSS = Self.residentKilobytes()
        let baselineFDs = Self.openDescriptors()
        let baselineRules = central.currentDiagnostics.connection.matchRules
        var completed = 0
        var failed = 0
        var reconnected = 0
        let started = ContinuousClock.now
        for index in 0..<Self.commands {
            // Every commands/reconnects commands, a random fault takes the link down; the
            // policy reconnects, and the engine is ready again before the next command.
            if Self.reconnects > 0, (index + 1) % max(1, Self.commands / Self.reconnects) == 0 {
                let virtual = stack.fixture.simulator.peripheral(Logger.address)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: virtual?.dropLinks()
                case 1: stack.fixture.simulator.faults.failConnect(Logger.address, with: .abortByLocal, times: 1); virtual?.dropLinks()
                default: stack.fixture.simulator.faults.setNotificationFault(Logger.address, .duplicate); virtual?.dropLinks()
                }
                let mark = recorder.mark
                try await recorder.wait(since: mark, timeout: .seconds(30), "the reconnect") { if case .connected = $0 { return true }; return false }
                stack.fixture.simulator.faults.clear()
                let ready = EventRecorder<Bool>()
                stack.adapter.readyForCommand { _ in ready.appendFromAnyThread(true) }
                try await ready.wait("ready after the reconnect", timeout: .seconds(30)) { !$0.isEmpty }
                reconnected += 1
            }
            let opcode: UInt8 = index % 2 == 0 ? 0x02 : 0x05
            let result = try await stack.run(EchoCommand(cmdData: Data([opcode, UInt8(index & 0xff), UInt8((index >> 8) & 0xff)])))
            completed += 1
            if result.value == nil { failed += 1 }
        }
        let elapsed = ContinuousClock.now - started
        let after = central.currentDiagnostics
        let rss = Self.residentKilobytes()
        let fds = Self.openDescriptors()
        print("soak: \(completed) commands (\(failed) failed by a fault), \(reconnected) reconnects in \(elapsed); "
              + "RSS \(baselineRSS) → \(rss) kB, fds \(baselineFDs) → \(fds), match rules \(baselineRules) → \(after.connection.matchRules), "
              + "diagnostics \(after)")
        #expect(completed == Self.commands, "lost completions")
        #expect(reconnected >= Self.reconnects - 1)
        #expect(after.connection.matchRules == baselineRules)
        #expect(fds <= baselineFDs + 2, "file descriptors grew from \(baselineFDs) to \(fds)")
        // Allocator noise and the simulator's own trace grow a little; a leak per command would be ≥ 10 MB.
        #expect(rss - baselineRSS < 64 * 1024, "RSS grew by \(rss - baselineRSS) kB")
        #expect(after.pendingOperations == 0 && after.timers <= 1)
        #expect(failed * 100 <= Self.commands, "more than 1 % of commands failed")
    }
}
