import BleDBus
import BleDSL
import BleSim
import BleTestSupport
import DataLoggerExample
import Foundation
import Testing

/// `blekit demo`'s walk-through ends with a verdict per step: it passes only when every step
/// did, and a command that cannot succeed after the reconnect (issue 10: it timed out and the
/// demo still printed "done" and exited 0) fails it, by name.
@Suite(.serialized, .timeLimit(.minutes(TestTime.minutes(1))))
struct WalkthroughVerdictTests {
    static let address = "C0:FF:EE:00:00:03"
    static let write = "6e400002-b5a3-f393-e0a9-e50e24dcca9e"
    static let notify = "6e400003-b5a3-f393-e0a9-e50e24dcca9e"

    /// The demo's built-in data logger: 01 → 64 bytes in 4 notifications, 02 → echo, ff → drop the link.
    static let logger = PeripheralSpec(address: address, name: "DataLogger", mtu: 185, services: [
        ServiceSpec(uuid: "6e400001-b5a3-f393-e0a9-e50e24dcca9e", characteristics: [
            CharacteristicSpec(uuid: write, flags: ["write", "write-without-response"]),
            CharacteristicSpec(uuid: notify, flags: ["notify"]),
        ]),
    ], rules: [
        BehaviourRule(.write(characteristic: write, prefix: Data([0x01])),
                      [.notify(characteristic: notify, value: Data((0..<64).map { UInt8($0) }), packets: 4)]),
        BehaviourRule(.write(characteristic: write, prefix: Data([0x02])), [.echo(characteristic: notify)]),
        BehaviourRule(.write(characteristic: write, prefix: Data([0xFF])), [.disconnect]),
    ])

    /// Collects the walk-through's lines, and tells when it asked the logger to drop the link.
    final class Lines: TranscriptPrinter, @unchecked Sendable {
        private let lock = NSLock()
        private var collected: [String] = []
        private var dropAsked = false

        func line(_ text: String) {
            lock.lock()
            defer { lock.unlock() }
            collected.append(text)
            if text == "asking the logger to drop the link" { dropAsked = true }
        }

        var lines: [String] {
            lock.lock()
            defer { lock.unlock() }
            return collected
        }

        var askedToDropTheLink: Bool {
            lock.lock()
            defer { lock.unlock() }
            return dropAsked
        }
    }

    /// Runs the walk-through against the logger on a private bus; `prepare` sets up faults.
    @BleLoop
    static func walk(_ printer: Lines, prepare: @BleLoop (Simulator) -> Void = { _ in }) async throws -> WalkthroughReport {
        let fixture = try await SimulatorFixture.start(peripherals: [logger])
        defer { fixture.tearDown() }
        prepare(fixture.simulator)
        let options = CentralManagerOptions(bus: .address(fixture.bus.address))
        // The walk-through blocks its thread while it waits, as the demo runs it.
        return await Task.detached { DataLoggerWalkthrough.run(options: options, printer: printer) }.value
    }

    @Test @BleLoop func theWalkthroughPassesOnlyWhenEveryStepDid() async throws {
        let printer = Lines()
        let report = try await Self.walk(printer)
        #expect(report.passed, "\(report.summary.joined(separator: "\n"))")
        #expect(report.exitStatus == 0)
        #expect(report.verdicts.map(\.step) == WalkthroughStep.allCases)
        #expect(printer.lines.last == "demo passed: \(WalkthroughStep.allCases.count) of \(WalkthroughStep.allCases.count) steps")
    }

    @Test @BleLoop func aCommandThatCannotSucceedAfterTheReconnectFailsTheDemoByName() async throws {
        let printer = Lines()
        let report = try await Self.walk(printer) { simulator in
            // From the reconnect on, every notification is lost: the answer never comes. The
            // simulator holds this closure (through its peripheral): weak, or the two keep each
            // other, with the whole walk-through's transcript, until the process ends.
            simulator.peripheral(Self.address)?.onConnectionChange = { [weak simulator] up, _ in
                if up && printer.askedToDropTheLink { simulator?.faults.setNotificationFault(Self.address, .dropEvery(1)) }
            }
        }
        #expect(report.failedSteps == [.commandAfterReconnect], "\(report.summary.joined(separator: "\n"))")
        #expect(report.exitStatus != 0)
        #expect(report.verdictLine.hasPrefix("demo FAILED at step 'command after the reconnect'"), "\(report.verdictLine)")
        #expect(printer.lines.contains { $0.hasPrefix("  FAILED  command after the reconnect") })
        #expect(!printer.lines.contains("done"))
        #expect(printer.lines.last == report.verdictLine)
    }

    @Test func aStepThatNeverRanCountsAsNotPassed() {
        var report = WalkthroughReport()
        report.record(.scan, passed: true, "found")
        report.record(.connect, passed: false, "no connection within 15 s")
        #expect(report.failedSteps.first == .connect)
        #expect(report.failedSteps.count == WalkthroughStep.allCases.count - 1)
        #expect(report.exitStatus == 1)
        #expect(report.summary.contains("  not run command after the reconnect"))
    }
}
