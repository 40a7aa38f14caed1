import BleDBus
import BleDSL
import BleSim
import BleTestSupport
import Foundation
import Testing

/// Issue 11, item 4: every wait of the DSL ends, and says why.
@BleLoop
@Suite(.timeLimit(.minutes(TestTime.minutes(1))))
struct DSLNeverWaitsSilentlyTests {
    @Test func aConnectWithoutScanTimeoutGetsTheDefaultDeadline() async throws {
        let stack = try await Stack.start()
        defer { stack.tearDown() }
        stack.manager.defaultScanTimeout = 0.3
        // FXBlueTooth scanned for ever for an absent target, without a word.
        stack.execute([.connect(.uuid("AA:AA:AA:AA:AA:AA"))])
        try await stack.events.wait(count: 1)
        #expect(stack.events.events == ["failure: \(BleManagerError.scanTimeout(seconds: 0.3))"])
    }

    @Test func scanTimeoutInfinityIsTheExplicitForever() async throws {
        let stack = try await Stack.start()
        defer { stack.tearDown() }
        stack.manager.defaultScanTimeout = 0.01
        stack.execute([.connect(.uuid(Device.address)), .scanTimeout(.infinity)])
        try await stack.events.wait(count: 1)
        #expect(stack.events.events == ["connected"])
    }

    @Test func aMissingCharacteristicIsReportedToTheCommandsHandlerWithItsUUID() async throws {
        let absent = "0000ffe9-0000-1000-8000-00805f9b34fb"
        let stack = try await Stack.start(read: absent)
        defer { stack.tearDown() }
        stack.execute([.connect(.uuid(Device.address)), .handle(stack.device)])
        try await stack.events.wait(count: 2)
        let missing = MissingAttribute.characteristic(BluetoothUUID(string: absent), service: nil)
        #expect(stack.events.events == ["connected", "failure: \(BleManagerError.attributeNotFound(missing))"])
        #expect("\(missing)".contains("FFE9"))
        // A command issued anyway names it too, instead of "not ready".
        let result = try await stack.run(OpcodeCommand(opcode: 0xAA))
        #expect(result.error as? PeripheralCommandError == .attributeNotFound(missing))
    }

    @Test func aMissingServiceIsReportedToTheCommandsHandlerWithItsUUID() async throws {
        let absent = "0000fee0-0000-1000-8000-00805f9b34fb"
        let stack = try await Stack.start(service: absent)
        defer { stack.tearDown() }
        stack.execute([.connect(.uuid(Device.address)), .handle(stack.device)])
        try await stack.events.wait { $0.contains { $0.hasPrefix("failure") } }
        #expect(stack.events.events.contains("failure: \(BleManagerError.attributeNotFound(.service(BluetoothUUID(string: absent))))"))
    }

    @Test func aGATTReadIsAnEngineCommandInTheSameFIFO() async throws {
        let stack = try await Stack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let order = EventRecorder<String>()
        stack.engine.executable(option: OpcodeCommand(opcode: 0xBB, packets: 3)) { result in
            order.appendFromAnyThread("BB \(result.value?.count ?? -1)")
        }
        stack.engine.readValue(for: BluetoothUUID(string: Device.led)) { result in
            order.appendFromAnyThread("LED \(result.value.map { Array($0) } ?? [])")
        }
        try await order.wait(count: 2)
        #expect(order.events == ["BB 3", "LED [1]"])
    }

    @Test func aDescriptorReadIsAnEngineCommand() async throws {
        let stack = try await Stack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let results = EventRecorder<Result<Data, Error>>()
        stack.engine.readValue(forDescriptor: BluetoothUUID(string: "2901"), of: BluetoothUUID(string: Device.led)) {
            results.appendFromAnyThread($0)
        }
        try await results.wait(count: 1)
        #expect(results.events[0].value == Data("LED".utf8))
    }

    @Test func readingAnAbsentCharacteristicOrDescriptorNamesItsUUID() async throws {
        let stack = try await Stack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let results = EventRecorder<Error?>()
        stack.engine.readValue(for: BluetoothUUID(string: "2a19")) { results.appendFromAnyThread($0.error) }
        stack.engine.readValue(forDescriptor: BluetoothUUID(string: "2904"), of: BluetoothUUID(string: Device.led)) {
            results.appendFromAnyThread($0.error)
        }
        try await results.wait(count: 2)
        #expect(results.events[0] as? PeripheralCommandError == .attributeNotFound(.characteristic(BluetoothUUID(string: "2a19"), service: nil)))
        #expect(results.events[1] as? PeripheralCommandError
                == .attributeNotFound(.descriptor(BluetoothUUID(string: "2904"), characteristic: BluetoothUUID(string: Device.led))))
    }

    @Test func noSystemBusIsNamedAsTheCause() async throws {
        let manager = BleManager(centralOptions: CentralManagerOptions(bus: .address("unix:path=/nonexistent/blekit-no-bus")))
        defer { manager.centralManager.centralManager.close() }
        let errors = EventRecorder<BleManagerError>()
        manager.execute(commandItems: [.connect(.uuid(Device.address))]) { result in
            if case .failure(let error) = result { errors.appendFromAnyThread(error) }
        }
        try await errors.wait(count: 1)
        guard case .bluetoothUnavailable(.noBus) = errors.events[0] else { throw Unexpected(errors.events[0]) }
        #expect("\(errors.events[0])".hasPrefix("No system bus"))
        #expect(!"\(errors.events[0])".contains("adapter was found"))
    }

    @Test func noBluetoothdIsNamedAsTheCause() async throws {
        let bus = try await PrivateBus.start()
        defer { bus.stopInBackground() }
        guard case .address(let address) = bus.busAddress else { throw Unexpected(bus.busAddress) }
        let manager = BleManager(centralOptions: CentralManagerOptions(bus: .address(address)))
        defer { manager.centralManager.centralManager.close() }
        let errors = EventRecorder<BleManagerError>()
        manager.execute(commandItems: [.connect(.uuid(Device.address))]) { result in
            if case .failure(let error) = result { errors.appendFromAnyThread(error) }
        }
        try await errors.wait(count: 1)
        guard case .bluetoothUnavailable(.serviceUnknown) = errors.events[0] else { throw Unexpected(errors.events[0]) }
        #expect("\(errors.events[0])".hasPrefix("No bluetoothd"))
    }

    @Test func noAdapterIsNamedAsTheCause() async throws {
        let stack = try await Stack.start(configuration: .init(adapters: []))
        defer { stack.tearDown() }
        stack.execute([.connect(.uuid(Device.address))])
        try await stack.events.wait(count: 1)
        #expect(stack.events.events == ["failure: \(BleManagerError.centralStateError(reason: .unsupported))"])
        #expect(stack.events.events[0].contains("no Bluetooth adapter"))
    }

    @Test func commandsWaitForPoweredOnAsTheReadmeSays() async throws {
        let stack = try await Stack.start(configuration: .init(adapters: [.init(index: 0, powered: false)]))
        defer { stack.tearDown() }
        let states = StateLog(recorder: EventRecorder())
        stack.manager.centralManager.multiDelegate.addDelegate(states)
        // The README's 10 s wait, at the tests' clock: the test powers the adapter on within it
        // (the wait it checks), and a sanitized run reaches poweredOff itself only after seconds.
        stack.execute([.connect(.uuid(Device.address)), .handle(stack.device),
                       .powerOnTimeout(TestTime.scaled(BleManagerCommand.defaultPowerOnTimeout))])
        // The command has seen poweredOff (FXBlueTooth and BleKit ≤ 2 failed right here)…
        try await states.recorder.wait("poweredOff") { $0.contains(.poweredOff) }
        #expect(stack.events.events.isEmpty)
        // …and connects once the adapter is switched on.
        stack.fixture.simulator.adapter("hci0")?.setPowered(true)
        try await stack.events.wait(count: 1)
        #expect(stack.events.events == ["connected"])
    }

    @Test func stayingPoweredOffEndsTheWaitNamingPowerOnAdapter() async throws {
        let stack = try await Stack.start(configuration: .init(adapters: [.init(index: 0, powered: false)]))
        defer { stack.tearDown() }
        // Counted from a known powered-off state (a loaded machine may take longer to answer).
        let states = StateLog(recorder: EventRecorder())
        stack.manager.centralManager.multiDelegate.addDelegate(states)
        try await states.recorder.wait("poweredOff") { $0.contains(.poweredOff) }
        stack.execute([.connect(.uuid(Device.address)), .powerOnTimeout(0.3)])
        try await stack.events.wait(count: 1)
        #expect(stack.events.events == ["failure: \(BleManagerError.poweredOffTimeout(seconds: 0.3))"])
        #expect(stack.events.events[0].contains("CentralManagerOptions.powerOnAdapter"))
        #expect(!stack.events.events[0].contains("autoPowerOn"))
    }

    @Test func aReplacedScanIsSilentUnlessAskedFor() async throws {
        let stack = try await Stack.start()
        defer { stack.tearDown() }
        let scan = EventRecorder<String>()
        stack.execute([.scanServices([BluetoothUUID(string: Device.service)])], into: scan)
        stack.execute([.connect(.uuid(Device.address))])
        try await stack.events.wait(count: 1)
        #expect(stack.events.events == ["connected"])
        // The replaced scan's handler heard nothing, as on iOS; the connect came after it.
        #expect(scan.events.isEmpty)

        stack.manager.reportsSupersededCommands = true
        let observed = EventRecorder<String>()
        stack.execute([.scanServices([BluetoothUUID(string: "180d")])], into: observed)
        stack.execute([.scanServices([BluetoothUUID(string: "180f")]), .scanTimeout(0.2)])
        try await observed.wait(count: 1)
        #expect(observed.events == ["failure: \(BleManagerError.superseded)"])
    }

    @Test func aLongConnectionCommandDoesNotBlockTheCommandsAfterIt() async throws {
        let stack = try await Stack.start()
        defer { stack.tearDown() }
        try await stack.connect()
        let stream = EventRecorder<Data>()
        stack.engine.executable(option: OpcodeCommand(opcode: 0xCC, stream: true)) { result in
            if let packet = result.value?.first { stream.appendFromAnyThread(packet) }
        }
        try await stream.wait(count: 1)
        // Queued after the subscription: it runs, and its packets go to it first.
        let answer = try await stack.run(OpcodeCommand(opcode: 0xAA))
        #expect(answer.value == [Data([0xAA, 0x01])])
        let seen = stream.events.count
        try await stream.wait { $0.count > seen }
        #expect(stream.events.allSatisfy { $0.first == 0xCC })
    }
}

/// Records the states a central reports.
final class StateLog: CentralManagerDelegate, @unchecked Sendable {
    let recorder: EventRecorder<ManagerState>
    init(recorder: EventRecorder<ManagerState>) { self.recorder = recorder }
    func centralManagerDidUpdateState(_ central: CentralManager) {
        recorder.appendFromAnyThread(central.state)
    }
}

/// A value the test did not expect, as an error.
struct Unexpected: Error, CustomStringConvertible {
    let description: String
    init(_ value: Any) { description = "unexpected: \(value)" }
}
