import BleDBus
import BleDSL
import BleSim
import BleTestSupport
import Foundation
import Testing

@BleLoop
@Suite struct CommandEngineTests {
    @Test func singlePacketCommandSucceedsWithTheEcho() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let result = try await stack.run(EchoCommand(cmdData: Data([0x02, 0xAA])))
        #expect(result.value == [Data([0x02, 0xAA])])
    }

    @Test func multiPacketResponseIsCollectedWithGoon() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let result = try await stack.run(CollectCommand(cmdData: Data([0x01]), packets: 4))
        #expect(result.value?.count == 4)
        #expect(result.value?.reduce(Data(), +) == Logger.response)
    }

    @Test func secondCommandWaitsForTheFirstInsteadOfReplacingIt() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let results = EventRecorder<String>()
        stack.engine.executable(option: CollectCommand(cmdData: Data([0x01]), packets: 4), completion: { result in
            results.appendFromAnyThread("first: \(result.value?.count ?? -1)")
        })
        stack.engine.executable(option: EchoCommand(cmdData: Data([0x02, 0x07])), completion: { result in
            results.appendFromAnyThread("second: \(result.value?.first?.first ?? 0)")
        })
        try await results.wait(count: 2)
        #expect(results.events == ["first: 4", "second: 2"])
    }

    @Test func finishedCommandNeverHearsAnotherPacketNorCompletesTwice() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let results = EventRecorder<Int>()
        // Succeeds on the first of four packets; the other three must not reach it again (and
        // the next command's filterData does not claim them).
        stack.engine.executable(option: EchoCommand(cmdData: Data([0x01])), completion: { result in results.appendFromAnyThread(result.value?.count ?? -1) })
        // A later command proves the three late packets were dealt with before it completed.
        let after = try await stack.run(EchoCommand(cmdData: Data([0x02, 0x09])))
        #expect(after.value == [Data([0x02, 0x09])])
        #expect(results.events == [1])
    }

    @Test func silentPeripheralTimesOutWithTheCommandsOwnInterval() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let result = try await stack.run(EchoCommand(cmdData: Data([0x03]), timeOutInterval: 0.3))
        #expect(result.error as? PeripheralCommandError == .timeout(seconds: 0.3))
        #expect(stack.engine.pendingCommandCount == 0)
    }

    /// The engine's one deadline timer stays armed for an ended command's deadline: when it
    /// fires during a later command with a longer timeout, that command must run on to its own.
    @Test func aLaterCommandWithALongerTimeoutIsNotEndedAtTheEarlierCommandsDeadline() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        // The first command turns notifications on, which takes longer than an echo.
        _ = try await stack.run(EchoCommand(cmdData: Data([0x02, 0x00]), timeOutInterval: 30))
        // Its deadline (3 s from its start) falls inside the silent command's 6 s; the margin is
        // for a loaded machine, where an echo can take most of a second.
        // Both scale with the tests' clock (a sanitized echo takes seconds), so the short one's
        // deadline still falls inside the long one's, which is what this checks.
        let short = TestTime.scaled(3.0), long = TestTime.scaled(6.0)
        let answered = try await stack.run(EchoCommand(cmdData: Data([0x02, 0x01]), timeOutInterval: short))
        try #require(answered.value == [Data([0x02, 0x01])], "the short command was not answered in time")
        let started = ContinuousClock.now
        let silent = try await stack.run(EchoCommand(cmdData: Data([0x03]), timeOutInterval: long))
        let waited = ContinuousClock.now - started
        #expect(silent.error as? PeripheralCommandError == .timeout(seconds: long))
        // A lower bound only: a loaded machine can make it later, never earlier.
        #expect(waited >= .seconds(long) - .milliseconds(50), "timed out after \(waited)")
        #expect(stack.engine.pendingCommandCount == 0)
    }

    @Test func packetsFromAnotherCharacteristicAreIgnored() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        // Subscribe to the other characteristic too, so its packet reaches the peripheral's delegates.
        if let other = stack.device.peripheral?.services?.first?.characteristics?.first(where: { $0.uuid == BluetoothUUID(string: Logger.other) }) {
            stack.device.peripheral?.setNotifyValue(true, for: other)
        }
        let result = try await stack.run(EchoCommand(cmdData: Data([0x05, 0x42])))
        #expect(result.value == [Data([0x05, 0x42])])
    }

    @Test func longConnectionStreamsUntilCancelled() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        struct Stream: PeripheralOperationCommand {
            var cmdData = Data([0x01])
            func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult { .longConnection(data: [data]) }
        }
        let packets = EventRecorder<String>()
        let token = stack.engine.executable(option: Stream(), completion: { result in
            packets.appendFromAnyThread(result.value.map { "packet \($0[0].count)" } ?? "error \(result.error.map { "\($0)" } ?? "")")
        })
        try await packets.wait(count: 4)
        // The queue moved on while the stream listens.
        let echo = try await stack.run(EchoCommand(cmdData: Data([0x02, 0x01])))
        #expect(echo.value == [Data([0x02, 0x01])])
        token.cancel()
        try await packets.wait(count: 5)
        #expect(packets.events.last?.hasPrefix("error") == true)
        #expect(packets.events.prefix(4).allSatisfy { $0.hasPrefix("packet") })
    }

    @Test func disconnectFailsRunningAndQueuedCommandsAtOnce() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let results = EventRecorder<String>()
        stack.engine.executable(option: EchoCommand(cmdData: Data([0xFF]), timeOutInterval: 30), completion: { result in
            results.appendFromAnyThread("\(result.error.map { "\($0)" } ?? "ok")")
        })
        stack.engine.executable(option: EchoCommand(cmdData: Data([0x02]), timeOutInterval: 30), completion: { result in
            results.appendFromAnyThread("\(result.error.map { "\($0)" } ?? "ok")")
        })
        try await results.wait(count: 2, timeout: .seconds(10))
        let disconnected = PeripheralCommandError.disconnected.description
        #expect(results.events == [disconnected, disconnected])
    }

    @Test func zeroChunkLengthIsAnErrorNotAHang() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        struct Zero: PeripheralOperationCommand {
            var cmdData = Data([0x02, 0x03])
            func getLengthProtocol() -> PeripheralCommandLengthProtocol { DefaultPeripheralCommandLength(length: 0) }
            func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult { .success(data: [data]) }
        }
        let result = try await stack.run(Zero())
        #expect(result.error as? PeripheralCommandError == .invalidChunkLength(0))
    }

    @Test func defaultChunksFollowTheMTU() async throws {
        let stack = try await DSLStack.start(peripherals: [Logger.spec(mtu: 23)])
        defer { stack.tearDown() }
        try await stack.connect()
        let payload = Data([0x02]) + Data(repeating: 0x11, count: 44)
        _ = try await stack.run(EchoCommand(cmdData: payload, timeOutInterval: 5))
        let writes = stack.fixture.simulator.peripheral(Logger.address)?.writes.map(\.value.count) ?? []
        #expect(writes == [20, 20, 5], "MTU 23 carries 20-byte chunks")
    }

    @Test func firstThenLengthStartsOverForEveryCommand() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let lengths = FirstPeripheralCommandLength(first: 2, then: 3)
        struct Chunked: PeripheralOperationCommand {
            var cmdData: Data
            let lengths: FirstPeripheralCommandLength
            func getLengthProtocol() -> PeripheralCommandLengthProtocol { lengths }
            func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult { .success(data: [data]) }
        }
        _ = try await stack.run(Chunked(cmdData: Data([0x02, 1, 2, 3, 4]), lengths: lengths))
        _ = try await stack.run(Chunked(cmdData: Data([0x02, 1, 2, 3, 4]), lengths: lengths))
        let writes = stack.fixture.simulator.peripheral(Logger.address)?.writes.map(\.value.count) ?? []
        #expect(writes == [2, 3, 2, 3])
    }

    @Test func commandCanForceWriteWithResponse() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        struct Forced: PeripheralOperationCommand {
            var cmdData = Data([0x02, 0x05])
            var writeType: CharacteristicWriteType? { .withResponse }
            func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult { .success(data: [data]) }
        }
        _ = try await stack.run(Forced())
        #expect(stack.fixture.simulator.peripheral(Logger.address)?.writes.last?.withResponse == true)
    }

    @Test func cancelledQueuedCommandNeverStarts() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let results = EventRecorder<String>()
        stack.engine.executable(option: CollectCommand(cmdData: Data([0x01]), packets: 4), completion: { _ in results.appendFromAnyThread("first") })
        let second = stack.engine.executable(option: EchoCommand(cmdData: Data([0x02, 0x0C])), completion: { result in
            results.appendFromAnyThread(result.error is PeripheralCommandError ? "second cancelled" : "second ran")
        })
        second.cancel()
        try await results.wait(count: 2)
        #expect(results.events.sorted() == ["first", "second cancelled"])
        #expect(stack.fixture.simulator.peripheral(Logger.address)?.writes.count == 1)
    }
}
