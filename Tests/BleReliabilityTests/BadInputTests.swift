@testable import BleCore
import BleDBus
import BleDSL
import BleSim
import BleTestSupport
import Foundation
import Testing

/// Bad input from callers and files: each is a typed error at once, never a trap or a hang.
@Suite(.timeLimit(.minutes(TestTime.minutes(1))))
@BleLoop
struct BadInputTests {
    nonisolated static let invalidUUIDs = ["", "zz", "18", "180", "180d0", "0x", "0x180", "-1", "g00d", "0000180d-0000-1000-8000-00805f9b34f",
                               "0000180d-0000-1000-8000-00805f9b34fbb", "0000180d_0000_1000_8000_00805f9b34fb",
                               String(repeating: "a", count: 10_000), "\u{0}180d", "１８０ｄ"]

    @Test(arguments: invalidUUIDs)
    func anInvalidUUIDStringIsATypedError(_ text: String) {
        #expect(BluetoothUUID(text) == nil, "'\(text.prefix(40))' parsed")
        #expect(throws: BluetoothUUID.ParseError.self) { try BluetoothUUID(parsing: text) }
    }

    @Test func emptyAndOversizedWritesEndOnceWithATypedResult() async throws {
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let rw = bench.characteristic(peripheral, Sample.readWrite)
        let noResponse = bench.characteristic(peripheral, Sample.writeNoResponse)
        var mark = bench.recorder.mark
        peripheral.writeValue(Data(), for: rw, type: .withResponse)
        let empty = try await bench.recorder.wait(since: mark, "the empty write") { if case .wrote(let c, _) = $0 { return c === rw }; return false }
        #expect(empty.error == nil, "\(empty)")
        for (characteristic, type) in [(rw, CharacteristicWriteType.withResponse), (noResponse, .withoutResponse)] {
            mark = bench.recorder.mark
            peripheral.writeValue(Data(count: 100_000), for: characteristic, type: type)
            let event = try await bench.recorder.wait(since: mark, "the oversized write") {
                if case .wrote(let c, _) = $0 { return c === characteristic }
                return false
            }
            guard case .valueTooLong? = event.error else { Issue.record("\(type): \(event)"); continue }
        }
        #expect(bench.central.diagnostics.pendingOperations == 0)
    }

    @Test func operationsOnAClosedManagerOrAStaleObjectEndAtOnce() async throws {
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let rw = bench.characteristic(peripheral, Sample.readWrite)
        let mark = bench.recorder.mark
        bench.central.close()
        peripheral.readValue(for: rw)
        peripheral.writeValue(Data([1]), for: rw, type: .withResponse)
        peripheral.setNotifyValue(true, for: bench.characteristic(peripheral, Sample.notify))
        peripheral.discoverServices(nil)
        for what in ["read", "write", "notify", "services"] {
            let event = try await bench.recorder.wait(since: mark, what) {
                switch ($0, what) {
                case (.value, "read"), (.wrote, "write"), (.notifyState, "notify"), (.services, "services"): return true
                default: return false
                }
            }
            #expect(event.error != nil, "\(what) on a closed manager: \(event)")
        }
        bench.central.connect(peripheral)
        try await bench.recorder.wait(since: mark, "the connect") { if case .failedToConnect = $0 { return true }; return false }
    }

    @Test func callsFromManyThreadsAtOnceEachEndOnce() async throws {
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let rw = bench.characteristic(peripheral, Sample.readWrite)
        let mark = bench.recorder.mark
        let threads = 4
        let each = 25
        let box = UncheckedBox((peripheral, rw))
        // Real threads, none of them the loop's or the task pool's (a blocked pool thread would
        // starve the other tests).
        let done = EventRecorder<Int>()
        for index in 0..<threads {
            let thread = Thread {
                let (peripheral, rw) = box.value
                for _ in 0..<each { peripheral.readValue(for: rw) }
                _ = peripheral.state
                _ = peripheral.maximumWriteValueLength(for: .withResponse)
                done.appendFromAnyThread(index)
            }
            thread.start()
        }
        try await done.wait("the threads", timeout: .seconds(30)) { $0.count == threads }
        try await bench.recorder.wait(timeout: .seconds(50), "\(threads * each) reads") { _ in
            bench.recorder.count(since: mark) { if case .value(let c, _, _) = $0 { return c === rw }; return false } >= threads * each
        }
        #expect(bench.recorder.count(since: mark) { if case .value(let c, _, let e) = $0 { return c === rw && e == nil }; return false } == threads * each)
        #expect(bench.central.diagnostics.pendingOperations == 0)
    }

    @Test func callsFromInsideCallbacksChainWithoutNestingOrLoss() async throws {
        let bench = try await Bench.start()
        defer { bench.tearDown() }
        let peripheral = try await bench.connected()
        let rw = bench.characteristic(peripheral, Sample.readWrite)
        let mark = bench.recorder.mark
        var remaining = 200
        bench.recorder.onEvent = { event in
            guard case .value(let c, _, _) = event, c === rw, remaining > 0 else { return }
            remaining -= 1
            peripheral.readValue(for: rw)
            // A manager query from inside a callback must not deadlock.
            _ = bench.central.state
        }
        peripheral.readValue(for: rw)
        try await bench.recorder.wait("201 reads") { _ in
            bench.recorder.count(since: mark) { if case .value(let c, _, _) = $0 { return c === rw }; return false } >= 201
        }
        bench.recorder.onEvent = nil
        #expect(bench.recorder.count(since: mark) { if case .value(_, _, let e?) = $0 { _ = e; return true }; return false } == 0)
    }

    @Test func aZeroLengthProtocolAndAResponseThatNeverEndsAreTypedErrors() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let zero = try await stack.run(LengthCommand(cmdData: Data([0x02, 1, 2]), lengths: DefaultPeripheralCommandLength(length: 0)))
        #expect(zero.error as? PeripheralCommandError == .invalidChunkLength(0), "\(zero)")
        let negative = try await stack.run(LengthCommand(cmdData: Data([0x02, 1, 2]), lengths: FirstPeripheralCommandLength(first: -3, then: 1)))
        #expect(negative.error as? PeripheralCommandError == .invalidChunkLength(-3), "\(negative)")
        // 01 answers with four packets; `goon` forever: the command ends at its own deadline.
        let forever = try await stack.run(ForeverCommand(cmdData: Data([0x01])))
        guard case .timeout? = forever.error as? PeripheralCommandError else { Issue.record("\(forever)"); return }
        // And the engine works afterwards.
        let echo = try await stack.run(EchoCommand(cmdData: Data([0x02, 9])))
        #expect(echo.value == [Data([0x02, 9])])
    }

    @Test func scenarioErrorsNameTheLineAndTheField() {
        let text = """
        {
          "peripherals": [
            {"address": "C0:FF:EE:00:00:01"},
            {"address": "C0:FF:EE:00:00:02",
             "rssi": "loud"}
          ]
        }
        """
        do {
            _ = try Scenario.parse(Data(text.utf8), name: "bad.json")
            Issue.record("accepted")
        } catch {
            #expect(error.description.contains("line 5"), "\(error)")
            #expect(error.description.contains("peripherals[1].rssi"), "\(error)")
        }
        do {
            _ = try Scenario.parse(Data("{\n  \"peripherals\": [\n    {\"address\": }\n]}".utf8), name: "syntax.json")
            Issue.record("accepted")
        } catch {
            #expect(error.description.contains("line 3"), "\(error)")
        }
    }
}

struct LengthCommand: PeripheralOperationCommand {
    var cmdData: Data
    var lengths: PeripheralCommandLengthProtocol
    var timeOutInterval: TimeInterval = 2
    func getLengthProtocol() -> PeripheralCommandLengthProtocol { lengths }
    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult { .success(data: dataGroup + [data]) }
}

struct ForeverCommand: PeripheralOperationCommand {
    var cmdData: Data
    var timeOutInterval: TimeInterval = 1
    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult { .goon(data: dataGroup + [data]) }
}

/// Carries non-Sendable test objects into detached tasks; BleKit's facades are any-thread.
final class UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
