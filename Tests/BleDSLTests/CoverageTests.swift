import BleDBus
import BleDSL
import BleSim
import BleTestSupport
import Foundation
import Testing

/// The coverage items of the DSL issue's Done-when list not proven elsewhere.
@BleLoop
@Suite struct CoverageTests {
    @Test func hundredQueuedCommandsRunInOrderEachOnce() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let results = EventRecorder<UInt8>()
        for index in 0..<100 {
            stack.engine.executable(option: EchoCommand(cmdData: Data([0x02, UInt8(index)])), completion: { result in
                results.appendFromAnyThread(result.value?.first?.last ?? 0xFF)
            })
        }
        try await results.wait(count: 100, timeout: .seconds(30))
        #expect(results.events == (0..<100).map { UInt8($0) })
    }

    @Test(arguments: [UInt16(23), UInt16(517)])
    func multiPacketReassemblyAcrossMTU(mtu: UInt16) async throws {
        // The response is as long as the link allows per packet times four.
        let packet = Int(mtu) - 3
        let response = Data((0..<(packet * 4)).map { UInt8($0 & 0xFF) })
        var spec = Logger.spec(mtu: mtu)
        spec.rules = [BehaviourRule(.write(characteristic: Logger.write, prefix: Data([0x01])),
                                    [.notify(characteristic: Logger.notify, value: response, packets: nil)])]
        let stack = try await DSLStack.start(peripherals: [spec])
        defer { stack.tearDown() }
        try await stack.connect()
        struct Reassemble: PeripheralOperationCommand {
            let expected: Int
            var cmdData = Data([0x01])
            func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult {
                let buffer = dataGroup + [data]
                return buffer.reduce(0) { $0 + $1.count } >= expected ? .success(data: buffer) : .goon(data: buffer)
            }
        }
        let result = try await stack.run(Reassemble(expected: response.count))
        #expect(result.value?.count == 4)
        #expect(result.value?.reduce(Data(), +) == response)
    }

    @Test func failureResultEndsTheCommandWithTheCommandsError() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        struct Refused: Error, Equatable {}
        struct Failing: PeripheralOperationCommand {
            var cmdData = Data([0x02, 0xEE])
            func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult { .failure(error: Refused()) }
        }
        let result = try await stack.run(Failing())
        #expect(result.error is Refused)
        let next = try await stack.run(EchoCommand(cmdData: Data([0x02, 0x01])))
        #expect(next.value == [Data([0x02, 0x01])])
    }

    @Test func scanServicesAndScanOptionsReachTheScan() async throws {
        var advertised = Logger.spec()
        advertised.serviceUUIDs = [Logger.service]
        let fixture = try await SimulatorFixture.start(peripherals: [advertised, Logger.spec(address: "C0:FF:EE:00:00:0A", name: "Plain")])
        defer { fixture.tearDown() }
        let manager = BleManager(centralOptions: CentralManagerOptions(bus: .address(fixture.bus.address)))
        defer { manager.centralManager.centralManager.close() }
        let lists = EventRecorder<[String]>()
        manager.execute(commandItems: [.scanServices([BluetoothUUID(string: Logger.service)]),
                                       .scanOptions([CBCentralManagerScanOptionAllowDuplicatesKey: true]),
                                       .discover(ListAddresses(lists)), .scanTimeout(TestTime.scaled(3))])
        try await lists.wait(count: 1)
        let calls = EventRecorder<String>()
        fixture.simulator.traceObserver = { calls.append($0.member) }
        try await fixture.waitForSignal { SimulatorFixture.changedValue($0, "Discovering") == .boolean(false) }
        #expect(lists.events.allSatisfy { $0 == [Logger.address] }, "only the advertiser of the service")
        #expect(fixture.simulator.trace.contains { entry in
            entry.member == "SetDiscoveryFilter" && "\(entry.arguments)".contains("DuplicateData") && "\(entry.arguments)".contains(Logger.service)
        })
    }

    @Test func connectInfoAndPeripheralTargetConnectWithoutScanning() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let peripheral = try #require(stack.device.peripheral)
        stack.manager.execute(commandItems: [.cancelConnect(peripheral)])
        try await stack.events.wait("disconnected") { $0.contains("disconnected") }
        stack.fixture.simulator.clearTrace()
        let events = EventRecorder<String>()
        stack.manager.execute(commandItems: [.connect(.peripheral(peripheral)), .connectInfo([:])]) { result in
            if case .success(.connected) = result { events.appendFromAnyThread("connected") }
        }
        try await events.wait(count: 1)
        #expect(!stack.fixture.simulator.trace.contains { $0.member == "StartDiscovery" })
    }

    @Test func anyTaskModelKeepsTypedPluginsAndQueueRetriesAFailedTask() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let typed = EventRecorder<Int>()
        let erased = EventRecorder<String>()
        // Fails once (the peripheral answers nothing within 0.2 s), then succeeds on the retry.
        final class Flaky: PeripheralOperationCommand, @unchecked Sendable {
            var attempts = 0
            var cmdData: Data {
                attempts += 1
                return attempts == 1 ? Data([0x03]) : Data([0x02, 0x77])
            }
            // Short for the silent first attempt, roomy for the answered retry.
            var timeOutInterval: TimeInterval { attempts <= 1 ? 0.2 : 10 }
            func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult { .success(data: [data]) }
        }
        let task = BlueToothTaskModel<Int>(command: Flaky(), parse: .value2({ Int($0.last ?? 0) }), plugins: [{ typed.appendFromAnyThread($0) }])
        let any = BlueToothAnyTaskModel(task: task)
        any.addPlugin { erased.appendFromAnyThread("\($0)") }
        let queue = BlueToothTaskQueue(engine: stack.engine)
        let done = EventRecorder<String>()
        queue.add(any, retries: 1) { result in done.appendFromAnyThread((try? result.get()).map { "\($0)" } ?? "failed") }
        try await done.wait(count: 1)
        #expect(done.events == ["119"])
        #expect(typed.events == [119])
        try await erased.wait(count: 1)
        #expect(erased.events == ["119"])
    }

    @Test func taskQueueCancelAllCancelsWaitingTasks() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let queue = BlueToothTaskQueue(engine: stack.engine)
        let done = EventRecorder<String>()
        for index in 0..<3 {
            let task = BlueToothTaskModel<Int>(command: EchoCommand(cmdData: Data([0x03]), timeOutInterval: 5), parse: .value2({ $0.count }))
            queue.add(task) { result in done.appendFromAnyThread("\(index): \(result.error is PeripheralCommandError ? "cancelled" : "other")") }
        }
        queue.cancelAll()
        try await done.wait(count: 3)
        #expect(Set(done.events) == ["0: cancelled", "1: cancelled", "2: cancelled"])
    }
}

final class ListAddresses: DiscoverPeripheral, @unchecked Sendable {
    let recorder: EventRecorder<[String]>
    init(_ recorder: EventRecorder<[String]>) { self.recorder = recorder }
    func discover(peripheralGroup: [PeripheralInfo]) { recorder.appendFromAnyThread(peripheralGroup.map(\.peripheral.address)) }
}
