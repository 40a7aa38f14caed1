@testable import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Testing

/// The running operations of a peripheral share one deadline timer (`OperationDeadlines`):
/// it is armed for the earliest deadline and kept when operations end. Each operation must
/// still end at its own deadline — not at an earlier operation's — and nothing may be left
/// counted afterwards.
@Suite(.timeLimit(.minutes(2))) @BleLoop struct OperationDeadlineTests {
    static let timeout: Duration = .seconds(2)

    /// A first write takes ~300 ms of simulated radio time (10 connection intervals at MTU 23)
    /// and is answered; the timer stays armed for its deadline. A read started after it hangs:
    /// when the timer fires for the write's deadline, the read has ~300 ms left and must not be
    /// expired with it.
    @Test func anOperationStartedAfterAnAnsweredOneEndsAtItsOwnDeadline() async throws {
        let bench = try await Bench.start([Sample.spec(mtu: 23)], configuration: .init(timing: .realistic)) {
            $0.operationTimeout = Self.timeout
        }
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let readWrite = bench.characteristic(peripheral, Sample.readWrite)
        let notify = bench.characteristic(peripheral, Sample.notify)
        let mark = bench.recorder.mark
        peripheral.writeValue(Data(repeating: 7, count: 200), for: readWrite, type: .withResponse)
        let wrote = try await bench.await("the slow write", since: mark) { if case .wrote = $0 { return true }; return false }
        #expect(wrote.error == nil)
        bench.simulator.faults.neverReply(to: "ReadValue", times: 1)
        let readMark = bench.recorder.mark
        let issued = ContinuousClock.now
        peripheral.readValue(for: notify)
        let read = try await bench.await("the hung read", since: readMark) { $0.isValue }
        let lasted = ContinuousClock.now - issued
        guard case .timeout? = read.error else { Issue.record("the read ended with \(read)"); return }
        // Timers never fire early: a read expired together with the write's deadline would
        // end about 300 ms short of its own.
        #expect(lasted >= Self.timeout, "the read timed out after \(lasted), before its own deadline")
        try await expectNothingLeft(bench)
    }

    /// Operations on three characteristics hang; each ends with `.timeout`, in the order they
    /// started, and one more started after the first expiry ends too.
    @Test func hungOperationsEachTimeOutInTurn() async throws {
        let bench = try await Bench.start { $0.operationTimeout = Self.timeout }
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        bench.simulator.faults.neverReply(to: "ReadValue", times: nil)
        let mark = bench.recorder.mark
        let attributes = [Sample.readWrite, Sample.notify, Sample.indicate].map { bench.characteristic(peripheral, $0) }
        for characteristic in attributes { peripheral.readValue(for: characteristic) }
        let first = try await bench.await("the first expiry", since: mark) { $0.isValue }
        guard case .value(let expired, _, .timeout?) = first else { Issue.record("first ended with \(first)"); return }
        #expect(expired === attributes[0])
        let lateMark = bench.recorder.mark
        peripheral.readValue(for: attributes[0])
        let late = try await bench.await("the read started late", since: lateMark) {
            if case .value(let characteristic, _, _) = $0 { return characteristic === attributes[0] }
            return false
        }
        guard case .timeout? = late.error else { Issue.record("the late read ended with \(late)"); return }
        let ended = bench.recorder.events[mark...].compactMap { event -> Characteristic? in
            if case .value(let characteristic, _, .timeout?) = event { return characteristic }
            return nil
        }
        #expect(ended.count == 4)
        #expect(ended.prefix(3).map(ObjectIdentifier.init) == attributes.map(ObjectIdentifier.init))
        try await expectNothingLeft(bench)
    }

    /// A disconnect ends every operation and leaves no deadline counted or timer armed.
    @Test func aDisconnectLeavesNoDeadlineBehind() async throws {
        let bench = try await Bench.start { $0.operationTimeout = .seconds(30) }
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        bench.simulator.faults.neverReply(to: "ReadValue", times: nil)
        let mark = bench.recorder.mark
        peripheral.readValue(for: bench.characteristic(peripheral, Sample.readWrite))
        try await bench.waitForCall("ReadValue")
        #expect(bench.central.currentDiagnostics.timers >= 1)
        bench.simulator.peripheral(Sample.address)?.dropLinks()
        let read = try await bench.await("the read", since: mark) { $0.isValue }
        #expect(read.error == .disconnected)
        try await expectNothingLeft(bench)
    }

    private func expectNothingLeft(_ bench: Bench) async throws {
        let diagnostics = bench.central.currentDiagnostics
        #expect(diagnostics.pendingOperations == 0 && diagnostics.timers == 0, "left: \(diagnostics)")
    }
}
