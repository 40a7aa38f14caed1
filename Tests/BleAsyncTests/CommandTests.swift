import BleAsync
import BleSim
import BleTestSupport
import Foundation
import Testing

/// Answers with the first packet that starts like the command.
struct EchoCommand: PeripheralOperationCommand {
    var cmdData: Data
    var timeOutInterval: TimeInterval { 5 }
    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult {
        data.first == cmdData.first ? .success(data: dataGroup + [data]) : .goon(data: dataGroup)
    }
}

/// A subscription command: every packet is delivered and it keeps listening; 0xFF ends it.
struct FeedCommand: PeripheralOperationCommand {
    var cmdData: Data { Data([0x10]) }
    var timeOutInterval: TimeInterval { 5 }
    func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult {
        data == Data([0xff]) ? .success(data: [data]) : .longConnection(data: [data])
    }
}

@Suite(.timeLimit(.minutes(TestTime.minutes(1))))
@BleLoop
struct CommandTests {
    static func echoing() -> PeripheralSpec {
        Gadget.spec(rules: [BehaviourRule(.write(characteristic: Gadget.full("ff01"), prefix: nil),
                                          [.echo(characteristic: Gadget.full("ff02"))])])
    }

    @Test func executeRunsACommandOnTheDSLEngine() async throws {
        let bench = try await AsyncBench.start([Self.echoing()])
        defer { bench.tearDown() }
        let device = try await bench.connected()
        let write = try await bench.characteristic(device, Gadget.readWrite)
        let read = try await bench.characteristic(device, Gadget.notify)
        device.useCommandCharacteristics(write: write, read: read)
        let response = try await device.execute(EchoCommand(cmdData: Data([0x05, 0x06])))
        #expect(response == [Data([0x05, 0x06])])
        // Several at once queue behind each other, each gets its own answer.
        async let first = device.execute(EchoCommand(cmdData: Data([0x01])))
        async let second = device.execute(EchoCommand(cmdData: Data([0x02])))
        let answers = try await (first, second)
        #expect(answers.0 == [Data([0x01])])
        #expect(answers.1 == [Data([0x02])])
    }

    @Test func executeWithoutCharacteristicsSaysSo() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        let device = try await bench.connected()
        await #expect(throws: AsyncBleClientError.self) { _ = try await device.execute(EchoCommand(cmdData: Data([1]))) }
    }

    @Test func aCommandThatGetsNoAnswerTimesOut() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        let device = try await bench.connected()
        let write = try await bench.characteristic(device, Gadget.readWrite)
        let read = try await bench.characteristic(device, Gadget.notify)
        do {
            _ = try await device.execute(EchoCommand(cmdData: Data([1])), write: write, read: read, timeout: 0.3)
            Issue.record("the command returned")
        } catch AsyncBleClientError.timeout(let operation) {
            #expect(operation == .execute)
        }
    }

    @Test func responsesStreamDeliversEveryLongConnectionPacketUntilTheEnd() async throws {
        let bench = try await AsyncBench.start()
        defer { bench.tearDown() }
        let device = try await bench.connected()
        let write = try await bench.characteristic(device, Gadget.readWrite)
        let read = try await bench.characteristic(device, Gadget.notify)
        let stream = device.responses(to: FeedCommand(), write: write, read: read)
        // The command's write shows that it runs; then the peripheral feeds it.
        try await eventually("the command was written and hears notifications") {
            bench.virtual?.writes.contains { $0.uuid == Gadget.full("ff01") } == true && read.isNotifying
        }
        for value in [Data([1]), Data([2]), Data([3]), Data([0xff])] { bench.virtual?.notify(Gadget.full("ff02"), value: value) }
        var got: [[Data]] = []
        for try await packets in stream { got.append(packets) }
        #expect(got == [[Data([1])], [Data([2])], [Data([3])], [Data([0xff])]])
    }
}
