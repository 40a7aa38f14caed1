import BleDBus
import BleDSL
import BleSim
import BleTestSupport
import Foundation
import Testing

/// One test per defect of FXBlueTooth (fxbluetooth-api.md §6) that the tests of the other files
/// do not already prove impossible; the number is the defect's.
@BleLoop
@Suite struct FXBlueToothDefectTests {
    @Test func defect2_firstTimeoutIsTheCommandsOwnNotThePreviousOnes() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        // A long-timeout command first, then a silent one with 0.2 s: it must time out on 0.2 s,
        // far before the previous command's 30 s.
        _ = try await stack.run(EchoCommand(cmdData: Data([0x02, 0x01]), timeOutInterval: 30))
        let result = try await stack.run(EchoCommand(cmdData: Data([0x03]), timeOutInterval: 0.2))
        #expect(result.error as? PeripheralCommandError == .timeout(seconds: 0.2))
    }

    @Test func defect4_writeAcknowledgementsDoNotReplayTheLastValue() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        _ = try await stack.run(EchoCommand(cmdData: Data([0x02, 0x44])))
        // A with-response write to a silent opcode: its ack must not re-feed 02 44 as a response.
        struct Silent: PeripheralOperationCommand {
            var cmdData = Data([0x03])
            var timeOutInterval: TimeInterval { 0.3 }
            var writeType: CharacteristicWriteType? { .withResponse }
            func checkResponse(_ dataGroup: [Data], data: Data) -> CheckResponseResult { .success(data: [data]) }
        }
        let result = try await stack.run(Silent())
        #expect(result.error as? PeripheralCommandError == .timeout(seconds: 0.3))
    }

    @Test func defect7_commandsStartedOffTheMainThreadStillTimeOut() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let results = EventRecorder<String>()
        let engine = stack.engine
        Thread.detachNewThread {
            engine.executable(option: EchoCommand(cmdData: Data([0x03]), timeOutInterval: 0.2), completion: { result in
                results.appendFromAnyThread(result.error.map { "\($0)" } ?? "ok")
            })
        }
        try await results.wait(count: 1)
        #expect(results.events == [PeripheralCommandError.timeout(seconds: 0.2).description])
    }

    @Test func defect8_missingCharacteristicsAreReportedAsynchronously() async throws {
        let engine = PeripheralDevice.DeviceCharacteristicValue()
        var calledSynchronously = false
        let results = EventRecorder<String>()
        engine.executable(option: EchoCommand(cmdData: Data([0x02])), completion: { result in
            calledSynchronously = true
            results.appendFromAnyThread(result.error.map { "\($0)" } ?? "ok")
        })
        #expect(!calledSynchronously)
        try await results.wait(count: 1)
        #expect(results.events == [PeripheralCommandError.characteristicsNotReady.description])
    }

    @Test func defect13_knownPeripheralIsRetrievedByIdentifierWithoutScanning() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let peripheral = try #require(stack.device.peripheral)
        stack.manager.execute(commandItems: [.cancelConnect(peripheral)])
        try await stack.events.wait("disconnected") { $0.contains("disconnected") }
        let calls = EventRecorder<String>()
        stack.fixture.simulator.traceObserver = { calls.append($0.member) }
        let events = EventRecorder<String>()
        stack.manager.execute(commandItems: [.connect(.uuid(peripheral.identifier.uuidString.lowercased()))]) { result in
            if case .success(.connected) = result { events.appendFromAnyThread("connected") }
        }
        try await events.wait(count: 1)
        #expect(!calls.events.contains("StartDiscovery"), "a known device needs no scan")
    }

    @Test func defect17_discoveryErrorsReachTheListeners() async throws {
        final class Listener: DiscoverCharacteristic, @unchecked Sendable {
            let recorder: EventRecorder<String>
            init(_ recorder: EventRecorder<String>) { self.recorder = recorder }
            func didDiscoverCharacteristicsFor(service: Service) { recorder.appendFromAnyThread("found \(service.uuid)") }
            func didFailToDiscover(error: Error) { recorder.appendFromAnyThread("error") }
        }
        let fixture = try await SimulatorFixture.start(peripherals: [Logger.spec()])
        defer { fixture.tearDown() }
        let manager = BleManager(centralOptions: CentralManagerOptions(bus: .address(fixture.bus.address), servicesResolvedGrace: .milliseconds(200)))
        defer { manager.centralManager.centralManager.close() }
        let device = PeripheralDevice()
        let recorder = EventRecorder<String>()
        let listener = Listener(recorder)
        device.executable(commandItems: [.discoverServices([BluetoothUUID(string: "0000abcd-0000-1000-8000-00805f9b34fb")]),
                                         .discoverCharacteristics([listener])])
        manager.execute(commandItems: [.connect(.uuid(Logger.address)), .handle(device)])
        try await recorder.wait(count: 1)
        #expect(recorder.events == ["error"])
    }

    @Test func defect18_serviceScopedCharacteristicIgnoresOtherServices() async throws {
        let otherService = "6e400010-b5a3-f393-e0a9-e50e24dcca9e"
        let spec = PeripheralSpec(address: Logger.address, name: "Twin", services: [
            ServiceSpec(uuid: otherService, characteristics: [CharacteristicSpec(uuid: Logger.write, flags: ["write"])]),
            ServiceSpec(uuid: Logger.service, characteristics: [
                CharacteristicSpec(uuid: Logger.write, flags: ["write", "write-without-response"]),
                CharacteristicSpec(uuid: Logger.notify, flags: ["notify"]),
            ]),
        ])
        let fixture = try await SimulatorFixture.start(peripherals: [spec])
        let stack = DSLStack(fixture: fixture)
        defer { stack.tearDown() }
        let scoped = PeripheralDevice.Characteristic(writeUUID: BluetoothUUID(string: Logger.write), readUUID: BluetoothUUID(string: Logger.notify),
                                                     serviceUUID: BluetoothUUID(string: Logger.service))
        stack.device.executable(commandItems: [.discoverCharacteristics([stack.characteristic, scoped]), .characteristicValues([stack.engine])])
        try await stack.connect()
        #expect(scoped.writeCharacteristic?.service?.uuid == BluetoothUUID(string: Logger.service))
        #expect(scoped.writeCharacteristic?.properties.contains(.writeWithoutResponse) == true)
    }

    @Test func defect19_readyClosuresRunExactlyOnce() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        let runs = EventRecorder<Int>()
        stack.adapter.readyForCommand { _ in runs.appendFromAnyThread(1) }
        try await stack.connect(extra: [.reconnect(.exponentialBackoff(initialDelay: 0.05, maximumAttempts: 2))])
        stack.fixture.simulator.peripheral(Logger.address)?.dropLinks()
        try await stack.events.wait("reconnected") { $0.filter { $0 == "connected" }.count == 2 }
        let later = EventRecorder<Int>()
        stack.adapter.readyForCommand { _ in later.appendFromAnyThread(1) }
        try await later.wait(count: 1)
        #expect(runs.events.count == 1)
    }

    @Test func defect22_taskModelHasARunnerThatParsesAndFeedsPlugins() async throws {
        let stack = try await DSLStack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let plugin = EventRecorder<Int>()
        let task = BlueToothTaskModel<Int>(command: CollectCommand(cmdData: Data([0x01]), packets: 4),
                                           parse: .value2({ $0.count }), plugins: [{ plugin.appendFromAnyThread($0) }])
        let results = EventRecorder<Int>()
        task.run(on: stack.engine) { result in results.appendFromAnyThread((try? result.get()) ?? -1) }
        try await results.wait(count: 1)
        #expect(results.events == [64])
        try await plugin.wait(count: 1)
        #expect(plugin.events == [64])
    }
}
