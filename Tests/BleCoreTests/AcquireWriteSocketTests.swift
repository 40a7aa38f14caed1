@testable import BleCore
import BleDBus
import BleSim
import BleTestSupport
import Foundation
import Glibc
import Testing

/// Writes without response through the `AcquireWrite` socket when the socket says no: full
/// (EAGAIN) or broken (EPIPE), driven by the socket's fault hook on the real write path.
@Suite(.timeLimit(.minutes(TestTime.minutes(1))))
@BleLoop
struct AcquireWriteSocketTests {
    /// A first write gone through the acquired socket; returns the socket, and what the
    /// peripheral receives on the characteristic from now on (the first write included).
    static func writing(_ bench: Bench, _ peripheral: Peripheral,
                        _ characteristic: Characteristic) async throws -> (SeqPacketSocket, EventRecorder<Data>) {
        let virtual = try #require(bench.simulator.peripheral(Sample.address))
        let writes = EventRecorder<Data>()
        virtual.onWrite = { write, _ in
            if write.uuid == Sample.full("ff03") { writes.append(write.value) }
        }
        peripheral.performWrite(Data([0]), characteristic, .withoutResponse)
        try await writes.wait(count: 1, timeout: .seconds(10))
        guard case .acquired(let socket) = characteristic.writer.mode else {
            Issue.record("no AcquireWrite socket: \(characteristic.writer.mode)")
            throw CancellationError()
        }
        return (socket, writes)
    }

    @Test func writesWaitWhileTheSocketIsFullAndGoOutInOrderOnceItTakesDataAgain() async throws {
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let wwr = bench.characteristic(peripheral, Sample.writeNoResponse)
        let (socket, writes) = try await Self.writing(bench, peripheral, wwr)
        socket.fault = .send(errno: EAGAIN)
        for value in 1...3 { peripheral.performWrite(Data([UInt8(value)]), wwr, .withoutResponse) }
        #expect(!peripheral.canSendWriteWithoutResponse, "the writes wait in the backlog")
        #expect(wwr.writer.backlog.count == 3)
        let mark = bench.recorder.mark
        // Cleared in the same loop turn: the socket's writable wait is what sends them now.
        socket.fault = nil
        try await writes.wait(count: 4, timeout: .seconds(10))
        #expect(writes.events == [Data([0]), Data([1]), Data([2]), Data([3])])
        // The delegates hear that they may write again (CoreBluetooth's
        // peripheralIsReady(toSendWriteWithoutResponse:)).
        try await bench.await("ready to write", since: mark) { if case .readyToWrite = $0 { return true }; return false }
        #expect(peripheral.canSendWriteWithoutResponse)
        #expect(bench.trace("AcquireWrite") == 1)
        #expect(bench.trace("WriteValue") == 0)
    }

    @Test func aSocketThatBreaksIsClosedAndTheWritesGoOnAsCommands() async throws {
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let wwr = bench.characteristic(peripheral, Sample.writeNoResponse)
        let (socket, _) = try await Self.writing(bench, peripheral, wwr)
        // EPIPE as when bluetoothd closed its end (which, for real, it does before it forgets
        // the acquired socket; here it has not, so what the commands then meet is not checked).
        socket.fault = .send(errno: EPIPE)
        for value in 1...3 { peripheral.performWrite(Data([UInt8(value)]), wwr, .withoutResponse) }
        #expect(!socket.isOpen, "the broken socket is closed")
        guard case .commands = wwr.writer.mode else {
            Issue.record("not writing commands: \(wwr.writer.mode)")
            return
        }
        #expect(wwr.writer.commandInFlight, "the first write went out as a command")
        #expect(wwr.writer.backlog.count == 2)
    }
}
